package ws

import (
	"errors"

	"github.com/frontdesk-hq/frontdesk/internal/strictjson"
)

// frameError is why a client frame was refused: the code and message of
// the error reply. The connection stays open.
type frameError struct {
	code, msg string
}

func (e *frameError) Error() string { return e.code + ": " + e.msg }

// decodeFrame decodes one text frame from a client. It checks what the
// WebSocket library does not (UTF-8) and that the frame is one JSON object
// of the client protocol — no unknown field, nothing after it: the rule
// every door shares (internal/strictjson). It does not judge the type or
// the content, which the read loop and the hub do. Any error is a
// *frameError.
func decodeFrame(b []byte) (clientFrame, error) {
	var f clientFrame
	if err := strictjson.Unmarshal(b, &f); err != nil {
		if errors.Is(err, strictjson.ErrInvalidUTF8) {
			return clientFrame{}, &frameError{"invalid_utf8", "text frames must be valid UTF-8"}
		}
		return clientFrame{}, &frameError{"bad_json", "frame is not the expected JSON object: " + err.Error()}
	}
	return f, nil
}
