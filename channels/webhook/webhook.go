// Package webhook is the HTTP channel: POST /api/messages puts a message
// into the session from a script, a bridge or cron.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/internal/limithits"
	"github.com/frontdesk-hq/frontdesk/internal/ratelimit"
	"github.com/frontdesk-hq/frontdesk/internal/strictjson"
	"github.com/frontdesk-hq/frontdesk/people"
)

// Session is the part of the hub the webhook uses.
type Session interface {
	Submit(ctx context.Context, in hub.Input) (hub.Result, error)
}

var _ Session = (*hub.SessionManager)(nil)

// Options configures the handler.
type Options struct {
	// MaxBytes: bodies over it are refused with 413. Default 65536.
	MaxBytes int64
	// RatePerSec and RateBurst limit requests for the whole process (a
	// token bucket: RateBurst at once, then RatePerSec a second); past it
	// the answer is 429 with Retry-After. RatePerSec 0 (the zero value)
	// means no limit; RateBurst defaults to 20.
	RatePerSec float64
	RateBurst  int
	// Now is the rate limiter's clock. Default time.Now.
	Now func() time.Time
}

// Handler serves POST /api/messages. Auth is checked in front of it.
type Handler struct {
	s    Session
	opts Options

	// One bucket for the whole process, not one per remote address: the
	// callers are scripts that share the token, often behind one proxy
	// address, and what the limit protects — the one session, whose every
	// accepted message is a turn of the model — is shared too.
	mu    sync.Mutex
	limit *ratelimit.Bucket

	limited prometheus.Counter
}

// New returns a Handler over s.
func New(s Session, opts Options) *Handler {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 65536
	}
	if opts.RateBurst <= 0 {
		opts.RateBurst = 20
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Handler{s: s, opts: opts, limit: ratelimit.New(opts.RatePerSec, opts.RateBurst),
		limited: limithits.Counter("webhook_rate")}
}

// Collectors returns the handler's metrics for a Prometheus registry.
func (h *Handler) Collectors() []prometheus.Collector { return []prometheus.Collector{h.limited} }

// take takes a token from the process-wide bucket.
func (h *Handler) take() (bool, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.limit.Take(h.opts.Now())
}

// giveBack returns the token of a request the session refused because no
// node could take it (no_leader) or did not answer (no_answer): the client
// is told to retry in a second, and a client polling through a failover
// must find the desk, not 429, once a new holder is ready.
func (h *Handler) giveBack(err error) {
	if !errors.Is(err, hub.ErrNoLeader) && !errors.Is(err, hub.ErrNoAnswer) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.limit.Give()
}

