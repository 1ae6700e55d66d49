// Package webhook is the HTTP channel: POST /api/messages puts a message
// into the session from a script, a bridge or cron.
package webhook

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/internal/strictjson"
)

// Session is the part of the hub the webhook uses.
type Session interface {
	Submit(ctx context.Context, in hub.Input) (hub.Result, error)
}

var _ Session = (*hub.SessionManager)(nil)

// Handler serves POST /api/messages. Auth is checked in front of it.
type Handler struct {
	s        Session
	maxBytes int64
}

// New returns a Handler; bodies over maxBytes are refused with 413.
func New(s Session, maxBytes int64) *Handler { return &Handler{s: s, maxBytes: maxBytes} }

type request struct {
	Content     string `json:"content"`
	Channel     string `json:"channel"`
	From        string `json:"from"`
	ClientMsgID string `json:"client_msg_id"`
}

// Response is the body of a 202 (or 200 for an idempotent resend).
type Response struct {
	Turn      string `json:"turn"`
	Seq       int64  `json:"seq,omitempty"`
	Queued    bool   `json:"queued,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// WaitResponse is the body of a ?wait=1 answer: 200 when the turn ended,
// 504 (Status "pending") when the wait timed out; the turn goes on.
type WaitResponse struct {
	Turn   string `json:"turn"`
	Status string `json:"status"`
	Reply  string `json:"reply"`
	Error  string `json:"error,omitempty"`
}

// Wait limits for ?wait=1&timeout=N (seconds).
const (
	defaultWait = 60 * time.Second
	maxWait     = 600 * time.Second
)

func waitOptions(r *http.Request) (wait bool, timeout time.Duration, err error) {
	q := r.URL.Query()
	switch q.Get("wait") {
	case "", "0", "false":
		return false, 0, nil
	case "1", "true":
	default:
		return false, 0, httpjson.Errorf(http.StatusBadRequest, "bad_wait", "wait must be 1 or 0")
	}
	timeout = defaultWait
	if v := q.Get("timeout"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || time.Duration(n)*time.Second > maxWait {
			return false, 0, httpjson.Errorf(http.StatusBadRequest, "bad_timeout", "timeout must be 1 to 600 seconds")
		}
		timeout = time.Duration(n) * time.Second
	}
	return true, timeout, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h.serve(w, r); err != nil {
		httpjson.WriteError(w, err)
	}
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return httpjson.Errorf(http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
	}
	wait, timeout, err := waitOptions(r)
	if err != nil {
		return err
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return httpjson.Errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as Content-Type: application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return httpjson.Errorf(http.StatusRequestEntityTooLarge, "too_large", "the body is larger than server.max_message_bytes")
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.Header().Set("Connection", "close") // what is left of the body is never read
			return httpjson.Errorf(http.StatusRequestTimeout, "body_timeout", "the body did not arrive in time")
		}
		return httpjson.Errorf(http.StatusBadRequest, "bad_body", "reading the body failed: "+err.Error())
	}
	var req request
	if err := strictjson.Unmarshal(body, &req); err != nil {
		if errors.Is(err, strictjson.ErrInvalidUTF8) {
			return httpjson.Errorf(http.StatusBadRequest, "invalid_utf8", "the body must be valid UTF-8")
		}
		return httpjson.Errorf(http.StatusBadRequest, "bad_json", "the body is not the expected JSON object: "+err.Error())
	}
	if req.Channel == "" {
		req.Channel = event.ChannelWebhook
	}
	if err := hub.CheckCallerChannel(req.Channel); err != nil {
		return httpjson.FromSession(err)
	}
	in := hub.Input{Channel: req.Channel, From: req.From, Content: req.Content, ClientMsgID: req.ClientMsgID}
	var done chan hub.TurnOutcome
	if wait {
		done = make(chan hub.TurnOutcome, 1)
		in.Done = done
	}
	res, err := h.s.Submit(r.Context(), in)
	if err != nil {
		return httpjson.FromSession(err)
	}
	if res.Outcome == hub.Rejected {
		return &httpjson.Error{Status: http.StatusConflict, Code: "busy", Message: res.Busy.Message, Turn: res.Turn, RetryAfter: "5"}
	}
	if wait {
		turn := ""
		if res.Outcome != hub.Queued {
			turn = res.Turn
		}
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case o := <-done:
			if o.Err != nil {
				return httpjson.FromSession(o.Err) // queued, then not recorded: it never ran
			}
			httpjson.Write(w, http.StatusOK, WaitResponse{Turn: o.Turn, Status: o.Status, Reply: o.Reply, Error: o.Error})
		case <-t.C:
			httpjson.Write(w, http.StatusGatewayTimeout, WaitResponse{Turn: turn, Status: "pending",
				Error: "the reply did not finish in time; it goes on — watch /ws or retry with the same client_msg_id"})
		case <-r.Context().Done():
		}
		return nil
	}
	switch res.Outcome {
	case hub.Queued:
		httpjson.Write(w, http.StatusAccepted, Response{Queued: true})
	case hub.Duplicate:
		httpjson.Write(w, http.StatusOK, Response{Turn: res.Turn, Seq: res.Echo.Event.Seq, Duplicate: true})
	default:
		httpjson.Write(w, http.StatusAccepted, Response{Turn: res.Turn, Seq: res.Echo.Event.Seq})
	}
	return nil
}
