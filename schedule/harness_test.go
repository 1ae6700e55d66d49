package schedule

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
)

// rig is a real session (hub, chat log, WebSocket server) with a
// scheduler on a fake clock, over one data directory that outlives it
// (restart with another rig on the same dir).
type rig struct {
	t       *testing.T
	dir     string
	clock   *fakeclock.Clock
	hub     *hub.SessionManager
	sched   *Scheduler
	srv     *httptest.Server
	logPath string

	stopSched context.CancelFunc
	schedErr  chan error
	stopHub   context.CancelFunc
	hubDone   chan struct{}
	wsh       *ws.Handler
	lg        *history.Log
}

func newRig(t *testing.T, dir string, clock *fakeclock.Clock, a agent.Agent, opts Options, gate ...hub.Gate) *rig {
	t.Helper()
	logPath := filepath.Join(dir, "chat_history.ndjson")
	tail, _, err := history.ReadTail(logPath, 5000)
	if err != nil {
		t.Fatal(err)
	}
	lg, err := history.Open(history.Options{Path: logPath, RotateMB: 5, Fsync: "always"})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: dir, clock: clock, logPath: logPath, lg: lg, hubDone: make(chan struct{}), schedErr: make(chan error, 1)}
	quiet := slog.New(slog.DiscardHandler)
	cfg := hub.Config{DataDir: dir, Restore: tail, Logger: quiet, Tools: func() []agent.Tool { return r.sched.Tools() }}
	if len(gate) > 0 {
		cfg.Gate = gate[0]
	}
	r.hub = hub.New(cfg, lg, a)
	opts.DataDir, opts.Clock, opts.Logger = dir, clock, quiet
	if opts.TZ == nil {
		opts.TZ = time.UTC
	}
	if r.sched, err = Open(r.hub, opts); err != nil {
		t.Fatal(err)
	}
	hctx, stopHub := context.WithCancel(context.Background())
	r.stopHub = stopHub
	go func() { defer close(r.hubDone); r.hub.Run(hctx) }()
	r.wsh = ws.New(r.hub, ws.Options{Logger: quiet})
	r.srv = httptest.NewServer(r.wsh)
	sctx, stopSched := context.WithCancel(context.Background())
	r.stopSched = stopSched
	go func() { r.schedErr <- r.sched.Run(sctx) }()
	t.Cleanup(r.stop)
	return r
}

// stop shuts down in serve's order: scheduler, hub, clients, log.
func (r *rig) stop() {
	if r.stopSched == nil {
		return
	}
	r.stopSched()
	<-r.schedErr
	r.stopSched = nil
	r.stopHub()
	<-r.hubDone
	r.srv.Close()
	r.wsh.Wait(context.Background())
	r.lg.Close()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// client is a WebSocket client of the rig's session.
type client struct {
	t *testing.T
	c *websocket.Conn
}

func (r *rig) dial() *client {
	r.t.Helper()
	c, _, err := websocket.Dial(ctxT(r.t), "ws"+strings.TrimPrefix(r.srv.URL, "http"), nil)
	if err != nil {
		r.t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	r.t.Cleanup(func() { c.CloseNow() })
	cl := &client{t: r.t, c: c}
	cl.until(func(e event.Event) bool { return e.Type == event.Synced })
	return cl
}

// until reads frames until match says yes and returns that frame.
func (c *client) until(match func(event.Event) bool) event.Event {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		_, b, err := c.c.Read(ctx)
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		var e event.Event
		if err := json.Unmarshal(b, &e); err != nil {
			c.t.Fatalf("bad frame %s", b)
		}
		if match(e) {
			return e
		}
	}
}

// scheduled waits for the user event of a fired schedule and the turn's
// turn_end, and returns the user data.
func (c *client) scheduled(id string) (event.UserData, event.Event) {
	c.t.Helper()
	var d event.UserData
	u := c.until(func(e event.Event) bool {
		if e.Type != event.User {
			return false
		}
		d = event.UserData{}
		_ = json.Unmarshal(e.Data, &d)
		return d.ScheduleID == id
	})
	end := c.until(func(e event.Event) bool { return e.Type == event.TurnEnd && e.Turn == u.Turn })
	return d, end
}

// userEvents reads the chat log's user events of channel schedule.
func (r *rig) userEvents() []event.UserData {
	r.t.Helper()
	evs, _, err := history.ReadTail(r.logPath, 100000)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []event.UserData
	for _, e := range evs {
		if e.Type != event.User {
			continue
		}
		var d event.UserData
		_ = json.Unmarshal(e.Data, &d)
		if d.Channel == event.ChannelSchedule {
			out = append(out, d)
		}
	}
	return out
}

func (r *rig) get(id string) (Schedule, bool) {
	r.t.Helper()
	list, err := r.sched.List(ctxT(r.t))
	if err != nil {
		r.t.Fatal(err)
	}
	for _, sc := range list {
		if sc.ID == id {
			return sc, true
		}
	}
	return Schedule{}, false
}

func (r *rig) create(sp Spec) Schedule {
	r.t.Helper()
	sc, err := r.sched.Create(ctxT(r.t), sp)
	if err != nil {
		r.t.Fatalf("create %+v: %v", sp, err)
	}
	return sc
}

// steps collects the steps of firings (Options.step) and can stop one
// dead at a step.
type steps struct {
	ch     chan string // "name key"
	crashs map[string]bool
}

func newSteps(crashAt ...string) *steps {
	st := &steps{ch: make(chan string, 256), crashs: map[string]bool{}}
	for _, c := range crashAt {
		st.crashs[c] = true
	}
	return st
}

func (st *steps) hook(name, key string) bool {
	st.ch <- name + " " + key
	return st.crashs[name]
}

// wait waits for step name of the firing key.
func (st *steps) wait(t *testing.T, name, key string) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case got := <-st.ch:
			if got == name+" "+key {
				return
			}
		case <-timeout:
			t.Fatalf("no step %s of %s", name, key)
		}
	}
}

// key is the client_msg_id of sc's firing due at its current next run.
func key(sc Schedule) string {
	return "schedule:" + sc.ID + ":" + strconv.FormatInt(sc.NextRun.Unix(), 10)
}
