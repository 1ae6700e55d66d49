// Package httpjson is the one place where errors become an HTTP status and
// a JSON body, shared by package web and the HTTP channels: FromSession
// maps the hub's errors, WriteError writes any error.
package httpjson

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/diskerr"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// Error is an API error: Status is the HTTP status, Code a stable machine
// word, Message a sentence for people.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfter, when set, becomes the Retry-After header (seconds).
	RetryAfter string `json:"-"`
	// Turn names the running turn for busy errors.
	Turn string `json:"turn,omitempty"`
	// Permission is what a 403 forbidden lacked (reset, approve, …).
	Permission string `json:"permission,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf makes an *Error.
func Errorf(status int, code, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg}
}

// Write writes v as JSON with status.
func Write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError writes err: an *Error as itself, anything else as a 500 whose
// details are logged, not shown.
func WriteError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		slog.Error("internal error", "err", err)
		e = Errorf(http.StatusInternalServerError, "internal", "internal error; see the server log")
	}
	if e.RetryAfter != "" {
		w.Header().Set("Retry-After", e.RetryAfter)
	}
	Write(w, e.Status, e)
}

// FromSession maps the session hub's errors to API errors — the one place
// where they get a status and a code, for package web and the HTTP
// channels alike. Other errors are returned as they are (WriteError makes
// them a 500 and logs them).
func FromSession(err error) error {
	var (
		in  *hub.InputError
		se  *hub.StorageError
		bad *hub.BadBoundError
		we  *diskerr.WriteError
		fe  *hub.ForbiddenError
	)
	if errors.As(err, &we) && !errors.As(err, &se) {
		// A write outside the hub (an attachment): the same fault, the
		// same code.
		se = &hub.StorageError{Code: hub.StorageCode(we.Err), Op: we.Op, Err: we.Err}
		err = se
	}
	switch {
	case errors.Is(err, hub.ErrClosed):
		return Errorf(http.StatusServiceUnavailable, "shutting_down", "the server is shutting down")
	case errors.Is(err, hub.ErrNoLeader), errors.Is(err, hub.ErrNoAnswer):
		code := "no_leader"
		if errors.Is(err, hub.ErrNoAnswer) {
			code = "no_answer"
		}
		e := Errorf(http.StatusServiceUnavailable, code, err.Error())
		e.RetryAfter = "1"
		return e
	case errors.As(err, &fe):
		e := Errorf(http.StatusForbidden, fe.Code(), fe.Message)
		e.Permission = fe.Permission
		return e
	case errors.As(err, &in):
		status := http.StatusBadRequest
		switch in.Code {
		case "too_large": // the session's own cap on a message, as the door's body limit
			status = http.StatusRequestEntityTooLarge
		case hub.MemoryFullCode: // the input is fine; memory is full until something is forgotten
			status = http.StatusConflict
		}
		return Errorf(status, in.Code, in.Message)
	case errors.As(err, &se):
		status := http.StatusServiceUnavailable
		if se.Code == hub.StorageFull {
			status = http.StatusInsufficientStorage
		}
		return Errorf(status, se.Code, se.Message())
	case errors.As(err, &bad):
		return Errorf(http.StatusBadRequest, "bad_"+bad.Name, bad.Error()+" (use a seq number or an RFC 3339 time)")
	case errors.Is(err, hub.ErrNoHistory):
		return Errorf(http.StatusServiceUnavailable, "no_history", err.Error())
	case errors.Is(err, memory.ErrNotFound):
		return Errorf(http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, hub.ErrNoMemory):
		return Errorf(http.StatusServiceUnavailable, "no_memory", err.Error())
	case errors.Is(err, hub.ErrNoIndex):
		return Errorf(http.StatusServiceUnavailable, "no_index", err.Error())
	case errors.Is(err, hub.ErrNoEvent):
		return Errorf(http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, hub.ErrNotMessage):
		return Errorf(http.StatusConflict, "not_a_message", err.Error())
	case errors.Is(err, hub.ErrAlreadyErased):
		return Errorf(http.StatusConflict, "already_erased", err.Error())
	case errors.Is(err, hub.ErrDecided):
		return Errorf(http.StatusConflict, "already_decided", err.Error())
	case errors.Is(err, hub.ErrNoApproval):
		return Errorf(http.StatusNotFound, "no_approval", err.Error())
	case errors.Is(err, hub.ErrBadDecision):
		return Errorf(http.StatusBadRequest, "bad_decision", err.Error())
	case hub.IsQueryError(err):
		return Errorf(http.StatusBadRequest, "bad_query", err.Error())
	}
	return err
}

// ReadBody reads r's whole body, at most limit bytes, for a JSON door.
// Its refusals are the same on every door: 413 too_large (what names the
// limit, e.g. "server.max_message_bytes"), 408 body_timeout when the body
// did not arrive within the server's read deadline (the connection is then
// closed: what is left of the body is never read), 400 bad_body for any
// other read failure.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64, what string) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err == nil {
		return body, nil
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, Errorf(http.StatusRequestEntityTooLarge, "too_large", "the body is larger than "+what)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		w.Header().Set("Connection", "close")
		return nil, Errorf(http.StatusRequestTimeout, "body_timeout", "the body did not arrive in time")
	}
	return nil, Errorf(http.StatusBadRequest, "bad_body", "reading the body failed: "+err.Error())
}
