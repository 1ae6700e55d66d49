package hub

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// riskyAgent calls the danger tool once and replies with what it said.
type riskyAgent struct{}

func (riskyAgent) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	for _, t := range req.Tools {
		if t.Name == "files__delete" {
			out, err := t.Call(ctx, json.RawMessage(`{"path":"/tmp/x"}`))
			if ctx.Err() != nil {
				return agent.Reply{}, ctx.Err()
			}
			if err != nil {
				return agent.Reply{Content: "error: " + err.Error()}, nil
			}
			return agent.Reply{Content: "ok: " + out}, nil
		}
	}
	return agent.Reply{Content: "no tool"}, nil
}

// dangerTools is a Confirm tool that counts its runs.
func dangerTools(runs *atomic.Int32) func() []agent.Tool {
	return func() []agent.Tool {
		return []agent.Tool{{Name: "files__delete", Server: "files", Confirm: true, Parameters: json.RawMessage(`{"type":"object"}`),
			Call: func(ctx context.Context, args json.RawMessage) (string, error) { runs.Add(1); return "deleted", nil }}}
	}
}

func approvalRequest(t *testing.T, s *Subscription) event.ApprovalRequestData {
	t.Helper()
	evs := until(t, s, event.ApprovalRequest)
	return data[event.ApprovalRequestData](t, evs[len(evs)-1])
}

func TestApprovalApproveDenyTimeout(t *testing.T) {
	var runs atomic.Int32
	h := startHub(t, Config{Tools: dangerTools(&runs), ApprovalTimeout: 200 * time.Millisecond}, riskyAgent{})
	s, _ := subscribe(t, h, 0)

	submit(t, h, "delete it", "c1")
	req := approvalRequest(t, s)
	if req.Tool != "files__delete" || req.Server != "files" || string(req.Args) != `{"path":"/tmp/x"}` || req.ID == "" {
		t.Fatalf("request %+v", req)
	}
	d, err := h.Decide(ctxT(t), req.ID, event.Approve, Actor{Door: "web"})
	if err != nil || d.Decision != event.Approve || d.By != "web" {
		t.Fatalf("decide: %+v %v", d, err)
	}
	if d, err := h.Decide(ctxT(t), req.ID, event.Deny, Actor{Door: "api"}); !errors.Is(err, ErrDecided) || d.Decision != event.Approve || d.By != "web" {
		t.Errorf("a second answer: %+v %v, want ErrDecided with the first answer", d, err)
	}
	if _, err := h.Decide(ctxT(t), "a424242", event.Deny, Actor{Door: "api"}); !errors.Is(err, ErrNoApproval) || errors.Is(err, ErrDecided) {
		t.Errorf("an unknown id: %v, want ErrNoApproval", err)
	}
	evs := until(t, s, event.TurnEnd)
	if r := data[event.ApprovalResultData](t, evs[0]); evs[0].Type != event.ApprovalResult || r.Decision != event.Approve || r.By != "web" {
		t.Errorf("first event after the request: %s %s", evs[0].Type, evs[0].Data)
	}
	if reply := replyOf(t, evs); reply != "ok: deleted" || runs.Load() != 1 {
		t.Errorf("approved: reply %q, runs %d", reply, runs.Load())
	}

	submit(t, h, "delete it again", "c2")
	req = approvalRequest(t, s)
	if _, err := h.Decide(ctxT(t), "", event.Deny, Actor{Door: "console"}); err != nil { // "" = the only one waiting
		t.Fatal(err)
	}
	if reply := replyOf(t, until(t, s, event.TurnEnd)); !strings.Contains(reply, "the user denied this call") || !strings.Contains(reply, "console") || runs.Load() != 1 {
		t.Errorf("denied: reply %q, runs %d", reply, runs.Load())
	}

	submit(t, h, "and again", "c3")
	approvalRequest(t, s)
	evs = until(t, s, event.TurnEnd) // nobody answers
	var res event.ApprovalResultData
	for _, e := range evs {
		if e.Type == event.ApprovalResult {
			res = data[event.ApprovalResultData](t, e)
		}
	}
	if res.Decision != event.Deny || res.By != ByTimeout || !strings.Contains(replyOf(t, evs), "nobody approved") || runs.Load() != 1 {
		t.Errorf("timeout: %+v, reply %q, runs %d", res, replyOf(t, evs), runs.Load())
	}
	if _, err := h.Decide(ctxT(t), "a999", "maybe", Actor{Door: "web"}); !errors.Is(err, ErrBadDecision) {
		t.Errorf("bad decision: %v", err)
	}
}

func replyOf(t *testing.T, evs []event.Event) string {
	for _, e := range evs {
		if e.Type == event.Assistant {
			m, _ := e.Message()
			return m.Content
		}
	}
	return ""
}

