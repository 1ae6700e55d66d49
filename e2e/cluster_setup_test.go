package e2e

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// listeningPorts returns the TCP ports process pid listens on, from
// /proc (the test is skipped where there is none).
func listeningPorts(t *testing.T, pid int) []int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc to list a process's ports: %v", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			p, _ := hex.DecodeString(hexPort)
			if len(p) == 2 {
				ports = append(ports, int(p[0])<<8|int(p[1]))
			}
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// portOf is the port of a URL or HOST:PORT.
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(addr, "http://"), "nats://"))
	n, perr := strconv.Atoi(p)
	if err != nil || perr != nil {
		t.Fatalf("no port in %q", addr)
	}
	return n
}

// natsGetsNowhere checks that a NATS client without credentials cannot
// connect to any port process pid listens on, and returns those ports.
func natsGetsNowhere(t *testing.T, pid int) []int {
	t.Helper()
	ports := listeningPorts(t, pid)
	for _, p := range ports {
		nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", p), nats.NoReconnect(), nats.Timeout(time.Second))
		if err == nil {
			nc.Close()
			t.Errorf("a NATS client without credentials connected to port %d", p)
		}
	}
	return ports
}

// routeConnect connects to a route port as a route of the cluster with
// secret (empty: none) and returns the server's answer to a PING: "PONG"
// or its -ERR line.
func routeConnect(t *testing.T, addr, secret string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "INFO ") {
		t.Fatalf("route port %s: %q, %v", addr, line, err)
	}
	creds := ""
	if secret != "" {
		creds = fmt.Sprintf(`"user":"frontdesk","pass":%q,`, secret)
	}
	fmt.Fprintf(c, "CONNECT {%s\"verbose\":false,\"pedantic\":false,\"name\":\"intruder\",\"cluster\":\"frontdesk\"}\r\nPING\r\n", creds)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "closed: " + err.Error()
		}
		if strings.HasPrefix(line, "PONG") || strings.HasPrefix(line, "-ERR") {
			return strings.TrimSpace(line)
		}
	}
}

// runNode runs the binary with a config that must not start: it returns
// its error output and how long it ran (at most wait).
func runNode(t *testing.T, cfg string, env []string, wait time.Duration, args ...string) (string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"-config", cfg, "-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err == nil || ctx.Err() != nil {
		t.Errorf("%s: started (or ran %v without failing): %v\n%s", filepath.Base(cfg), took, err, out)
	}
	return string(out), took
}

// checkConfigRun runs `frontdesk check-config` on cfg with env.
func checkConfigRun(t *testing.T, cfg string, env []string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "check-config", "-config", cfg)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// writeConfig writes a config file into dir and returns its path.
func writeConfig(t *testing.T, dir, name, yaml string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitOutput waits until buf holds want, for at most d.
func waitOutput(t *testing.T, buf *lockedBuffer, want string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); !strings.Contains(buf.String(), want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no %q within %v in:\n%s", want, d, buf.String())
		}
	}
}

