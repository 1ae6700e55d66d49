package ws

import (
	"encoding/json"
	"unicode/utf8"
)

// frameError is why a client frame was refused: the code and message of
// the error reply. The connection stays open.
type frameError struct {
	code, msg string
}

func (e *frameError) Error() string { return e.code + ": " + e.msg }

// decodeFrame decodes one text frame from a client. It checks what the
// WebSocket library does not (UTF-8) and that the frame is a JSON object
// of the client protocol; it does not judge the type or the content, which
// the read loop and the hub do. Any error is a *frameError.
func decodeFrame(b []byte) (clientFrame, error) {
	var f clientFrame
	if !utf8.Valid(b) {
		return f, &frameError{"invalid_utf8", "text frames must be valid UTF-8"}
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return clientFrame{}, &frameError{"bad_json", "frame is not a JSON object: " + err.Error()}
	}
	return f, nil
}
