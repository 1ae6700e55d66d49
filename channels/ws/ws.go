// Package ws is the WebSocket channel: GET /ws. Each connection is two
// goroutines — the handler, which reads client frames and pushes commands
// into the hub, and a writer, the only code that writes to the connection.
package ws

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// Session is the part of the hub the WebSocket channel uses.
type Session interface {
	Subscribe(ctx context.Context, since int64) (*hub.Subscription, hub.Snapshot, error)
	Submit(ctx context.Context, in hub.Input) (hub.Result, error)
	Cancel(ctx context.Context) (bool, error)
	Reset(ctx context.Context, reason string) (event.ResetData, error)
}

var _ Session = (*hub.SessionManager)(nil)

// Options configures the handler. Zero durations mean the defaults noted.
type Options struct {
	// MaxMessageBytes is the read limit per frame; larger frames close the
	// connection with 1009. Default 65536.
	MaxMessageBytes int64
	// PingInterval is how often the peer is pinged. Default 30 s.
	PingInterval time.Duration
	// WriteTimeout bounds each frame write and each ping's pong. Default 10 s.
	WriteTimeout time.Duration
	Logger       *slog.Logger
}

// Handler serves GET /ws. Authentication, Host and Origin checks happen in
// front of it (package web).
type Handler struct {
	s     Session
	opts  Options
	conns sync.WaitGroup
}

// New returns a Handler over s.
func New(s Session, opts Options) *Handler {
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = 65536
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = 30 * time.Second
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Handler{s: s, opts: opts}
}

// clientFrame is any frame a client may send.
type clientFrame struct {
	Type        string `json:"type"`
	Content     string `json:"content"`
	ClientMsgID string `json:"client_msg_id"`
	Action      string `json:"action"`
}

// directQueue bounds per-connection replies (busy, error, duplicate echo).
const directQueue = 32

// ServeHTTP upgrades the request and runs the connection until either side
// closes it or the hub stops.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.conns.Add(1)
	defer h.conns.Done()
	var since int64
	if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			http.Error(w, `{"code":"bad_request","message":"since must be a non-negative integer"}`, http.StatusBadRequest)
			return
		}
		since = n
	}
	// Origin was checked by package web, which also knows allowed_origins.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept has written the HTTP error
	}
	// Every way out of this handler releases the socket. The library closes
	// the TCP connection only when a close handshake completes or a Read or
	// Write context expires: a peer that vanished (EOF, reset) or one sent
	// 1009 for an oversize frame would otherwise keep its fd open for good.
	// After a completed Close this is a no-op.
	defer c.CloseNow()
	c.SetReadLimit(h.opts.MaxMessageBytes)

	// The connection's lifetime context: not the request's, which the
	// server may cancel early, and never a timeout — coder/websocket closes
	// the whole connection when a Read context expires.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()

	sub, snap, err := h.s.Subscribe(ctx, since)
	if err != nil {
		c.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	defer sub.Close()

	cn := &conn{c: c, h: h, direct: make(chan []byte, directQueue)}
	cn.deadline = time.AfterFunc(time.Hour, func() { c.CloseNow() })
	cn.deadline.Stop()
	defer cn.deadline.Stop()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		defer cancel() // the writer ending (error, drop, shutdown) ends the reader too
		cn.write(ctx, sub, snap)
	}()
	cn.read(ctx)
	cancel()
	<-writerDone
}

// Wait blocks until every connection has finished (after the hub stopped
// they close with 1001 by themselves) or ctx ends. Call it only after the
// HTTP server stopped accepting connections.
func (h *Handler) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { h.conns.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type conn struct {
	c      *websocket.Conn
	h      *Handler
	direct chan []byte // per-connection replies, written by the writer
	// deadline closes the connection when one write takes longer than
	// WriteTimeout. One timer per connection, reset per frame: a
	// context.WithTimeout per write cost ~7 allocations per delivery and
	// showed up in the fan-out profile.
	deadline *time.Timer
}

// reply queues a per-connection frame; if the queue is full the client is
// not reading and will be dropped by the hub anyway, so the reply is lost.
func (cn *conn) reply(e event.Event) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	select {
	case cn.direct <- b:
	default:
	}
}

// replyError answers the client alone; clientMsgID names the message frame
// it answers, if any.
func (cn *conn) replyError(code, msg, clientMsgID string) {
	cn.reply(event.New(event.Error, "", time.Now(), event.ErrorData{Code: code, Message: msg, ClientMsgID: clientMsgID}))
}

