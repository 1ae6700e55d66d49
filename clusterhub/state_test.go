package clusterhub

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/cluster"
)

// TestTakeOverAndFence on one embedded NATS node: the first holder finds
// the bucket empty and puts its own copy; the next holder restores that
// copy; after the next holder wrote, the first one's write is refused and
// it is told it was fenced.
func TestTakeOverAndFence(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := cluster.Start(ctx, cluster.Config{Node: "solo",
		Embedded: cluster.Embedded{StoreDir: t.TempDir()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	quiet := slog.New(slog.DiscardHandler)
	fenced := false
	first := &Replica{Node: n, Key: KeySchedules, Fenced: func() { fenced = true }}
	if err := first.Put([]byte("early")); err == nil {
		t.Fatal("a Put before taking over was accepted")
	}
	restored := map[string]string{}
	held := func(r *Replica, name, local string) Held {
		return Held{Replica: r,
			Local:   func() ([]byte, error) { return []byte(local), nil },
			Restore: func(b []byte) error { restored[name] = string(b); return nil }}
	}
	if err := TakeOver(ctx, quiet, held(first, "first", "mine")); err != nil {
		t.Fatal(err)
	}
	if len(restored) != 0 {
		t.Fatalf("restored %v from an empty bucket", restored)
	}
	next := &Replica{Node: n, Key: KeySchedules}
	if err := TakeOver(ctx, quiet, held(next, "next", "stale local copy")); err != nil {
		t.Fatal(err)
	}
	if restored["next"] != "mine" {
		t.Fatalf("the next holder restored %q, want the first one's copy", restored["next"])
	}
	if err := next.Put([]byte("next's")); err != nil {
		t.Fatal(err)
	}
	if err := first.Put([]byte("late write")); !errors.Is(err, cluster.ErrFenced) || !fenced {
		t.Fatalf("the old holder's write: %v (fenced told: %v), want ErrFenced", err, fenced)
	}
	if b, _, err := n.GetState(ctx, KeySchedules); err != nil || string(b) != "next's" {
		t.Fatalf("bucket holds %q, %v", b, err)
	}
}
