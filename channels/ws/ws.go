// Package ws is the WebSocket channel: GET /ws. Each connection is two
// goroutines — the handler, which reads client frames and pushes commands
// into the hub, and a writer, the only code that writes to the connection.
package ws

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/internal/ratelimit"
	"github.com/frontdesk-hq/frontdesk/people"
)

// Session is the part of the hub the WebSocket channel uses.
type Session interface {
	Subscribe(ctx context.Context, since int64) (*hub.Subscription, hub.Snapshot, error)
	Submit(ctx context.Context, in hub.Input) (hub.Result, error)
	CancelBy(ctx context.Context, a hub.Actor) (bool, error)
	Reset(ctx context.Context, reason string, a hub.Actor) (event.ResetData, error)
	Decide(ctx context.Context, id, decision string, a hub.Actor) (event.ApprovalResultData, error)
}

var _ Session = (*hub.SessionManager)(nil)

// Options configures the handler. Zero durations mean the defaults noted.
type Options struct {
	// MaxMessageBytes is the read limit per frame; larger frames close the
	// connection with 1009. Default 65536.
	MaxMessageBytes int64
	// AttachmentMaxBytes is attachments.max_bytes, told to clients in
	// connected when the session has an attachment store.
	AttachmentMaxBytes int64
	// PingInterval is how often the peer is pinged. Default 30 s.
	PingInterval time.Duration
	// WriteTimeout bounds each frame write and each ping's pong. Default 10 s.
	WriteTimeout time.Duration
	// CloseTimeout bounds a close handshake: sending the close frame and
	// waiting for the peer's. After Shutdown it is also all the time a
	// connection has left. Default 1 s.
	CloseTimeout time.Duration
	// MaxClients caps open connections; one more is accepted and closed at
	// once with 1013 "try again later". Default 1000.
	MaxClients int
	// FrameRatePerSec and FrameRateBurst limit the frames each client may
	// send (a token bucket); a frame over the limit is dropped and answered
	// with error rate_limited. FrameRatePerSec 0 (the zero value) means no
	// limit; FrameRateBurst defaults to 20.
	FrameRatePerSec float64
	FrameRateBurst  int
	// Now is the rate limiter's clock. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Handler serves GET /ws. Authentication, Host and Origin checks happen in
// front of it (package web).
type Handler struct {
	s     Session
	opts  Options
	conns sync.WaitGroup

	// mu guards live and cutAt. They hold the raw connections only so that
	// a close handshake and Shutdown can be bounded: coder/websocket waits
	// up to 5 s for a peer's close frame, and a peer that does not read
	// would hold every shutdown for that long.
	mu    sync.Mutex
	live  map[net.Conn]struct{}
	cutAt time.Time // set by Shutdown: no connection lives past it
	// clients are the connections being served, for Broadcast. Guarded
	// by mu.
	clients map[*conn]struct{}
	// open counts connections being served, for MaxClients. Only
	// ServeHTTP reads and changes it, with one atomic step each way: no
	// check-then-act.
	open    atomic.Int64
	metrics metrics
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
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = time.Second
	}
	if opts.MaxClients <= 0 {
		opts.MaxClients = 1000
	}
	if opts.FrameRateBurst <= 0 {
		opts.FrameRateBurst = 20
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Handler{s: s, opts: opts, live: map[net.Conn]struct{}{}, clients: map[*conn]struct{}{}, metrics: newMetrics()}
}

// clientFrame is any frame a client may send.
type clientFrame struct {
	Type        string `json:"type"`
	Content     string `json:"content"`
	ClientMsgID string `json:"client_msg_id"`
	Action      string `json:"action"`
	ID          string `json:"id"` // approve/deny: the approval_request's id
	// Attachments of a message: ids (sha256) from POST /api/attachments.
	Attachments []string `json:"attachments"`
}

// directQueue bounds per-connection replies (busy, error, duplicate echo).
const directQueue = 32

// ServeHTTP upgrades the request and runs the connection until either side
// closes it or the hub stops.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.conns.Add(1)
	defer h.conns.Done()
	if h.open.Add(1) > int64(h.opts.MaxClients) {
		h.open.Add(-1)
		h.refuse(w, r)
		return
	}
	defer h.open.Add(-1)
	var since int64
	if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			httpjson.WriteError(w, httpjson.Errorf(http.StatusBadRequest, "bad_since", "since must be a non-negative integer"))
			return
		}
		since = n
	}
	// Origin was checked by package web, which also knows allowed_origins.
	hw := &hijackWriter{ResponseWriter: w}
	c, err := websocket.Accept(hw, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept has written the HTTP error
	}
	h.track(hw.conn)
	defer h.untrack(hw.conn)
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
		h.close(c, hw.conn, websocket.StatusGoingAway, "server shutting down")
		return
	}
	defer sub.Close()

	cn := &conn{c: c, raw: hw.conn, h: h, direct: make(chan []byte, directQueue),
		limit: ratelimit.New(h.opts.FrameRatePerSec, h.opts.FrameRateBurst), me: hub.Actor{Door: event.ChannelWeb}}
	cn.deadline = time.AfterFunc(time.Hour, func() { c.CloseNow() })
	cn.deadline.Stop()
	defer cn.deadline.Stop()
	h.join(cn)
	defer h.leave(cn)
	cn.closeOnRevoke(ctx, r.Context())
	if who, ok := people.FromContext(r.Context()); ok && who.Person != nil {
		you := who.Person.You() // connected.you: whom the guard signed in
		snap.Connected.You = &you
		cn.me = who.Actor(event.ChannelWeb)
	}
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

