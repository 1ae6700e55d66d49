package web

import (
	"log/slog"
	"net/http"
	"time"
)

// ServerOptions configures the http.Server that NewServer builds. Zero
// durations mean the defaults noted.
type ServerOptions struct {
	// HeaderTimeout bounds reading a request's headers. Default 10 s.
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading a whole request, headers and body, from
	// its first byte. Default 30 s. It ends when the body has been read:
	// neither a WebSocket nor a slow answer is cut by it.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that waits this long for
	// its next request. Default 120 s.
	IdleTimeout time.Duration
	// Logger receives net/http's own messages (a panicking handler, accept
	// errors) instead of the standard logger. Default slog.Default().
	Logger *slog.Logger
}

// Defaults of ServerOptions.
const (
	DefaultHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout   = 30 * time.Second
	DefaultIdleTimeout   = 120 * time.Second
)

// NewServer returns the http.Server main runs h with: every request is
// read within a deadline (headers within HeaderTimeout, headers and body
// within BodyTimeout), idle keep-alive connections are closed, and
// net/http's messages go to o.Logger.
//
// The body deadline is http.Server.ReadTimeout. It does not reach a
// WebSocket or a handler that answers late (POST /api/messages?wait=1 may
// wait 10 minutes): net/http lifts the read deadline once the body has been
// read to its end (at once for a request without a body, such as the /ws
// upgrade) and again when a handler hijacks the connection.
// TestReadTimeoutSparesWebSockets holds it to that.
func NewServer(h http.Handler, o ServerOptions) *http.Server {
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.HeaderTimeout,
		ReadTimeout:       o.BodyTimeout,
		IdleTimeout:       o.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
	}
}
