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
