package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// TestCluster runs the checks that do not kill a node on one three-node
// embedded cluster (elections take seconds; one cluster keeps the test
// short).
func TestCluster(t *testing.T) {
	nodes := startCluster(t, 3, 1500*time.Millisecond)
	for _, n := range nodes {
		if got := n.Replicas(); got != 3 {
			t.Fatalf("%s replicas: got %d, want 3", n.Name(), got)
		}
	}
	t.Run("StaleWriterFenced", func(t *testing.T) { testStaleWriter(t, nodes) })
	t.Run("FollowerCatchUp", func(t *testing.T) { testCatchUp(t, nodes) })
	t.Run("Files", func(t *testing.T) { testFiles(t, nodes) })
	t.Run("Live", func(t *testing.T) { testLive(t, nodes) })
	t.Run("NoLeader", func(t *testing.T) { testNoLeader(t, nodes) })
	t.Run("Forwarding", func(t *testing.T) { testForwarding(t, nodes) })
}

// A node that appends with a seq another node already took is refused with
// ErrFenced, and the stream keeps the other node's event.
func testStaleWriter(t *testing.T, nodes []*Node) {
	ctx := context.Background()
	a, b := nodes[0], nodes[1]
	last, err := a.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, ev(last+1, "from a")); err != nil {
		t.Fatalf("a appends %d: %v", last+1, err)
	}
	if err := b.Append(ctx, ev(last+2, "from b")); err != nil {
		t.Fatalf("b appends %d: %v", last+2, err)
	}
	// b retrying its own event is fine (stored once).
	if err := b.Append(ctx, ev(last+2, "from b")); err != nil {
		t.Fatalf("b appends its event %d again: %v", last+2, err)
	}
	// a still thinks last+1 was the last one.
	err = a.Append(ctx, ev(last+2, "stale a"))
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("stale append: got %v, want ErrFenced", err)
	}
	var got []string
	fctx, cancel := context.WithCancel(ctx)
	err = nodes[2].Follow(fctx, last, func(e event.Event) error {
		var d event.TextData
		_ = e.Decode(&d)
		got = append(got, d.Text)
		if e.Seq == last+2 {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"from a", "from b"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stream after the stale append: got %q, want %q", got, want)
	}
}

// A follower that starts late catches up from a seq and then gets live
// appends, in order, into its own NDJSON log with the stream's seqs.
func testCatchUp(t *testing.T, nodes []*Node) {
	ctx := context.Background()
	w, f := nodes[0], nodes[2]
	base, err := w.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 200; i++ {
		if err := w.Append(ctx, ev(base+i, fmt.Sprint("e", i))); err != nil {
			t.Fatalf("append %d: %v", base+i, err)
		}
	}
	path := filepath.Join(t.TempDir(), "chat_history.ndjson")
	l, err := history.Open(history.Options{Path: path, RotateMB: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	from := base + 150
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Materialize(mctx, f, l, from) }()
	if err := w.Append(ctx, ev(base+201, "live")); err != nil {
		t.Fatal(err)
	}
	var got []event.Event
	waitFor(t, 10*time.Second, "the follower's log to reach the live append", func() bool {
		got, _, err = history.ReadTail(path, 1000)
		return err == nil && len(got) == 51
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	for i, e := range got {
		if want := from + 1 + int64(i); e.Seq != want {
			t.Fatalf("line %d: seq %d, want %d", i, e.Seq, want)
		}
	}
}

// A file put through one node is read back through another; a file whose
// content does not match its name is refused; a missing one is ErrNoFile.
func testFiles(t *testing.T, nodes []*Node) {
	ctx := context.Background()
	content := bytes.Repeat([]byte("frontdesk attachment "), 50000) // ~1 MB: several chunks
	sum := sha256.Sum256(content)
	sha := hex.EncodeToString(sum[:])
	if err := nodes[0].PutFile(ctx, sha, bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].PutFile(ctx, sha, bytes.NewReader(content)); err != nil {
		t.Fatalf("second put of the same file: %v", err)
	}
	var got bytes.Buffer
	if err := nodes[2].GetFile(ctx, sha, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), content) {
		t.Errorf("got %d bytes back, want the %d put", got.Len(), len(content))
	}
	other := strings.Repeat("0", 64)
	if err := nodes[0].PutFile(ctx, other, strings.NewReader("not that")); err == nil {
		t.Error("put under a sha256 the content does not have: no error")
	}
	if err := nodes[1].GetFile(ctx, other, &got); !errors.Is(err, ErrNoFile) {
		t.Errorf("get of a missing (or refused) file: got %v, want ErrNoFile", err)
	}
	if err := nodes[1].GetFile(ctx, "../etc", &got); err == nil || errors.Is(err, ErrNoFile) {
		t.Errorf("get with a bad name: got %v, want a plain error", err)
	}
}

// Live frames reach the other nodes in order, and not their publisher.
func testLive(t *testing.T, nodes []*Node) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	got := map[string][]string{}
	for _, n := range nodes {
		err := n.SubscribeLive(ctx, func(b []byte) {
			mu.Lock()
			got[n.Name()] = append(got[n.Name()], string(b))
			mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Routes carry interest asynchronously: wait until a probe arrives.
	waitFor(t, 5*time.Second, "interest on every node", func() bool {
		_ = nodes[0].PublishLive([]byte("probe"))
		mu.Lock()
		defer mu.Unlock()
		return len(got["n2"]) > 0 && len(got["n3"]) > 0
	})
	mu.Lock()
	clear(got)
	mu.Unlock()
	for i := range 100 {
		if err := nodes[0].PublishLive([]byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "100 frames on n2 and n3", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got["n2"]) >= 100 && len(got["n3"]) >= 100
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got["n1"]) != 0 {
		t.Errorf("the publisher got %d of its own frames", len(got["n1"]))
	}
	for _, name := range []string{"n2", "n3"} {
		frames := slicesWithout(got[name], "probe")
		for i, f := range frames {
			if f != fmt.Sprint(i) {
				t.Fatalf("%s frame %d: %q, want %q", name, i, f, fmt.Sprint(i))
			}
		}
	}
}

func slicesWithout(s []string, drop string) []string {
	var out []string
	for _, v := range s {
		if v != drop {
			out = append(out, v)
		}
	}
	return out
}

// With Serve running but nobody holding the lease, a request gets
// ErrNoLeader at once (no responders), not after its timeout.
func testNoLeader(t *testing.T, nodes []*Node) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, n := range nodes {
		go func() { _ = n.Serve(ctx, "input", echo(n)) }()
	}
	start := time.Now()
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
	defer rcancel()
	_, err := nodes[1].Request(rctx, "input", []byte("hi"))
	if !errors.Is(err, ErrNoLeader) {
		t.Fatalf("request with no holder: got %v, want ErrNoLeader", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("ErrNoLeader took %v, want it at once", d)
	}
}

func echo(n *Node) func(context.Context, []byte) ([]byte, error) {
	return func(_ context.Context, b []byte) ([]byte, error) {
		if string(b) == "fail" {
			return nil, errors.New("handler failed")
		}
		return []byte(n.Name() + ":" + string(b)), nil
	}
}

// With a secret, a client without it is refused by the embedded server,
// and a node with another secret cannot join the cluster.
func TestEmbeddedSecret(t *testing.T) {
	cfgs := clusterConfigs(t, 3, 1500*time.Millisecond)
	nodes := startNodes(t, cfgs)
	url := nodes[0].ClientURL()
	if nc, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Errorf("a client without the secret connected to %s", url)
	}
	nc, err := nats.Connect(url, nats.Token(testSecret))
	if err != nil {
		t.Fatalf("a client with the secret: %v", err)
	}
	nc.Close()

	// A fourth node with the wrong secret, routed to the three.
	bad := clusterConfigs(t, 1, time.Second)[0]
	bad.Node = "intruder"
	bad.Replicas = 3
	bad.Embedded.Secret = "not-the-secret-0123456789"
	for _, c := range cfgs {
		bad.Embedded.Routes = append(bad.Embedded.Routes, "nats://"+c.Embedded.ClusterListen)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if n, err := Start(ctx, bad, testLogger); err == nil {
		n.Close()
		t.Fatal("a node with the wrong secret joined the cluster")
	}
	if got := nodes[0].Nodes(); len(got) > 3 {
		t.Errorf("nodes after the intruder: %v", got)
	}
}
