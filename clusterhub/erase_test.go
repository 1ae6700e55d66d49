package clusterhub

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// fakeApplier records the erasures a Runner hands it.
type fakeApplier struct {
	mu  sync.Mutex
	got []event.ErasedData
}

func (a *fakeApplier) Apply(_ context.Context, d event.ErasedData) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, d)
	return nil
}

func (a *fakeApplier) applied() []event.ErasedData {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]event.ErasedData(nil), a.got...)
}

// runNode runs a hub and its Runner on n with a chat log of its own that
// holds pre already, and returns the chat log's path.
func runNode(t *testing.T, n *cluster.Node, a *fakeApplier, pre ...event.Event) string {
	t.Helper()
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	path := filepath.Join(dir, "chat_history.ndjson")
	chat, err := history.Open(history.Options{Path: path, RotateMB: 5, Fsync: history.FsyncNever})
	if err != nil {
		t.Fatal(err)
	}
	after := int64(0)
	for _, e := range pre {
		if err := chat.Append(e); err != nil {
			t.Fatal(err)
		}
		after = e.Seq
	}
	h := hub.New(hub.Config{DataDir: dir, Logger: quiet, Cluster: Link{Node: n}, MaxMessageBytes: 1024},
		Log{Node: n}, &agent.Demo{})
	ctx, stop := context.WithCancel(context.Background())
	hubDone, runDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(hubDone); _ = h.Run(ctx) }()
	r := New(Options{Node: n, Hub: h, ChatLog: chat, After: after, Logger: quiet, Erased: a.Apply,
		Tail: func() ([]event.Event, error) { tail, _, err := history.ReadTail(path, 5000); return tail, err }})
	go func() { defer close(runDone); _ = r.Run(ctx) }()
	t.Cleanup(func() { stop(); <-runDone; <-hubDone; chat.Close() })
	return path
}

// Every node that copies an erased event has the stream forget the
// message and calls Options.Erased with it; a node that copies the log
// after the stream forgot it holds the tombstone at that seq, not a hole.
func TestCopyLogErased(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	n, err := cluster.Start(ctx, cluster.Config{Node: "solo", LeaseTTL: 600 * time.Millisecond,
		Embedded: cluster.Embedded{StoreDir: t.TempDir()}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	ts := time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)
	user := event.New(event.User, "t1", ts, event.UserData{Channel: "web", Content: "my code is 8842"})
	user.Seq = 1
	d := event.ErasedOf(user, "web")
	erased := event.New(event.Erased, "", ts, d)
	erased.Seq = 2
	for _, e := range []event.Event{user, erased} {
		if err := n.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}

	first := &fakeApplier{}
	runNode(t, n, first)
	waitUntil(t, ctx, "the first node applied the erasure", func() bool { return len(first.applied()) == 1 })
	if got := first.applied()[0]; got != d {
		t.Errorf("Erased got %+v, want %+v", got, d)
	}
	waitUntil(t, ctx, "the stream forgot seq 1", func() bool {
		e, err := n.Interior(ctx, 1)
		return err == nil && event.IsTombstone(e)
	})

	// Another node copies the log from the start: the hole at 1 is the
	// tombstone, and it applies the erasure too.
	second := &fakeApplier{}
	path := runNode(t, n, second)
	waitUntil(t, ctx, "the second node applied the erasure", func() bool { return len(second.applied()) == 1 })
	evs, _, err := history.ReadTail(path, 10)
	if err != nil || len(evs) < 2 {
		t.Fatalf("the second copy: %v %v", evs, err)
	}
	want := event.Tombstone(d)
	if got := evs[0]; got.Seq != 1 || string(got.Data) != string(want.Data) || got.Type != want.Type || got.Turn != want.Turn {
		t.Errorf("the second copy's seq 1: %+v, want %+v", got, want)
	}

	// A node stopped after it copied the erased event and before its
	// files were rid of the text applies it again as it starts.
	third := &fakeApplier{}
	runNode(t, n, third, user, erased)
	waitUntil(t, ctx, "the restarted node applied the erasure again", func() bool { return len(third.applied()) == 1 })
}

func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
