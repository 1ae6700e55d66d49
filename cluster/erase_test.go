package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// msg is a user message at seq.
func msg(seq int64, text string) event.Event {
	e := event.New(event.User, "t1", time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC),
		event.UserData{Channel: "web", Content: text})
	e.Seq = seq
	return e
}

// An erased message leaves the stream: Forget records the erasure and
// deletes the message (its bytes gone from the store), the last seq and
// fencing stay, a copy made afterwards holds the tombstone at that seq,
// and a hole with no record stops the copy.
func TestForgetErasedMessage(t *testing.T) {
	n := startSingle(t)
	ctx := context.Background()
	const word = "zanzibarquokka41"
	evs := []event.Event{msg(1, "hello"), msg(2, "the code is "+word), msg(3, "bye")}
	for _, e := range evs {
		if err := n.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	d := event.ErasedOf(evs[1], "web")
	erased := event.New(event.Erased, "", time.Date(2026, 11, 26, 22, 1, 0, 0, time.UTC), d)
	erased.Seq = 4
	if err := n.Append(ctx, erased); err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent
		if err := n.Forget(ctx, d); err != nil {
			t.Fatalf("Forget: %v", err)
		}
	}
	if got := grepDir(t, n.cfg.Embedded.StoreDir, word); len(got) > 0 {
		t.Errorf("the store still holds %q in %v", word, got)
	}
	if last, err := n.LastSeq(ctx); err != nil || last != 4 {
		t.Errorf("LastSeq after the delete: got %d, %v; want 4", last, err)
	}
	if err := n.Append(ctx, msg(4, "stale")); !errors.Is(err, ErrFenced) {
		t.Errorf("append seq 4 after the delete: got %v, want ErrFenced", err)
	}
	if err := n.Append(ctx, msg(5, "next")); err != nil {
		t.Errorf("append seq 5 after the delete: %v", err)
	}
	got, err := n.Interior(ctx, 2)
	if err != nil {
		t.Fatalf("Event(2): %v", err)
	}
	want := event.Tombstone(d)
	if a, b := mustJSON(t, got), mustJSON(t, want); !bytes.Equal(a, b) {
		t.Errorf("Event(2): got %s, want %s", a, b)
	}

	// A node that copies the log now.
	copied := materialize(t, n, 5)
	if len(copied) != 5 {
		t.Fatalf("copied %d events, want 5", len(copied))
	}
	if a, b := mustJSON(t, copied[1]), mustJSON(t, want); !bytes.Equal(a, b) {
		t.Errorf("the copy's seq 2: got %s, want %s", a, b)
	}

	// A hole nobody recorded: the copy stops with ErrHole.
	if err := n.stream.DeleteMsg(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Interior(ctx, 3); !errors.Is(err, ErrHole) {
		t.Errorf("Interior(3), deleted with no record: got %v, want ErrHole", err)
	}
	l := openLog(t)
	mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := Materialize(mctx, n, l, 0); !errors.Is(err, ErrHole) {
		t.Errorf("Materialize over an unrecorded hole: got %v, want ErrHole", err)
	}
}

func mustJSON(t *testing.T, e event.Event) []byte {
	t.Helper()
	e.V = event.LogVersion
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openLog(t *testing.T) *history.Log {
	t.Helper()
	l, err := history.Open(history.Options{Path: filepath.Join(t.TempDir(), "chat_history.ndjson"), RotateMB: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// materialize copies n's log into a new local log until it holds want
// events, and returns them.
func materialize(t *testing.T, n *Node, want int) []event.Event {
	t.Helper()
	l := openLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Materialize(ctx, n, l, 0) }()
	var got []event.Event
	waitFor(t, 10*time.Second, "the copy", func() bool {
		got, _, _ = history.ReadTail(l.Path(), 100)
		return len(got) >= want
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	return got
}

// grepDir returns the files under dir whose bytes hold word.
func grepDir(t *testing.T, dir, word string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(word)) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}
