package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions bounds what one client can make /mcp do.
type HTTPOptions struct {
	// MaxBodyBytes refuses larger bodies with 413: server.max_message_bytes,
	// as for every API body. Default 65536.
	MaxBodyBytes int64
	// MaxConcurrent is how many /mcp requests run at once. Default
	// DefaultMaxConcurrent.
	MaxConcurrent int
	// QueueWait is how long a request waits for a free slot before it is
	// answered 429. Default DefaultQueueWait.
	QueueWait time.Duration
}

// Defaults of HTTPOptions: a few requests at once (a history search is
// cheap, a desktop client sends one at a time); a burst beyond waits a
// moment, then is told to retry.
const (
	DefaultMaxConcurrent = 4
	DefaultQueueWait     = 2 * time.Second
)

// Handler serves s over the streamable HTTP transport. Authentication and
// the Origin and Host checks happen in front of it (package web), as for
// /api/*. It is stateless: every request stands alone, so a restart of
// frontdesk never strands a client's session.
//
// In front of the SDK it refuses what would let one request cost without
// bound: bodies over o.MaxBodyBytes (413), JSON-RPC batches (400 — MCP
// 2025-06-18 dropped batching; one message a request), and more than
// o.MaxConcurrent requests at once (a request waits up to o.QueueWait for
// a slot, then gets 429 with Retry-After). send_message gives its slot
// back while it waits for the assistant's reply. Every refusal is a
// JSON-RPC error object with id null.
func Handler(s *sdk.Server, o HTTPOptions) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 65536
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.QueueWait <= 0 {
		o.QueueWait = DefaultQueueWait
	}
	// The SDK's own localhost check is off: package web already admits only
	// the configured Host names, which may include a reverse proxy's.
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true})
	return &bounded{next: h, o: o, slots: make(chan struct{}, o.MaxConcurrent)}
}

type bounded struct {
	next  http.Handler
	o     HTTPOptions
	slots chan struct{}
}

func (b *bounded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		b.next.ServeHTTP(w, r) // the SDK answers 405 (stateless: POST only)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, b.o.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			rpcError(w, http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest,
				"the body is larger than server.max_message_bytes ("+strconv.FormatInt(b.o.MaxBodyBytes, 10)+" bytes)")
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			rpcError(w, http.StatusRequestTimeout, jsonrpc.CodeInvalidRequest, "the body did not arrive in time")
		default:
			rpcError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "reading the body failed: "+err.Error())
		}
		return
	}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		rpcError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
			"JSON-RPC batches are not supported (MCP 2025-06-18 dropped them): send one message a request")
		return
	}
	release, ok := b.acquire(r.Context())
	if !ok {
		if r.Context().Err() == nil {
			w.Header().Set("Retry-After", "1")
			rpcError(w, http.StatusTooManyRequests, jsonrpc.CodeInternalError,
				"too many /mcp requests at once (this server runs "+strconv.Itoa(b.o.MaxConcurrent)+"); try again in 1 s")
		}
		return
	}
	defer release()
	r.Body = io.NopCloser(bytes.NewReader(body))
	b.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), slotKey{}, release)))
}

// acquire takes a slot, waiting up to QueueWait. release is idempotent.
func (b *bounded) acquire(ctx context.Context) (release func(), ok bool) {
	t := time.NewTimer(b.o.QueueWait)
	defer t.Stop()
	select {
	case b.slots <- struct{}{}:
	case <-t.C:
		return nil, false
	case <-ctx.Done():
		return nil, false
	}
	return sync.OnceFunc(func() { <-b.slots }), true
}

type slotKey struct{}

// releaseSlot gives the request's /mcp slot back early: for a call that
// only waits from here on (send_message waiting for the reply).
func releaseSlot(ctx context.Context) {
	if release, ok := ctx.Value(slotKey{}).(func()); ok {
		release()
	}
}

// rpcError answers with a JSON-RPC error object (id null: the request was
// not read as a message).
func rpcError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
}