type request struct {
	Content     string `json:"content"`
	Channel     string `json:"channel"`
	From        string `json:"from"`
	ClientMsgID string `json:"client_msg_id"`
	// Attachments: ids (sha256) from POST /api/attachments.
	Attachments []string `json:"attachments"`
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
	// Code is the storage fault (storage_full, storage_error) of a turn
	// that ran but whose reply the chat log refused (507 or 503).
	Code string `json:"code,omitempty"`
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
	if ok, retry := h.take(); !ok {
		h.limited.Inc()
		secs := int(math.Ceil(retry.Seconds()))
		return &httpjson.Error{Status: http.StatusTooManyRequests, Code: "rate_limited", RetryAfter: strconv.Itoa(secs),
			Message: fmt.Sprintf("too many messages: this server takes %d at once, then %g a second; try again in %d s",
				h.opts.RateBurst, h.opts.RatePerSec, secs)}
	}
	wait, timeout, err := waitOptions(r)
	if err != nil {
		return err
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return httpjson.Errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as Content-Type: application/json")
	}
	req, err := h.readRequest(w, r)
	if err != nil {
		return err
	}
	if req.Channel == "" {
		req.Channel = event.ChannelWebhook
	}
	if err := hub.CheckCallerChannel(req.Channel); err != nil {
		return httpjson.FromSession(err)
	}
	// person comes from the credential (the guard), never from the body:
	// a from stays the caller's label.
	who, _ := people.FromContext(r.Context())
	a := who.Actor(req.Channel)
	in := hub.Input{Channel: req.Channel, From: req.From, Content: req.Content, ClientMsgID: req.ClientMsgID,
		Attachments: hub.AttachmentRefs(req.Attachments), Person: a.Person, SignedIn: a.SignedIn}
	var done chan hub.TurnOutcome
	if wait {
		done = make(chan hub.TurnOutcome, 1)
		in.Done = done
	}
	res, err := h.s.Submit(r.Context(), in)
	if err != nil {
		h.giveBack(err)
		return httpjson.FromSession(err)
	}
	if res.Outcome == hub.Rejected {
		return &httpjson.Error{Status: http.StatusConflict, Code: "busy", Message: res.Busy.Message, Turn: res.Turn, RetryAfter: "5"}
	}
	if wait {
		h.awaitReply(w, r, res.Turn, done, timeout)
		return nil
	}
	switch res.Outcome {
	case hub.Queued:
		httpjson.Write(w, http.StatusAccepted, Response{Turn: res.Turn, Seq: res.Echo.Event.Seq, Queued: true})
	case hub.Duplicate:
		httpjson.Write(w, http.StatusOK, Response{Turn: res.Turn, Seq: res.Echo.Event.Seq, Duplicate: true})
	default:
		httpjson.Write(w, http.StatusAccepted, Response{Turn: res.Turn, Seq: res.Echo.Event.Seq})
	}
	return nil
}

// readRequest reads and decodes the JSON body, within server.max_message_bytes.
func (h *Handler) readRequest(w http.ResponseWriter, r *http.Request) (request, error) {
	var req request
	body, err := httpjson.ReadBody(w, r, h.opts.MaxBytes, "server.max_message_bytes")
	if err != nil {
		return req, err
	}
	if err := strictjson.Unmarshal(body, &req); err != nil {
		if errors.Is(err, strictjson.ErrInvalidUTF8) {
			return req, httpjson.Errorf(http.StatusBadRequest, "invalid_utf8", "the body must be valid UTF-8")
		}
		return req, httpjson.Errorf(http.StatusBadRequest, "bad_json", "the body is not the expected JSON object: "+err.Error())
	}
	return req, nil
}

// awaitReply answers ?wait=1: the turn's outcome, 504 when it is not done
// within timeout (it goes on), 202 when the server stops before a queued
// input ran (it runs after the restart).
func (h *Handler) awaitReply(w http.ResponseWriter, r *http.Request, turn string, done <-chan hub.TurnOutcome, timeout time.Duration) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case o := <-done:
		switch {
		case o.Err != nil && o.Status == event.StatusError:
			// It ran, but the log refused part of it: its reply is not on
			// disk (not done, whatever was streamed), or — Reply set — only
			// the turn's end is not yet.
			var he *httpjson.Error
			if errors.As(httpjson.FromSession(o.Err), &he) {
				httpjson.Write(w, he.Status, WaitResponse{Turn: o.Turn, Status: o.Status, Reply: o.Reply, Error: o.Error, Code: he.Code})
				return
			}
			httpjson.WriteError(w, o.Err)
		case o.Err != nil:
			httpjson.WriteError(w, httpjson.FromSession(o.Err)) // queued, then not started: it never ran
		case o.Status == hub.StatusStillQueued:
			httpjson.Write(w, http.StatusAccepted, WaitResponse{Turn: o.Turn, Status: o.Status, Error: o.Error})
		default:
			httpjson.Write(w, http.StatusOK, WaitResponse{Turn: o.Turn, Status: o.Status, Reply: o.Reply, Error: o.Error})
		}
	case <-t.C:
		httpjson.Write(w, http.StatusGatewayTimeout, WaitResponse{Turn: turn, Status: "pending",
			Error: "the reply did not finish in time; it goes on — watch /ws or retry with the same client_msg_id"})
	case <-r.Context().Done():
	}
}
