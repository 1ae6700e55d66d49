package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3/packages/ssestream"
)

// ModelError is a failed model request explained for people: Error is a
// sentence that says what happened and, where it can, what to do.
type ModelError struct {
	// Status is the HTTP error status the server answered, 0 if none.
	Status int
	// Retries is how many times the request was retried before giving up.
	Retries int
	msg     string
}

func (e *ModelError) Error() string { return e.msg }

// retryDelay decides whether a failed attempt is retried and after how
// long. Only failures before the first token are: a refused, reset or
// dropped connection, 408, 429 (not an exhausted quota) and 5xx. The
// delay doubles from retryBase; a Retry-After (or retry-after-ms) header
// replaces it, and one that would take the total past retryBudget stops
// the retries with why saying so.
func (o *OpenAI) retryDelay(f *failure, res stepResult, retries int, waited time.Duration) (d time.Duration, retry bool, why string) {
	if res.started || f.stalled || retries >= maxRetries || !retriable(f) {
		return 0, false, ""
	}
	d = retryBase << retries
	if ra, ok := retryAfter(f.header, time.Now()); ok {
		d = ra
		if waited+d > retryBudget {
			return 0, false, fmt.Sprintf("the server asks to wait %s, longer than frontdesk waits (%s); try again later", fmtDuration(d), fmtDuration(retryBudget))
		}
	}
	if waited+d > retryBudget {
		return 0, false, ""
	}
	return d, true, ""
}

func retriable(f *failure) bool {
	switch s := f.status; {
	case s == http.StatusTooManyRequests:
		return errorCode(f.body) != "insufficient_quota"
	case s == http.StatusRequestTimeout, s >= 500:
		return true
	case s >= 400:
		return false
	}
	var se *ssestream.StreamError
	var dns *net.DNSError
	var oe *net.OpError
	switch {
	case errors.As(f.err, &se), errors.As(f.err, &dns):
		return false
	case errors.Is(f.err, syscall.ECONNREFUSED), errors.Is(f.err, syscall.ECONNRESET),
		errors.Is(f.err, io.EOF), errors.Is(f.err, io.ErrUnexpectedEOF), errors.Is(f.err, errNoFinish),
		errors.As(f.err, &oe):
		return true
	}
	return false
}

// retryAfter reads Retry-After (seconds or an HTTP date) or OpenAI's
// retry-after-ms.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// describe turns a failure into the sentence people see.
func (o *OpenAI) describe(f *failure, res stepResult, retries int, waited time.Duration, why string) error {
	suffix := ""
	if retries > 0 {
		suffix = fmt.Sprintf(" — retried %d %s over %s", retries, plural(retries, "time", "times"), fmtDuration(waited))
	}
	if why != "" {
		suffix += "; " + why
	}
	e := &ModelError{Retries: retries}
	if f.status >= 400 {
		e.Status = f.status
		e.msg = o.describeStatus(f, suffix)
		return e
	}
	var se *ssestream.StreamError
	var dns *net.DNSError
	switch {
	case f.stalled && !res.started:
		e.msg = fmt.Sprintf("the model server at %s did not answer within %s (agent.openai.request_timeout_sec)", o.baseURL, fmtDuration(o.opts.RequestTimeout))
	case f.stalled:
		e.msg = fmt.Sprintf("the reply stream stalled: nothing arrived for %s after %d tokens", fmtDuration(o.opts.RequestTimeout), res.chunks)
	case errors.As(f.err, &se):
		msg := serverMessage(se.Event.Data)
		if msg == "" {
			msg = strings.TrimSpace(string(se.Event.Data))
		}
		e.msg = fmt.Sprintf("the model server reported an error after %d tokens: %s", res.chunks, msg)
	case errors.Is(f.err, syscall.ECONNREFUSED):
		e.msg = fmt.Sprintf("the model server at %s refused the connection (is it running?)%s", o.baseURL, suffix)
	case errors.As(f.err, &dns):
		e.msg = fmt.Sprintf("cannot find the host %q of the model server (check agent.openai.base_url): %v", dns.Name, dns.Err)
	case res.started:
		e.msg = fmt.Sprintf("the reply stream was cut after %d tokens: %v", res.chunks, f.err)
	case errors.Is(f.err, errNoFinish), errors.Is(f.err, io.EOF), errors.Is(f.err, io.ErrUnexpectedEOF):
		e.msg = fmt.Sprintf("the model server at %s closed the connection before answering%s", o.baseURL, suffix)
	default:
		var syn *json.SyntaxError
		if errors.As(f.err, &syn) {
			e.msg = fmt.Sprintf("the model server at %s sent a chunk that is not valid JSON: %v", o.baseURL, f.err)
		} else {
			e.msg = fmt.Sprintf("cannot reach the model server at %s: %v%s", o.baseURL, f.err, suffix)
		}
	}
	return e
}

