package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// testCluster is three frontdesk processes, each with its embedded NATS
// node on loopback, as in README's "Run on several machines".
type testCluster struct {
	t       testing.TB
	token   string     // sent with session's requests when the nodes need one
	env     []string   // every node's environment: testNATSEnv and clusterOpts.env
	nodesMu sync.Mutex // guards nodes[i].p for tests that kill while others send
	nodes   []*clusterProc
}

// clusterProc is one node: its config and, while it runs, its process.
type clusterProc struct {
	name, dir, cfg string
	data           string // its data directory (dir/data)
	clusterAddr    string // its cluster_listen, which the others' routes dial
	addr           string // its HTTP address (-addr): 127.0.0.1:0, or fixed with a public URL
	p              *proc  // nil while down
}

// The test clusters' secret (cluster.nats.embedded.secret_env names
// testNATSSecretEnv; a cluster's routes need one): every node gets
// testNATSEnv.
const testNATSSecretEnv = "FRONTDESK_TEST_NATS_SECRET"

var testNATSEnv = []string{testNATSSecretEnv + "=test-nats-secret-0123456789"}

// freePorts finds n free loopback ports (closed again: a node binds them).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// testNATSConfig is the cluster.nats.embedded block of a test node: its
// route address, the routes and the secret; no client port (the default).
func testNATSConfig(clusterPort int, routes []string) string {
	return fmt.Sprintf("      cluster_listen: \"127.0.0.1:%d\"\n      routes: [%s]\n      secret_env: %s\n",
		clusterPort, strings.Join(routes, ", "), testNATSSecretEnv)
}

// clusterOpts shapes a test cluster's nodes.
type clusterOpts struct {
	extra  string   // YAML appended to each node's config; one with "agent:" replaces the default demo agent
	env    []string // environment added to testNATSEnv for each node
	public bool     // each node's HTTP port fixed and named in its cluster.public_url (http://127.0.0.1:PORT)
	agent  string   // the agent block when extra has none; "" is a demo agent with 2 ms a word
}

// newTestCluster writes three nodes' configs and starts them together:
// each waits for the others before it listens. Node i lives in its own
// directory (nodes[i].dir, its config there, its data directory under it).
func newTestCluster(t testing.TB, o clusterOpts) *testCluster {
	t.Helper()
	for try := 1; ; try++ {
		c := &testCluster{t: t, env: append(slices.Clone(testNATSEnv), o.env...)}
		c.configure(o)
		for _, n := range c.nodes {
			n.p = spawn(t, n.dir, c.env, nil, "-config", n.cfg, "-addr", n.addr)
		}
		var errs []string
		taken := false
		for _, n := range c.nodes {
			if err := n.p.awaitErr(60 * time.Second); err != nil {
				errs = append(errs, n.name+": "+err.Error())
				taken = taken || strings.Contains(err.Error(), "address already in use")
			}
		}
		if len(errs) == 0 {
			return c
		}
		// Another test package may take a port between freePorts and
		// the node's bind: start the three again on other ports.
		for _, n := range c.nodes {
			n.p.cmd.Process.Kill()
			err := <-n.p.exited
			n.p.exited <- err
		}
		if !taken || try == 3 {
			t.Fatalf("the cluster did not start:\n%s", strings.Join(errs, "\n"))
		}
		t.Logf("try %d: a port was taken; again on other ports:\n%s", try, strings.Join(errs, "\n"))
	}
}

// configure writes the three nodes' configs in a new directory, on free
// ports.
func (c *testCluster) configure(o clusterOpts) {
	t := c.t
	root := t.TempDir()
	ports := freePorts(t, 6) // cluster_listen, then HTTP when public
	for i := range 3 {
		var routes []string
		for j := range 3 {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[j]))
			}
		}
		name := fmt.Sprint("n", i+1)
		n := &clusterProc{name: name, dir: filepath.Join(root, name),
			clusterAddr: fmt.Sprintf("127.0.0.1:%d", ports[i]), addr: "127.0.0.1:0"}
		n.data = filepath.Join(n.dir, "data")
		n.cfg = filepath.Join(n.dir, "config.yaml")
		publicURL := ""
		if o.public {
			n.addr = fmt.Sprintf("127.0.0.1:%d", ports[3+i])
			publicURL = fmt.Sprintf("  public_url: \"http://%s\"\n", n.addr)
		}
		agent := o.agent
		if agent == "" {
			agent = "agent: {demo: {delay_ms: 2}}\n"
		}
		if strings.Contains(o.extra, "agent:") {
			agent = "" // the caller's
		}
		conf := fmt.Sprintf(`data_dir: %s
%smcp: {serve: true, serve_send: true}
cluster:
  node: %s
%s  nats:
    embedded:
%s%s`, n.data, agent, n.name, publicURL, testNATSConfig(ports[i], routes), o.extra)
		if err := os.MkdirAll(n.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(n.cfg, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
	}
}