// A cluster node never offers a NATS port without the secret: a node on
// its own opens no NATS port at all (and says it is on its own); with
// listen, its client port wants the secret; routes or listen without a
// secret_env refuse to start, naming the key.
func TestClusterNATSPortNeedsSecret(t *testing.T) {
	dir := t.TempDir()
	solo := writeConfig(t, dir, "solo.yaml", fmt.Sprintf("data_dir: %s\ncluster:\n  node: solo\n", filepath.Join(dir, "solo")))
	p := spawn(t, dir, nil, nil, "-config", solo, "-addr", "127.0.0.1:0")
	p.await(t, 60*time.Second)
	if got, want := natsGetsNowhere(t, p.cmd.Process.Pid), []int{portOf(t, p.url)}; !slices.Equal(got, want) {
		t.Errorf("a node on its own listens on %v, want only its web port %v", got, want)
	}
	waitOutput(t, p.stdout, "cluster node solo is on its own", 5*time.Second)
	out, err := checkConfigRun(t, solo, nil)
	if err != nil || !strings.Contains(out, "is on its own") || !strings.HasSuffix(out, "config ok\n") {
		t.Errorf("check-config of a node on its own: %v\n%s", err, out)
	}

	withListen := writeConfig(t, dir, "listen.yaml", fmt.Sprintf("data_dir: %s\ncluster:\n  node: cli\n  nats:\n    embedded:\n      listen: \"127.0.0.1:0\"\n      secret_env: %s\n",
		filepath.Join(dir, "cli"), testNATSSecretEnv))
	q := spawn(t, dir, testNATSEnv, nil, "-config", withListen, "-addr", "127.0.0.1:0")
	q.await(t, 60*time.Second)
	ports := natsGetsNowhere(t, q.cmd.Process.Pid)
	ports = slices.DeleteFunc(ports, func(p int) bool { return p == portOf(t, q.url) })
	if len(ports) != 1 {
		t.Fatalf("a node with listen listens on %v besides its web port, want its client port", ports)
	}
	secret := strings.TrimPrefix(testNATSEnv[0], testNATSSecretEnv+"=")
	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", ports[0]), nats.Token(secret), nats.NoReconnect())
	if err != nil {
		t.Fatalf("the nats CLI's way in, with the secret: %v", err)
	}
	nc.Close()

	for name, embedded := range map[string]string{
		"routes": "      routes: [nats://127.0.0.1:1, nats://127.0.0.1:2]\n",
		"listen": "      listen: \"127.0.0.1:0\"\n",
	} {
		cfg := writeConfig(t, dir, name+".yaml", fmt.Sprintf("data_dir: %s\ncluster:\n  node: a\n  nats:\n    embedded:\n%s", filepath.Join(dir, name), embedded))
		out, took := runNode(t, cfg, nil, 30*time.Second)
		if !strings.Contains(out, "cluster.nats.embedded.secret_env") || took > 10*time.Second {
			t.Errorf("%s without a secret: ran %v, said:\n%s", name, took, out)
		}
	}
}

// fourthNode writes the config of a node that routes to the nodes of c
// (but the one whose cluster port it takes): its name, its cluster port
// and its own data directory.
func (c *testCluster) fourthNode(t *testing.T, file, name string, clusterPort int) string {
	t.Helper()
	var routes []string
	for _, n := range c.nodes {
		if portOf(t, n.clusterAddr) != clusterPort {
			routes = append(routes, "nats://"+n.clusterAddr)
		}
	}
	dir := t.TempDir()
	return writeConfig(t, dir, file, fmt.Sprintf("data_dir: %s\ncluster:\n  node: %s\n  nats:\n    embedded:\n%s",
		filepath.Join(dir, "data"), name, testNATSConfig(clusterPort, routes)))
}

// stillServing checks that an input through each node is answered.
func (c *testCluster) stillServing(t *testing.T, id string) {
	t.Helper()
	c.holder()
	for i := range c.nodes {
		code, body, err := c.postInput(i, "still serving "+id, fmt.Sprint(id, "-", i), true)
		if err != nil || code != http.StatusOK || !strings.Contains(string(body), `"completed"`) {
			t.Fatalf("%s: an input through %s: %d %s %v", id, c.nodes[i].name, code, body, err)
		}
	}
}