// describeStatus explains an HTTP error status.
func (o *OpenAI) describeStatus(f *failure, suffix string) string {
	msg := serverMessage(f.body)
	tail := ""
	if msg != "" {
		tail = ": " + msg
	}
	s := f.status
	switch {
	case s == http.StatusUnauthorized && o.opts.APIKey == "":
		return fmt.Sprintf("the model server at %s wants an API key (401): set %s", o.baseURL, o.opts.APIKeyEnv)
	case s == http.StatusUnauthorized:
		return fmt.Sprintf("the API key was rejected (401): check %s%s", o.opts.APIKeyEnv, tail)
	case s == http.StatusForbidden:
		return fmt.Sprintf("the model server at %s denied access (403)%s", o.baseURL, tail)
	case s == http.StatusNotFound && (errorCode(f.body) == "model_not_found" || strings.Contains(strings.ToLower(msg), "model")):
		return fmt.Sprintf("model %q not found (404) at %s%s", o.opts.Model, o.baseURL, tail)
	case s == http.StatusNotFound:
		return fmt.Sprintf("the model server at %s has no chat completions endpoint (404 for %s/chat/completions): check agent.openai.base_url (it usually ends in /v1)", o.baseURL, o.baseURL)
	case s == http.StatusTooManyRequests && errorCode(f.body) == "insufficient_quota":
		return "the account has no quota left (429 insufficient_quota)" + tail
	case s == http.StatusTooManyRequests:
		return "rate limited (429)" + suffix + tail
	case s >= 500:
		return fmt.Sprintf("the model server at %s failed (%d %s)%s%s", o.baseURL, s, http.StatusText(s), suffix, tail)
	case s == http.StatusBadRequest || s == http.StatusUnprocessableEntity:
		return fmt.Sprintf("the model server rejected the request (%d)%s", s, tail)
	}
	return fmt.Sprintf("the model server at %s answered %d %s%s%s", o.baseURL, s, http.StatusText(s), suffix, tail)
}

// shortReason says, in a status line, why a request is being retried.
func (o *OpenAI) shortReason(f *failure) string {
	switch {
	case f.status == http.StatusTooManyRequests:
		return "the model server is rate limiting (429)"
	case f.status >= 400:
		return fmt.Sprintf("the model server failed (%d %s)", f.status, http.StatusText(f.status))
	case errors.Is(f.err, syscall.ECONNREFUSED):
		return "the model server refused the connection"
	}
	return "the connection to the model server was lost"
}

// serverMessage extracts the human part of an error body in the shapes
// servers use: OpenAI {"error":{"message":…}}, Ollama's native
// {"error":"…"}, vLLM {"message":…}, FastAPI {"detail":…}; else the text
// itself unless it is an HTML page. It is cut at 300 bytes.
func serverMessage(body []byte) string {
	body = []byte(strings.TrimSpace(string(body)))
	if len(body) == 0 {
		return ""
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	msg := ""
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			msg = s
		case v.Message != "":
			msg = v.Message
		case json.Unmarshal(v.Detail, &s) == nil && s != "":
			msg = s
		}
	} else if body[0] != '<' {
		msg, _, _ = strings.Cut(string(body), "\n")
	}
	msg = strings.TrimSpace(msg)
	if len(msg) > 300 {
		msg = truncateUTF8(msg, 300) + "…"
	}
	return msg
}

// errorCode is the "code" of an OpenAI-shaped error body, if a string.
func errorCode(body []byte) string {
	var v struct {
		Error struct {
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	var s string
	if json.Unmarshal(body, &v) == nil && json.Unmarshal(v.Error.Code, &s) == nil {
		return s
	}
	return ""
}

// fmtDuration prints d briefly: "2s", "1.5s", "250ms", "1m0s".
func fmtDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}
