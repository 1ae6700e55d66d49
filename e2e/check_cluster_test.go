package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		cfg := fmt.Sprintf("data_dir: %s\ncluster:\n  node: n1\n  nats:\n    embedded:\n      listen: %q\n      cluster_listen: \"127.0.0.1:%d\"\n      routes: [%s]\n      secret_env: %s\n",
			filepath.Join(dir, "data"), listen, ports[1], strings.Join(routes, ", "), testNATSSecretEnv)
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	free := fmt.Sprintf("127.0.0.1:%d", ports[0])
	out, err := checkConfigRun(t, write("ok.yaml", free, "nats://127.0.0.1:1", "nats://"+taken.Addr().String()), testNATSEnv)
	if err != nil {
		t.Fatal(err, out)
	}
	for _, want := range []string{"config ok", "one of 3 embedded NATS nodes", free + ": free", "route nats://" + taken.Addr().String() + ": answering"} {
		if !strings.Contains(out, want) {
			t.Errorf("check-config said:\n%s\nwant %q", out, want)
		}
	}
	if out, err := checkConfigRun(t, write("taken.yaml", taken.Addr().String(), "nats://127.0.0.1:1", "nats://127.0.0.1:2"), testNATSEnv); err == nil ||
		!strings.Contains(out, "is this node already running") {
		t.Errorf("listen port taken: got %v\n%s", err, out)
	}
	if out, err := checkConfigRun(t, write("shape.yaml", free, "nats://127.0.0.1:1"), testNATSEnv); err == nil ||
		!strings.Contains(out, "cluster.replicas is 3 but the cluster has 2 nodes") {
		t.Errorf("three replicas on two nodes: got %v\n%s", err, out)
	}
}