// The setup mistakes of issue 26, on three running nodes, each refused
// within seconds with a sentence that says what is wrong, while the three
// keep serving: no unauthenticated NATS port on any node; a fourth node
// with a name already taken; one with another secret (the nodes log the
// refusal once, and check-config says the routes refused it); one whose
// NATS port is in use (check-config knows it too).
func TestClusterSetupMistakes(t *testing.T) {
	c := newTestCluster(t, clusterOpts{})
	c.holder()
	secret := strings.TrimPrefix(testNATSEnv[0], testNATSSecretEnv+"=")
	for _, n := range c.nodes {
		// Besides its web and cluster ports, a node with routes has the
		// loopback client port nats-server needs to route: nobody gets
		// in there, not even with the secret.
		ports := natsGetsNowhere(t, n.p.cmd.Process.Pid)
		for _, p := range ports {
			if p == portOf(t, n.p.url) || p == portOf(t, n.clusterAddr) {
				continue
			}
			if nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", p), nats.Token(secret), nats.NoReconnect(), nats.Timeout(time.Second)); err == nil {
				nc.Close()
				t.Errorf("%s: a NATS client with the cluster's secret connected to port %d", n.name, p)
			}
		}
		if len(ports) > 3 {
			t.Errorf("%s listens on %v, want its web, cluster and hidden client port", n.name, ports)
		}
		if got := routeConnect(t, n.clusterAddr, ""); !strings.Contains(got, "Authorization Violation") {
			t.Errorf("%s: a route without the secret got %q", n.name, got)
		}
	}
	free := freePorts(t, 2)

	dup := c.fourthNode(t, "dup.yaml", "n2", free[0])
	out, took := runNode(t, dup, testNATSEnv, 60*time.Second)
	if !strings.Contains(out, `cluster.node "n2" is taken`) || took > 10*time.Second {
		t.Errorf("a second n2: ran %v, said:\n%s", took, out)
	}
	t.Logf("a second n2 refused after %v", took)
	c.stillServing(t, "after-dup")
	if got := strings.Count(c.nodes[1].p.stderr.String(), "tried to join with this node's name"); got != 1 {
		t.Errorf("n2 logged the second n2 %d times, want once:\n%s", got, c.nodes[1].p.stderr)
	}

	wrongEnv := []string{testNATSSecretEnv + "=another-secret-0123456789"}
	wrong := c.fourthNode(t, "wrong.yaml", "n4", free[1])
	out, took = runNode(t, wrong, wrongEnv, 60*time.Second)
	if !strings.Contains(out, "the routes refused this node's secret") || took > 10*time.Second {
		t.Errorf("another secret: ran %v, said:\n%s", took, out)
	}
	t.Logf("another secret refused after %v", took)
	out, err := checkConfigRun(t, wrong, wrongEnv)
	if err == nil || !strings.Contains(out, "the routes refused this node's secret") || strings.Contains(out, "config ok") {
		t.Errorf("check-config with another secret: %v\n%s", err, out)
	}
	out, err = checkConfigRun(t, wrong, testNATSEnv)
	if err != nil || strings.Count(out, "takes this node's secret") != 3 || !strings.HasSuffix(out, "config ok\n") {
		t.Errorf("check-config with the secret: %v\n%s", err, out)
	}
	for _, n := range c.nodes {
		const refused = "refused a node that tried to join with another secret"
		waitOutput(t, n.p.stderr, refused, 5*time.Second)
		if got := strings.Count(n.p.stderr.String(), refused); got != 1 {
			t.Errorf("%s logged the refused secret %d times, want once", n.name, got)
		}
	}

	// n1's config started again beside it (its own data directory).
	again := c.fourthNode(t, "again.yaml", "n1", portOf(t, c.nodes[0].clusterAddr))
	out, took = runNode(t, again, testNATSEnv, 60*time.Second)
	if !strings.Contains(out, "cluster_listen "+c.nodes[0].clusterAddr+": address already in use — is this node already running?") || took > 5*time.Second {
		t.Errorf("a NATS port in use: ran %v, said:\n%s", took, out)
	}
	out, err = checkConfigRun(t, again, testNATSEnv)
	if err == nil || !strings.Contains(out, "address already in use — is this node already running") || strings.Contains(out, "config ok") {
		t.Errorf("check-config with the port in use: %v\n%s", err, out)
	}
	c.stillServing(t, "at-end")
}