// refuse answers a connection over MaxClients: accepted, then closed at
// once with 1013 "try again later", which tells clients to back off (a
// refused upgrade would look like a network failure to a browser).
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request) {
	h.metrics.maxClients.Inc()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer c.CloseNow()
	// A client that does not answer the close frame holds this goroutine
	// and its socket for a second at most, not the library's 5 s: a
	// flood of connections over the limit stays cheap.
	stop := time.AfterFunc(time.Second, func() { c.CloseNow() })
	defer stop.Stop()
	c.Close(websocket.StatusTryAgainLater, "try again later")
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

// Shutdown gives every connection CloseTimeout (less if ctx ends sooner)
// to finish — after the hub stopped, that is taking its 1001 — then cuts
// it, and waits for the connections' goroutines. A peer that does not
// read, or a write stuck on a full socket, costs at most that much. Call
// it after the hub stopped and the HTTP server stopped accepting.
func (h *Handler) Shutdown(ctx context.Context) error {
	cut := time.Now().Add(h.opts.CloseTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(cut) {
		cut = d
	}
	h.mu.Lock()
	h.cutAt = cut
	for raw := range h.live {
		raw.SetDeadline(cut)
	}
	h.mu.Unlock()
	err := h.Wait(ctx)
	if err != nil {
		h.mu.Lock()
		for raw := range h.live {
			raw.Close()
		}
		h.mu.Unlock()
	}
	return err
}

// Broadcast sends e, a per-connection frame that is neither persisted
// nor numbered (such as schedules_changed), to every connected client
// after its replay. It never blocks: a client whose reply queue is full
// is not reading, is about to be dropped by the hub, and misses it. Safe
// from any goroutine.
func (h *Handler) Broadcast(e event.Event) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for cn := range h.clients {
		select {
		case cn.direct <- b:
		default:
		}
	}
}

func (h *Handler) join(cn *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients[cn] = struct{}{}
}

func (h *Handler) leave(cn *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, cn)
}

func (h *Handler) track(raw net.Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.live[raw] = struct{}{}
	if !h.cutAt.IsZero() {
		raw.SetDeadline(h.cutAt)
	}
}

func (h *Handler) untrack(raw net.Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.live, raw)
}

// close runs the close handshake within CloseTimeout (coder/websocket
// would give a silent peer 5 s for its close frame, and as long again to
// take ours). It brings the deadline forward only: one Shutdown set stays.
func (h *Handler) close(c *websocket.Conn, raw net.Conn, code websocket.StatusCode, reason string) {
	by := time.Now().Add(h.opts.CloseTimeout)
	h.mu.Lock()
	if !h.cutAt.IsZero() && h.cutAt.Before(by) {
		by = h.cutAt
	}
	raw.SetDeadline(by)
	h.mu.Unlock()
	c.Close(code, reason)
}

// hijackWriter keeps the connection coder/websocket hijacks, so that its
// deadlines can be set (the library offers contexts per call only).
type hijackWriter struct {
	http.ResponseWriter
	conn net.Conn
}

func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	w.conn = c
	return c, brw, err
}

