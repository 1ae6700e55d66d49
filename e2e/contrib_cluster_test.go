package e2e

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/frontdesk-hq/frontdesk/config"
)

// contrib/cluster: each node's config is valid and names itself, its
// routes are exactly the other nodes' cluster_listen ports under their
// compose names, and compose.yaml runs each node with its own config and
// volume.
func TestContribClusterFiles(t *testing.T) {
	b, err := os.ReadFile("../contrib/cluster/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Hostname string
			Command  []string
			Volumes  []string
			Ports    []string
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
		cfg, err := config.ForCommand(filepath.Join("..", "contrib", "cluster", n+".yaml"), "", t.TempDir())
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
		// No fixed host port: the engine picks a free one (README).
		if want := []string{"127.0.0.1::8080"}; !slices.Equal(s.Ports, want) {
			t.Errorf("compose.yaml: %s publishes %q, want %q", n, s.Ports, want)
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

// README's three nodes on one machine: three valid configs with their own
// data directory, web port, client port and cluster port, a secret, and
// as routes exactly the other two's cluster_listen.
func TestReadmeThreeNodesOnOneMachine(t *testing.T) {
	b, err := os.ReadFile("../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "**Three nodes on one machine**")
	if !ok {
		t.Fatal("docs/cluster.md has no three nodes on one machine")
	}
	dir := t.TempDir()
	type node struct {
		addrs  []string
		listen string
		routes []string
	}
	nodes := map[string]node{}
	seen := map[string]string{}
	for _, name := range []string{"n1", "n2", "n3"} {
		start := strings.Index(after, "```yaml\n# "+name+".yaml\n")
		if start < 0 {
			t.Fatalf("README: no %s.yaml", name)
		}
		block := after[start+len("```yaml\n"):]
		block = block[:strings.Index(block, "```")]
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(block), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.ForCommand(p, "", "")
		if err != nil {
			t.Fatalf("README %s.yaml: %v", name, err)
		}
		e := cfg.Cluster.NATS.Embedded
		if cfg.Cluster.Node != name || e.SecretEnv == "" {
			t.Errorf("README %s.yaml: node %q, secret_env %q", name, cfg.Cluster.Node, e.SecretEnv)
		}
		n := node{addrs: []string{cfg.DataDir, cfg.Server.Addr, e.Listen, e.ClusterListen}, listen: e.ClusterListen, routes: e.Routes}
		for _, a := range n.addrs {
			if other, dup := seen[a]; dup || a == "" {
				t.Errorf("README %s.yaml: %q is also %s's", name, a, other)
			}
			seen[a] = name
		}
		nodes[name] = n
	}
	for name, n := range nodes {
		var want []string
		for _, o := range []string{"n1", "n2", "n3"} {
			if o != name {
				want = append(want, "nats://"+nodes[o].listen)
			}
		}
		if !slices.Equal(n.routes, want) {
			t.Errorf("README %s.yaml: routes %q, want %q", name, n.routes, want)
		}
	}
}