// start starts node i again (it joins the running cluster).
func (c *testCluster) start(i int) {
	c.t.Helper()
	n := c.nodes[i]
	n.p = spawn(c.t, n.dir, c.env, nil, "-config", n.cfg, "-addr", n.addr)
	n.p.await(c.t, 60*time.Second)
}

// kill sends node i SIGKILL and waits for it to be gone.
func (c *testCluster) kill(i int) {
	c.t.Helper()
	n := c.nodes[i]
	n.p.cmd.Process.Signal(syscall.SIGKILL)
	err := <-n.p.exited
	n.p.exited <- err
	n.p = nil
}

// clusterSession is the part of /api/session these tests read.
type clusterSession struct {
	LastSeq     int64  `json:"last_seq"`
	Subscribers int    `json:"subscribers"`
	Busy        bool   `json:"busy"`
	Turn        string `json:"turn"`
	Session     string `json:"session_id"`
	Cluster     *struct {
		Node, Leader, Role string
		Nodes              []struct {
			Name, URL string
			Alive     bool
		}
	} `json:"cluster"`
}

func (c *testCluster) session(i int) (clusterSession, error) {
	var s clusterSession
	cl := http.Client{Timeout: 2 * time.Second}
	req, err := http.NewRequest("GET", c.nodes[i].p.url+"/api/session", nil)
	if err != nil {
		return s, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// holder waits until every running node names the same lease holder, and
// returns its index.
func (c *testCluster) holder() int {
	c.t.Helper()
	return c.holderWithin(30 * time.Second)
}

// holderWithin is holder with its own deadline (a failover may take an
// election of the log's Raft groups).
func (c *testCluster) holderWithin(wait time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		leader, agree := "", true
		for i, n := range c.nodes {
			if n.p == nil {
				continue
			}
			s, err := c.session(i)
			if err != nil || s.Cluster == nil || s.Cluster.Leader == "" || (leader != "" && s.Cluster.Leader != leader) {
				agree = false
				break
			}
			leader = s.Cluster.Leader
		}
		for i, n := range c.nodes {
			if agree && n.name == leader && n.p != nil {
				// The holder says leader once its hub has taken over.
				if s, err := c.session(i); err == nil && s.Cluster != nil && s.Cluster.Role == "leader" {
					return i
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("the nodes did not agree on a lease holder within %v", wait)
	return -1
}

// caughtUp waits until every running node's chat log holds seq last.
func (c *testCluster) caughtUp(last int64) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range c.nodes {
		if n.p == nil {
			continue
		}
		for {
			evs := readChatLog(c.t, n.data)
			if len(evs) > 0 && evs[len(evs)-1].Seq >= last {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("%s's chat log did not reach seq %d within 30 s", n.name, last)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// idle waits until the holder runs no turn and returns its session.
func (c *testCluster) idle() clusterSession {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := c.session(c.holder())
		if err == nil && !s.Busy {
			return s
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the holder still runs a turn after 30 s: %+v %v", s, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settled waits until node i, restarted, has caught up with the holder,
// and then a second more: the holder hands the Raft leaderships of the log
// and the lease away from itself only to peers that are current (it checks
// every 500 ms), so that its own death costs one lease expiry, not an
// election of those groups (4-9 s, JetStream's floor).
func (c *testCluster) settled(i int) {
	c.t.Helper()
	h := c.holder()
	hs, err := c.session(h)
	if err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := c.session(i)
		if err == nil && s.LastSeq >= hs.LastSeq {
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s did not catch up with seq %d within 30 s", c.nodes[i].name, hs.LastSeq)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
}

// readChatLog reads a node's chat log, every part.
func readChatLog(t testing.TB, dir string) []event.Event {
	t.Helper()
	evs, _, _, err := history.NewReader(filepath.Join(dir, "chat_history.ndjson")).Range(context.Background(), history.Bound{}, history.Bound{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}
