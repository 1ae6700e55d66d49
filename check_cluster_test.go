package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// `frontdesk check-config` on a cluster node reports the NATS side: the
// embedded server's ports (a taken one is an error that says what to do),
// the routes, and a shape that cannot work (more replicas than nodes).
func TestCheckConfigCluster(t *testing.T) {
	dir := t.TempDir()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	ports := freePorts(t, 2)
	write := func(name, listen string, routes ...string) string {
		p := filepath.Join(dir, name)
		cfg := fmt.Sprintf("data_dir: %s\ncluster:\n  node: n1\n  nats:\n    embedded:\n      listen: %q\n      cluster_listen: \"127.0.0.1:%d\"\n      routes: [%s]\n",
			filepath.Join(dir, "data"), listen, ports[1], strings.Join(routes, ", "))
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	free := fmt.Sprintf("127.0.0.1:%d", ports[0])
	out, err := runCmd(t, "check-config", "-config", write("ok.yaml", free, "nats://127.0.0.1:1", "nats://"+taken.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"config ok", "one of 3 embedded NATS nodes", free + ": free", "route nats://" + taken.Addr().String() + ": answering"} {
		if !strings.Contains(out, want) {
			t.Errorf("check-config said:\n%s\nwant %q", out, want)
		}
	}
	if _, err := runCmd(t, "check-config", "-config", write("taken.yaml", taken.Addr().String(), "nats://127.0.0.1:1", "nats://127.0.0.1:2")); err == nil ||
		!strings.Contains(err.Error(), "is this node already running") {
		t.Errorf("listen port taken: got %v", err)
	}
	if _, err := runCmd(t, "check-config", "-config", write("shape.yaml", free, "nats://127.0.0.1:1")); err == nil ||
		!strings.Contains(err.Error(), "cluster.replicas is 3 but the cluster has 2 nodes") {
		t.Errorf("three replicas on two nodes: got %v", err)
	}
}

// contrib/cluster: each node's config is valid and names itself, its
// routes are exactly the other nodes' cluster_listen ports under their
// compose names, and compose.yaml runs each node with its own config and
// volume.
func TestContribClusterFiles(t *testing.T) {
	b, err := os.ReadFile("contrib/cluster/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Hostname string
			Command  []string
			Volumes  []string
		}
		Volumes map[string]any
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	names := []string{"n1", "n2", "n3"}
	ports := map[string]string{}
	routes := map[string][]string{}
	for _, n := range names {
		cfg, err := loadConfig(filepath.Join("contrib", "cluster", n+".yaml"), "", t.TempDir())
		if err != nil {
			t.Fatalf("%s.yaml: %v", n, err)
		}
		if cfg.Cluster.Node != n || cfg.Cluster.Replicas != 3 {
			t.Errorf("%s.yaml: node %q, replicas %d", n, cfg.Cluster.Node, cfg.Cluster.Replicas)
		}
		_, ports[n], _ = net.SplitHostPort(cfg.Cluster.NATS.Embedded.ClusterListen)
		routes[n] = cfg.Cluster.NATS.Embedded.Routes
		s, ok := compose.Services[n]
		if !ok || s.Hostname != n || strings.Join(s.Command, " ") != "-config /etc/frontdesk/config.yaml" {
			t.Errorf("compose.yaml: service %s: %+v", n, s)
		}
		if want := []string{"./" + n + ".yaml:/etc/frontdesk/config.yaml:ro,z", n + "-data:/data"}; strings.Join(s.Volumes, " ") != strings.Join(want, " ") {
			t.Errorf("compose.yaml: %s mounts %q, want %q", n, s.Volumes, want)
		}
		if _, ok := compose.Volumes[n+"-data"]; !ok {
			t.Errorf("compose.yaml: no volume %s-data", n)
		}
	}
	for _, n := range names {
		var want []string
		for _, o := range names {
			if o != n {
				want = append(want, "nats://"+o+":"+ports[o])
			}
		}
		if strings.Join(routes[n], " ") != strings.Join(want, " ") {
			t.Errorf("%s.yaml: routes %q, want %q", n, routes[n], want)
		}
	}
}
