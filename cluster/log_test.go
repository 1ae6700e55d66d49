package cluster

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// On a single NATS node the log is R1, appends number events by the
// stream, a stale seq is fenced, and Follow and Materialize keep the seqs.
func TestSingleNodeLog(t *testing.T) {
	n := startSingle(t)
	if got := n.Replicas(); got != 1 {
		t.Errorf("replicas on a single NATS node: got %d, want 1", got)
	}
	ctx := context.Background()
	for seq := int64(1); seq <= 5; seq++ {
		if err := n.Append(ctx, ev(seq, "e")); err != nil {
			t.Fatalf("append %d: %v", seq, err)
		}
	}
	if last, err := n.LastSeq(ctx); err != nil || last != 5 {
		t.Fatalf("LastSeq: got %d, %v; want 5", last, err)
	}
	for _, seq := range []int64{3, 5, 7} {
		if err := n.Append(ctx, ev(seq, "stale")); !errors.Is(err, ErrFenced) {
			t.Errorf("append seq %d after 5: got %v, want ErrFenced", seq, err)
		}
	}
	// The same event again (a retry) is stored once and succeeds.
	if err := n.Append(ctx, ev(5, "e")); err != nil {
		t.Errorf("the same event 5 again: got %v, want nil", err)
	}
	if last, _ := n.LastSeq(ctx); last != 5 {
		t.Errorf("LastSeq after a repeated append: got %d, want 5", last)
	}
	if err := n.Append(ctx, ev(0, "no seq")); err == nil || errors.Is(err, ErrFenced) {
		t.Errorf("append seq 0: got %v, want a plain error", err)
	}

	// Materialise from seq 2 into a local log that already holds 1 and 2.
	path := filepath.Join(t.TempDir(), "chat_history.ndjson")
	l, err := history.Open(history.Options{Path: path, RotateMB: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, seq := range []int64{1, 2} {
		if err := l.Append(ev(seq, "local")); err != nil {
			t.Fatal(err)
		}
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Materialize(mctx, n, l, 2) }()
	if err := n.Append(ctx, ev(6, "live")); err != nil {
		t.Fatal(err)
	}
	var got []event.Event
	waitFor(t, 5*time.Second, "materialised seq 6", func() bool {
		got, _, err = history.ReadTail(path, 100)
		return err == nil && len(got) == 6
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	for i, e := range got {
		if e.Seq != int64(i+1) {
			t.Errorf("local line %d: seq %d, want %d", i, e.Seq, i+1)
		}
	}
}

// With two of three nodes gone an append fails within about a second (not
// after a long hang) and is not taken for fenced; when the quorum is back
// appends go on from the stream's last seq.
func TestAppendWithoutQuorum(t *testing.T) {
	cfgs := clusterConfigs(t, 3, 1500*time.Millisecond)
	nodes := startNodes(t, cfgs)
	ctx := context.Background()
	n1 := nodes[0]
	if err := n1.Append(ctx, ev(1, "one")); err != nil {
		t.Fatal(err)
	}
	nodes[1].Close()
	nodes[2].Close()
	start := time.Now()
	appendErr := n1.Append(ctx, ev(2, "two"))
	took := time.Since(start)
	if appendErr == nil || errors.Is(appendErr, ErrFenced) {
		t.Fatalf("append without a quorum: got %v, want a plain or maybe-written error", appendErr)
	}
	t.Logf("append without a quorum failed after %v: %v", took, appendErr)
	if took > 2*time.Second {
		t.Errorf("append without a quorum took %v to fail, want about a second", took)
	}

	// The two come back on the same store directories.
	back := startNodes(t, cfgs[1:])
	var last int64
	var err error
	waitFor(t, 20*time.Second, "the log to answer again", func() bool {
		last, err = back[0].LastSeq(ctx)
		return err == nil
	})
	switch {
	case last == 2 && !errors.Is(appendErr, history.ErrMaybeWritten):
		t.Fatalf("seq 2 is in the log, but its append said %v (not maybe written)", appendErr)
	case last != 1 && last != 2:
		t.Fatalf("last seq after the quorum came back: got %d, want 1 (or 2 if maybe written)", last)
	}
	waitFor(t, 10*time.Second, "an append with the quorum back", func() bool {
		return n1.Append(ctx, ev(last+1, "after")) == nil
	})
}
