package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// freePorts returns n ports free on 127.0.0.1 a moment ago (the route
// addresses must be known before the servers start).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// clusterConfigs returns the configs of a size-node embedded cluster on
// loopback, each with its own store directory under t's temp dir.
func clusterConfigs(t testing.TB, size int, ttl time.Duration) []Config {
	t.Helper()
	ports := freePorts(t, size)
	cfgs := make([]Config, size)
	for i := range cfgs {
		var routes []string
		for j, p := range ports {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
			}
		}
		cfgs[i] = Config{
			Node:     fmt.Sprintf("n%d", i+1),
			Replicas: size,
			LeaseTTL: ttl,
			Embedded: Embedded{
				Listen:        "127.0.0.1:0",
				ClusterListen: fmt.Sprintf("127.0.0.1:%d", ports[i]),
				Routes:        routes,
				StoreDir:      t.TempDir(),
				Secret:        testSecret,
			},
		}
	}
	return cfgs
}

// testSecret authenticates the test clusters' routes and clients.
const testSecret = "test-secret-0123456789"

// startNodes starts every config at once (binding needs a quorum) and
// closes the nodes when the test ends.
func startNodes(t testing.TB, cfgs []Config) []*Node {
	t.Helper()
	nodes, err := tryNodes(t, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// tryNodes is startNodes that returns the first error (every node started
// is closed when the test ends).
func tryNodes(t testing.TB, cfgs []Config) ([]*Node, error) {
	nodes := make([]*Node, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, c := range cfgs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			nodes[i], errs[i] = Start(ctx, c, testLogger)
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, n := range nodes {
			if n != nil {
				n.Close()
			}
		}
	})
	var all []string
	for i, err := range errs {
		if err != nil {
			all = append(all, fmt.Sprintf("start %s: %v", cfgs[i].Node, err))
		}
	}
	if len(all) > 0 {
		for _, n := range nodes {
			if n != nil {
				n.Close()
			}
		}
		return nil, errors.New(strings.Join(all, "; "))
	}
	return nodes, nil
}

// startCluster starts a size-node embedded cluster. Its route ports are
// picked free and then bound by the nodes: another test package running
// at the same time may take one in between, and then the cluster is
// started again on other ports (the other nodes of that try fail only for
// want of a quorum).
func startCluster(t testing.TB, size int, ttl time.Duration) []*Node {
	t.Helper()
	for try := 1; ; try++ {
		nodes, err := tryNodes(t, clusterConfigs(t, size, ttl))
		if err == nil {
			return nodes
		}
		if try == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("try %d: %v; again on other ports", try, err)
	}
}

// startSingle starts one embedded NATS node without routes (R1).
func startSingle(t testing.TB) *Node {
	t.Helper()
	return startNodes(t, []Config{{Node: "solo", Embedded: Embedded{Listen: "127.0.0.1:0", StoreDir: t.TempDir(), Secret: testSecret}}})[0]
}

func ev(seq int64, text string) event.Event {
	e := event.New(event.Notice, "", time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC), event.TextData{Text: text})
	e.Seq = seq
	return e
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testLogger shows the nodes' lease and hand-off logs when
// FRONTDESK_CLUSTER_LOG=1; otherwise it discards them.
var testLogger = func() *slog.Logger {
	if os.Getenv("FRONTDESK_CLUSTER_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}()
