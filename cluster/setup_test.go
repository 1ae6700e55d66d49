package cluster

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// startErr starts cfg alone and returns Start's error and how long it took.
func startErr(t *testing.T, cfg Config, wait time.Duration) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	n, err := Start(ctx, cfg, testLogger)
	if err == nil {
		n.Close()
	}
	return time.Since(start), err
}

// A fourth node named like one of the three is refused within seconds,
// saying the name is taken.
func TestDuplicateNameRefused(t *testing.T) {
	cfgs := clusterConfigs(t, 3, 1500*time.Millisecond)
	startNodes(t, cfgs)
	dup := clusterConfigs(t, 1, 1500*time.Millisecond)[0]
	dup.Node, dup.Replicas, dup.Embedded.Routes = "n2", 3, nil
	for _, c := range cfgs {
		dup.Embedded.Routes = append(dup.Embedded.Routes, "nats://"+c.Embedded.ClusterListen)
	}
	took, err := startErr(t, dup, 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), `cluster.node "n2" is taken`) {
		t.Fatalf("a second n2: got %v after %v, want the name taken", err, took)
	}
	if took > 5*time.Second {
		t.Errorf("the second n2 was refused after %v, want within 5 s", took)
	}
	t.Logf("refused after %v: %v", took, err)
}

// A node with another secret is told within seconds that the routes
// refused it.
func TestWrongSecretSaysSo(t *testing.T) {
	cfgs := clusterConfigs(t, 3, 1500*time.Millisecond)
	startNodes(t, cfgs)
	bad := clusterConfigs(t, 1, 1500*time.Millisecond)[0]
	bad.Node, bad.Replicas, bad.Embedded.Routes = "n4", 3, nil
	bad.Embedded.Secret = "not-the-secret-0123456789"
	for _, c := range cfgs {
		bad.Embedded.Routes = append(bad.Embedded.Routes, "nats://"+c.Embedded.ClusterListen)
	}
	took, err := startErr(t, bad, 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), "the routes refused this node's secret") {
		t.Fatalf("another secret: got %v after %v", err, took)
	}
	if took > 5*time.Second {
		t.Errorf("refused after %v, want within 5 s", took)
	}
	t.Logf("refused after %v: %v", took, err)
}

// A port in use fails Start at once, saying so.
func TestPortTakenSaysSo(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := clusterConfigs(t, 3, time.Second)[0]
	cfg.Embedded.ClusterListen = taken.Addr().String()
	took, err := startErr(t, cfg, 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), "cluster_listen "+taken.Addr().String()+": address already in use — is this node already running?") {
		t.Fatalf("cluster_listen taken: got %v", err)
	}
	if took > 2*time.Second {
		t.Errorf("took %v, want at once", took)
	}
	cfg = clusterConfigs(t, 3, time.Second)[0]
	cfg.Embedded.Listen = taken.Addr().String()
	if _, err := startErr(t, cfg, 20*time.Second); err == nil || !strings.Contains(err.Error(), "listen "+taken.Addr().String()+": address already in use") {
		t.Fatalf("listen taken: got %v", err)
	}
}

// Without listen a node has no client port; with it, the port refuses a
// client without the secret; with routes or listen and no secret, Start
// refuses, naming the key.
func TestNoOpenClientPort(t *testing.T) {
	cfg := clusterConfigs(t, 1, time.Second)[0]
	cfg.Replicas, cfg.Embedded.Routes, cfg.Embedded.Listen = 1, nil, ""
	n := startNodes(t, []Config{cfg})[0]
	if u := n.ClientURL(); u != "" {
		t.Errorf("client URL without listen: %q", u)
	}
	if cl := n.srv.ClientURL(); cl != "" {
		if nc, err := nats.Connect(cl, nats.MaxReconnects(0), nats.Timeout(time.Second)); err == nil {
			nc.Close()
			t.Errorf("a client connected to %s with listen unset", cl)
		}
	}
	// With routes and no listen, the client port nats-server needs to
	// start routing takes nobody, not even with the secret.
	cfgs := clusterConfigs(t, 3, time.Second)
	for i := range cfgs {
		cfgs[i].Embedded.Listen = ""
	}
	for _, n := range startNodes(t, cfgs) {
		if u := n.ClientURL(); u != "" {
			t.Errorf("%s: client URL without listen: %q", n.Name(), u)
		}
		for _, opt := range []nats.Option{nats.Name("no credentials"), nats.Token(testSecret)} {
			if nc, err := nats.Connect(n.srv.ClientURL(), opt, nats.NoReconnect(), nats.Timeout(time.Second)); err == nil {
				nc.Close()
				t.Errorf("%s: a client connected to %s", n.Name(), n.srv.ClientURL())
			}
		}
	}
	for _, c := range []struct {
		name string
		edit func(*Config)
	}{
		{"routes", func(c *Config) { c.Embedded.Listen = "" }},
		{"listen", func(c *Config) { c.Embedded.Routes = nil; c.Replicas = 1 }},
	} {
		cfg := clusterConfigs(t, 3, time.Second)[0]
		cfg.Embedded.Secret = ""
		c.edit(&cfg)
		if _, err := startErr(t, cfg, 5*time.Second); err == nil || !strings.Contains(err.Error(), "cluster.nats.embedded.secret_env") {
			t.Errorf("%s without a secret: got %v", c.name, err)
		}
	}
}