func TestApprovalCancelWhileWaiting(t *testing.T) {
	var runs atomic.Int32
	h := startHub(t, Config{Tools: dangerTools(&runs)}, riskyAgent{})
	s, _ := subscribe(t, h, 0)
	submit(t, h, "delete it", "c1")
	req := approvalRequest(t, s)
	if ok, err := h.Cancel(ctxT(t)); !ok || err != nil {
		t.Fatalf("cancel: %v %v", ok, err)
	}
	evs := until(t, s, event.TurnEnd)
	if evs[0].Type != event.ApprovalResult {
		t.Fatalf("first event after cancel: %s", evs[0].Type)
	}
	if r := data[event.ApprovalResultData](t, evs[0]); r.ID != req.ID || r.Decision != event.Deny || r.By != ByCancel {
		t.Errorf("result %+v", r)
	}
	if st := data[event.TurnEndData](t, evs[len(evs)-1]).Status; st != event.StatusCancelled || runs.Load() != 0 {
		t.Errorf("turn %s, runs %d", st, runs.Load())
	}
	if _, err := h.Decide(ctxT(t), req.ID, event.Approve, Actor{Door: "web"}); !errors.Is(err, ErrDecided) || !strings.Contains(err.Error(), "deny by cancel") {
		t.Errorf("approve after cancel: %v, want ErrDecided (deny by cancel)", err)
	}
}

// A request that waited when the process died is denied on the next
// start, before its turn is marked interrupted.
func TestApprovalPendingAtCrash(t *testing.T) {
	dir := t.TempDir()
	var runs atomic.Int32
	h := startHub(t, Config{DataDir: dir, Tools: dangerTools(&runs)}, riskyAgent{})
	s, _ := subscribe(t, h, 0)
	submit(t, h, "delete it", "c1")
	req := approvalRequest(t, s)
	h.log.Sync()
	// A crash: the log as it is now, without what a shutdown would add.
	tail, _, err := history.ReadTail(filepath.Join(dir, "chat_history.ndjson"), 100)
	if err != nil {
		t.Fatal(err)
	}
	dir2 := t.TempDir()
	h2 := startHub(t, Config{DataDir: dir2, Restore: tail, Tools: dangerTools(&runs)}, riskyAgent{})
	s2, snap := subscribe(t, h2, 0)
	_ = s2
	var kinds []string
	var res event.ApprovalResultData
	for _, f := range snap.Replay {
		kinds = append(kinds, string(f.Event.Type))
		if f.Event.Type == event.ApprovalResult {
			res = data[event.ApprovalResultData](t, f.Event)
		}
	}
	if got := strings.Join(kinds, " "); !strings.HasSuffix(got, "approval_request approval_result turn_end") {
		t.Errorf("replay after the crash: %s", got)
	}
	if res.ID != req.ID || res.Decision != event.Deny || res.By != ByRestart || runs.Load() != 0 {
		t.Errorf("result %+v, runs %d", res, runs.Load())
	}
}

// BenchmarkApprovalRoundTrip times a tool call that needs approval from
// the approval_request reaching a subscriber to the tool running, with a
// client answering at once (Decide, as the WebSocket and API doors call
// it): the hub's share of an approval.
func BenchmarkApprovalRoundTrip(b *testing.B) {
	ran := make(chan struct{}, 1)
	tools := func() []agent.Tool {
		return []agent.Tool{{Name: "files__delete", Confirm: true, Call: func(context.Context, json.RawMessage) (string, error) {
			ran <- struct{}{}
			return "done", nil
		}}}
	}
	dir := b.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 64, Fsync: history.FsyncNever})
	if err != nil {
		b.Fatal(err)
	}
	defer lg.Close()
	m := New(Config{DataDir: dir, Tools: tools}, lg, riskyAgent{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	sub, _, err := m.Subscribe(ctx, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	next := func(typ event.Type) event.Event {
		for {
			<-sub.Ready()
			frames, _ := sub.Take()
			for _, f := range frames {
				if f.Event.Type == typ {
					return f.Event
				}
			}
		}
	}
	var ds []time.Duration
	round := func(i int) {
		if _, err := m.Submit(ctx, Input{Channel: event.ChannelWeb, Content: "go", ClientMsgID: "b" + strconv.Itoa(i)}); err != nil {
			b.Fatal(err)
		}
		var req event.ApprovalRequestData
		next(event.ApprovalRequest).Decode(&req)
		t0 := time.Now()
		if _, err := m.Decide(ctx, req.ID, event.Approve, Actor{Door: "web"}); err != nil {
			b.Fatal(err)
		}
		<-ran
		ds = append(ds, time.Since(t0))
		next(event.TurnEnd)
	}
	i := 0
	for b.Loop() {
		round(i)
		i++
	}
	for range 300 {
		round(i)
		i++
	}
	slices.Sort(ds)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(ds[len(ds)/2]), "p50-µs")
	b.ReportMetric(us(ds[len(ds)*99/100]), "p99-µs")
}
