// Package httpjson is the one place where errors become an HTTP status and
// a JSON body, shared by package web and the HTTP channels.
package httpjson

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
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