// read pushes client frames into the hub until the connection ends.
func (cn *conn) read(ctx context.Context) {
	for {
		typ, b, err := cn.c.Read(ctx)
		if err != nil {
			return // closed by peer, read limit (1009 sent by the library), or ctx
		}
		if typ != websocket.MessageText {
			cn.c.Close(websocket.StatusUnsupportedData, "binary frames are not supported")
			return
		}
		f, err := decodeFrame(b)
		if fe := (*frameError)(nil); errors.As(err, &fe) {
			cn.replyError(fe.code, fe.msg, "")
			continue
		}
		switch f.Type {
		case "message":
			cn.submit(ctx, f)
		case "command":
			cn.command(ctx, f.Action)
		default:
			cn.replyError("unknown_type", `unknown frame type "`+f.Type+`"; use "message" or "command"`, f.ClientMsgID)
		}
	}
}

func (cn *conn) submit(ctx context.Context, f clientFrame) {
	res, err := cn.h.s.Submit(ctx, hub.Input{
		Channel: event.ChannelWeb, Content: f.Content, ClientMsgID: f.ClientMsgID,
		Notify: cn.reply,
	})
	switch {
	case errors.Is(err, hub.ErrEmpty):
		cn.replyError("empty_content", "message content is empty", f.ClientMsgID)
		return
	case err != nil:
		cn.replyError("internal", "message not accepted: "+err.Error(), f.ClientMsgID)
		return
	}
	switch res.Outcome {
	case hub.Duplicate:
		// The client resent an input the session already accepted: give it
		// the original echo again instead of running it twice.
		select {
		case cn.direct <- res.Echo.JSON:
		default:
		}
	case hub.Rejected, hub.Queued:
		cn.reply(event.New(event.Busy, "", time.Now(), res.Busy))
	}
}

func (cn *conn) command(ctx context.Context, action string) {
	switch action {
	case "cancel":
		ok, err := cn.h.s.Cancel(ctx)
		if err != nil {
			cn.replyError("internal", err.Error(), "")
		} else if !ok {
			cn.replyError("not_busy", "nothing to cancel: no turn is running", "")
		}
	case "reset":
		// Everyone, this client included, sees the reset event.
		if _, err := cn.h.s.Reset(ctx, hub.ResetManual); err != nil {
			cn.replyError("internal", err.Error(), "")
		}
	default:
		cn.replyError("unknown_action", `unknown command action "`+action+`"; use "cancel" or "reset"`, "")
	}
}

// write sends connected, the replay, synced, then live events, replies and
// pings until the subscription or the connection ends.
func (cn *conn) write(ctx context.Context, sub *hub.Subscription, snap hub.Snapshot) {
	now := time.Now()
	snap.Connected.MaxMessageBytes = cn.h.opts.MaxMessageBytes
	if !cn.writeEvent(event.New(event.Connected, "", now, snap.Connected)) {
		return
	}
	for _, f := range snap.Replay {
		if !cn.writeFrame(f.JSON) {
			return
		}
	}
	if !cn.writeEvent(event.New(event.Synced, "", now, snap.Synced)) {
		return
	}
	ping := time.NewTicker(cn.h.opts.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Ready():
			frames, ended := sub.Take()
			for _, f := range frames {
				if !cn.writeFrame(f.JSON) {
					return
				}
			}
			if ended {
				switch sub.Err() {
				case hub.ErrSlowConsumer:
					cn.c.Close(websocket.StatusPolicyViolation, "slow consumer")
				case hub.ErrClosed:
					cn.c.Close(websocket.StatusGoingAway, "server shutting down")
				}
				return
			}
		case b := <-cn.direct:
			if !cn.writeFrame(b) {
				return
			}
		case <-ping.C:
			pctx, cancel := context.WithTimeout(ctx, cn.h.opts.WriteTimeout)
			err := cn.c.Ping(pctx)
			cancel()
			if err != nil {
				cn.h.opts.Logger.Debug("websocket peer stopped answering pings", "err", err)
				cn.c.CloseNow()
				return
			}
		}
	}
}

func (cn *conn) writeEvent(e event.Event) bool {
	b, err := json.Marshal(e)
	if err != nil {
		return false
	}
	return cn.writeFrame(b)
}

// writeFrame writes one frame within WriteTimeout; past it the deadline
// timer closes the connection, which is what a stuck peer deserves. The
// write itself takes no context: coder/websocket would set up a timeout per
// call, and the writer ends through the closed connection or its loop.
func (cn *conn) writeFrame(b []byte) bool {
	cn.deadline.Reset(cn.h.opts.WriteTimeout)
	err := cn.c.Write(context.Background(), websocket.MessageText, b)
	cn.deadline.Stop()
	return err == nil
}
