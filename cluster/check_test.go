package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// Check's embedded shape and ports: each bad config is refused with an
// error naming the key; a good one lists its routes.
func TestCheckEmbedded(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	answering := taken.Addr().String()
	ports := freePorts(t, 3)
	free := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	cfg := func(listen, clusterListen string, replicas int, routes ...string) Config {
		return Config{Node: "n1", Replicas: replicas, Embedded: Embedded{Listen: listen, ClusterListen: clusterListen,
			Routes: routes, StoreDir: t.TempDir(), Secret: testSecret}}
	}
	bad := []struct {
		name string
		cfg  Config
		want string
	}{
		{"listen taken", cfg(answering, free(1), 3, "nats://127.0.0.1:1", "nats://127.0.0.1:2"), "cluster.nats.embedded.listen " + answering + " cannot be listened on"},
		{"cluster_listen taken", cfg(free(0), answering, 3, "nats://127.0.0.1:1", "nats://127.0.0.1:2"), "already running"},
		{"single node listen taken", cfg(answering, "", 3), "address already in use"},
		{"replicas over nodes", cfg(free(0), free(1), 3, "nats://127.0.0.1:1"), "cluster.replicas is 3 but the cluster has 2 nodes"},
		{"route to itself", cfg(free(0), free(1), 3, "nats://"+free(1), "nats://127.0.0.1:2"), "this node's own cluster_listen"},
		{"route twice", cfg(free(0), free(1), 3, "nats://127.0.0.1:2", "nats://127.0.0.1:2"), "listed twice"},
		{"loopback to another machine", cfg(free(0), free(1), 3, "nats://10.0.0.2:6222", "nats://10.0.0.3:6222"), "cannot dial it"},
		{"route not nats", cfg(free(0), free(1), 3, "http://127.0.0.1:2", "nats://127.0.0.1:3"), "not nats://host:port"},
	}
	for _, c := range bad {
		_, err := Check(context.Background(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
	lines, err := Check(context.Background(), cfg(free(0), free(1), 3, "nats://"+answering, "nats://"+free(2)))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{"one of 3 embedded NATS nodes", free(0) + ": free", free(1) + ": free",
		"route nats://" + answering + ": answering, but not as a NATS route port", "route nats://" + free(2) + ": not answering"} {
		if !strings.Contains(got, want) {
			t.Errorf("check said:\n%s\nwant a line with %q", got, want)
		}
	}
}

// Check tries this node's secret on each route that answers: the right
// one is taken, another is refused (an error that names the key), and a
// node on its own is told so.
func TestCheckSecret(t *testing.T) {
	cfgs := clusterConfigs(t, 3, time.Second)
	nodes := startNodes(t, cfgs)
	ports := freePorts(t, 1)
	cfg := Config{Node: "n4", Replicas: 3, Embedded: Embedded{ClusterListen: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		StoreDir: t.TempDir(), Secret: testSecret}}
	for _, c := range cfgs {
		cfg.Embedded.Routes = append(cfg.Embedded.Routes, "nats://"+c.Embedded.ClusterListen)
	}
	routes := nodes[0].srv.NumRoutes()
	lines, err := Check(context.Background(), cfg)
	if err != nil {
		t.Fatalf("the right secret: %v\n%s", err, strings.Join(lines, "\n"))
	}
	if got := strings.Count(strings.Join(lines, "\n"), "takes this node's secret"); got != 3 {
		t.Errorf("the right secret: %d routes took it, want 3:\n%s", got, strings.Join(lines, "\n"))
	}
	cfg.Embedded.Secret = "not-the-secret-0123456789"
	lines, err = Check(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "the routes refused this node's secret") || !strings.Contains(err.Error(), "secret_env") {
		t.Errorf("another secret: got %v\n%s", err, strings.Join(lines, "\n"))
	}
	if got := nodes[0].srv.NumRoutes(); got != routes {
		t.Errorf("after the checks n1 has %d routes, want %d as before", got, routes)
	}
	cfg.Embedded.Routes = nil
	lines, err = Check(context.Background(), cfg)
	if err != nil || !strings.Contains(strings.Join(lines, "\n"), "is on its own") {
		t.Errorf("no routes: %q, %v", lines, err)
	}
}

// Check of an existing NATS cluster: it connects and finds JetStream and
// the servers; more replicas than servers, or nothing at the address, is
// an error.
func TestCheckURL(t *testing.T) {
	nodes := startCluster(t, 3, time.Second)
	url := nodes[0].srv.ClientURL()
	cfg := Config{Node: "x", Replicas: 3, URL: url, Token: testSecret}
	var lines []string
	var err error
	waitFor(t, 10*time.Second, "the client to learn the other servers", func() bool {
		lines, err = Check(context.Background(), cfg)
		return err == nil && strings.Contains(strings.Join(lines, "\n"), "3 servers known")
	})
	if !strings.Contains(lines[0], "JetStream ok") {
		t.Errorf("check said %q", lines)
	}
	cfg.Replicas = 5
	if _, err := Check(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "cluster.replicas is 5") {
		t.Errorf("replicas 5 on 3 servers: got %v", err)
	}
	cfg.Token = "not the secret"
	if _, err := Check(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "cannot connect") {
		t.Errorf("a wrong token: got %v", err)
	}
	single := startSingle(t)
	lines, err = Check(context.Background(), Config{Node: "x", URL: single.srv.ClientURL(), Token: testSecret})
	if err != nil || !strings.Contains(strings.Join(lines, "\n"), "a single NATS server") {
		t.Errorf("single server: %q, %v", lines, err)
	}
	ports := freePorts(t, 1)
	_, err = Check(context.Background(), Config{Node: "x", URL: fmt.Sprintf("nats://127.0.0.1:%d", ports[0])})
	if err == nil || !strings.Contains(err.Error(), "cannot connect") {
		t.Errorf("nothing at the url: got %v", err)
	}
}
