package cluster

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// TestStateBucket: a value put on one node is read on the others with its
// revision; a put at a stale revision (a writer that read before another
// wrote) is refused with ErrFenced and leaves the value as it was; a value
// outlives the node that wrote it.
func TestStateBucket(t *testing.T) {
	nodes, ctx := stateCluster(t)
	if v, rev, err := nodes[1].GetState(ctx, "schedules"); err != nil || v != nil || rev != 0 {
		t.Fatalf("missing key: %q rev %d err %v, want nothing", v, rev, err)
	}
	rev1, err := nodes[0].PutState(ctx, "schedules", []byte("one"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[1].PutState(ctx, "schedules", []byte("again"), 0); !errors.Is(err, ErrFenced) {
		t.Fatalf("create of an existing key: %v, want ErrFenced", err)
	}
	v, rev, err := nodes[2].GetState(ctx, "schedules")
	if err != nil || string(v) != "one" || rev != rev1 {
		t.Fatalf("read on another node: %q rev %d err %v, want one rev %d", v, rev, err, rev1)
	}
	rev2, err := nodes[2].PutState(ctx, "schedules", []byte("two"), rev)
	if err != nil {
		t.Fatal(err)
	}
	// nodes[0] still thinks the revision is rev1: it is fenced.
	if _, err := nodes[0].PutState(ctx, "schedules", []byte("stale"), rev1); !errors.Is(err, ErrFenced) {
		t.Fatalf("put at a stale revision: %v, want ErrFenced", err)
	}
	big := bytes.Repeat([]byte("x"), 1<<20)
	if _, err := nodes[2].PutState(ctx, "email", big, 0); err != nil {
		t.Fatalf("a 1 MiB value: %v", err)
	}
	nodes[2].Close()
	waitFor(t, 15*time.Second, "the value from a survivor", func() bool {
		v, rev, err := nodes[0].GetState(ctx, "schedules")
		return err == nil && string(v) == "two" && rev == rev2
	})
	if v, _, err := nodes[1].GetState(ctx, "email"); err != nil || !bytes.Equal(v, big) {
		t.Fatalf("the 1 MiB value from a survivor: %d bytes, err %v", len(v), err)
	}
}

// stateCluster starts three nodes and waits until the state bucket, just
// created, answers reads; ctx ends with the test.
func stateCluster(t *testing.T) ([]*Node, context.Context) {
	nodes := startCluster(t, 3, 1500*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	waitFor(t, 10*time.Second, "a read of the new bucket", func() bool {
		_, _, err := nodes[1].GetState(ctx, "schedules")
		return err == nil
	})
	return nodes, ctx
}

// TestStateSingle: on one NATS node (R1) the bucket works the same.
func TestStateSingle(t *testing.T) {
	n := startSingle(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rev, err := n.PutState(ctx, "k", []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if v, r, err := n.GetState(ctx, "k"); err != nil || string(v) != "v" || r != rev {
		t.Fatalf("got %q rev %d err %v", v, r, err)
	}
}

// TestStateWatch: a watch of a key hears each put of it, whichever node
// made it, and nothing of other keys; it ends with its context.
func TestStateWatch(t *testing.T) {
	nodes, ctx := stateCluster(t)
	heard := make(chan struct{}, 16)
	wctx, stop := context.WithCancel(ctx)
	ended := make(chan error, 1)
	go func() { ended <- nodes[2].WatchState(wctx, "schedules", func() { heard <- struct{}{} }) }()
	// The watch hears puts made after it is up: put until it hears one.
	var rev uint64
	waitFor(t, 10*time.Second, "the watch to hear a put", func() bool {
		var err error
		if rev, err = nodes[0].PutState(ctx, "schedules", []byte("one"), rev); err != nil {
			t.Fatal(err)
		}
		select {
		case <-heard:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})
	// A put before the one heard may be heard late: let it come, then forget it.
	time.Sleep(300 * time.Millisecond)
	for len(heard) > 0 {
		<-heard
	}
	if _, err := nodes[1].PutState(ctx, "email", []byte("other key"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[1].PutState(ctx, "schedules", []byte("two"), rev); err != nil {
		t.Fatal(err)
	}
	select {
	case <-heard:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not hear a put made on another node")
	}
	select {
	case <-heard:
		t.Fatal("the watch heard a put of another key")
	case <-time.After(300 * time.Millisecond):
	}
	stop()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("the watch ended with %v, want nil at its context's end", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not end with its context")
	}
}

// TestStateLeaderRead: GetState's first way, the stream leader's message
// API, tells a key never put from one put, with the put's revision.
func TestStateLeaderRead(t *testing.T) {
	n := startSingle(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, r, err := n.leaderGet(ctx, "k"); err != nil || v != nil || r != 0 {
		t.Fatalf("missing: %q %d %v", v, r, err)
	}
	rev, err := n.PutState(ctx, "k", []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if v, r, err := n.leaderGet(ctx, "k"); err != nil || string(v) != "v" || r != rev {
		t.Fatalf("got %q %d %v want rev %d", v, r, err, rev)
	}
}