func (w *hijackWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type conn struct {
	c      *websocket.Conn
	raw    net.Conn // the hijacked connection under c
	h      *Handler
	direct chan []byte // per-connection replies, written by the writer
	// deadline closes the connection when one write takes longer than
	// WriteTimeout. One timer per connection, reset per frame: a
	// context.WithTimeout per write cost ~7 allocations per delivery and
	// showed up in the fan-out profile.
	deadline *time.Timer
	limit    *ratelimit.Bucket // the client's frame rate; the reader's alone
	// me is who this connection asks the session as: the web door and the
	// person the guard signed in (none without a guard: a nil Gate allows).
	me hub.Actor
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

// errorCode is the error frame's code and message for a hub error: a
// storage fault's own code (storage_full, storage_error), no_leader on a
// cluster node while no node holds the lease, else internal.
func errorCode(err error) (code, msg string) {
	var se *hub.StorageError
	if errors.As(err, &se) {
		return se.Code, se.Message()
	}
	var fe *hub.ForbiddenError
	if errors.As(err, &fe) {
		return fe.Code(), fe.Message
	}
	switch {
	case errors.Is(err, hub.ErrNoLeader):
		return "no_leader", hub.ErrNoLeader.Error()
	case errors.Is(err, hub.ErrNoAnswer):
		return "no_answer", hub.ErrNoAnswer.Error()
	}
	return "internal", err.Error()
}

// read pushes client frames into the hub until the connection ends.
func (cn *conn) read(ctx context.Context) {
	for {
		typ, b, err := cn.c.Read(ctx)
		if err != nil {
			return // closed by peer, read limit (1009 sent by the library), or ctx
		}
		if typ != websocket.MessageText {
			cn.h.close(cn.c, cn.raw, websocket.StatusUnsupportedData, "binary frames are not supported")
			return
		}
		if ok, wait := cn.limit.Take(cn.h.opts.Now()); !ok {
			cn.rateLimited(b, wait)
			continue
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
			cn.command(ctx, f.Action, f.ID)
		default:
			cn.replyError("unknown_type", `unknown frame type "`+f.Type+`"; use "message" or "command"`, f.ClientMsgID)
		}
	}
}

// rateLimited drops frame b, which came too soon, and tells the client
// when to send it again (naming its message, if b has one, so the UI can
// mark it failed).
func (cn *conn) rateLimited(b []byte, wait time.Duration) {
	cn.h.metrics.frameRate.Inc()
	f, _ := decodeFrame(b) // for its client_msg_id, if it has one
	o := cn.h.opts
	cn.replyError("rate_limited", fmt.Sprintf("too many frames: a client may send %d at once, then %g a second; this one was dropped, send it again in %s",
		o.FrameRateBurst, o.FrameRatePerSec, wait.Round(time.Millisecond)), f.ClientMsgID)
}

func (cn *conn) submit(ctx context.Context, f clientFrame) {
	res, err := cn.h.s.Submit(ctx, hub.Input{
		Channel: event.ChannelWeb, Content: f.Content, ClientMsgID: f.ClientMsgID,
		Attachments: hub.AttachmentRefs(f.Attachments),
		Person:      cn.me.Person, SignedIn: cn.me.SignedIn,
		Notify: cn.reply,
	})
	var bad *hub.InputError
	switch {
	case errors.As(err, &bad):
		cn.replyError(bad.Code, bad.Message, f.ClientMsgID)
		return
	case err != nil:
		code, msg := errorCode(err)
		cn.replyError(code, "message not accepted: "+msg, f.ClientMsgID)
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

func (cn *conn) command(ctx context.Context, action, id string) {
	switch action {
	case event.Approve, event.Deny:
		// Everyone sees the approval_result; only a failure is ours alone.
		if _, err := cn.h.s.Decide(ctx, id, action, cn.me); err != nil {
			code := "bad_approval"
			var fe *hub.ForbiddenError
			switch {
			case errors.As(err, &fe):
				code = fe.Code()
			case errors.Is(err, hub.ErrDecided):
				code = "already_decided"
			case errors.Is(err, hub.ErrNoApproval):
				code = "no_approval"
			case errors.Is(err, hub.ErrNoLeader), errors.Is(err, hub.ErrNoAnswer):
				code, _ = errorCode(err)
			}
			cn.replyError(code, err.Error(), "")
		}
	case "cancel":
		ok, err := cn.h.s.CancelBy(ctx, cn.me)
		if err != nil {
			code, msg := errorCode(err)
			cn.replyError(code, msg, "")
		} else if !ok {
			cn.replyError("not_busy", "nothing to cancel: no turn is running", "")
		}
	case "reset":
		// Everyone, this client included, sees the reset event.
		if _, err := cn.h.s.Reset(ctx, hub.ResetManual, cn.me); err != nil {
			code, msg := errorCode(err)
			cn.replyError(code, "reset failed: "+msg, "")
		}
	default:
		cn.replyError("unknown_action", `unknown command action "`+action+`"; use "cancel", "reset", "approve" or "deny"`, "")
	}
}

// write sends connected, the replay, synced, then live events, replies and
// pings until the subscription or the connection ends.
func (cn *conn) write(ctx context.Context, sub *hub.Subscription, snap hub.Snapshot) {
	now := time.Now()
	snap.Connected.MaxMessageBytes = cn.h.opts.MaxMessageBytes
	if snap.Connected.AttachmentsMaxPerMessage > 0 { // the session has a store
		snap.Connected.AttachmentsMaxBytes = cn.h.opts.AttachmentMaxBytes
	}
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
				cn.h.metrics.fanoutLag.Observe(time.Since(f.Published).Seconds())
			}
			if ended {
				switch sub.Err() {
				case hub.ErrSlowConsumer:
					cn.h.close(cn.c, cn.raw, websocket.StatusPolicyViolation, "slow consumer")
				case hub.ErrClosed:
					cn.h.close(cn.c, cn.raw, websocket.StatusGoingAway, "server shutting down")
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
