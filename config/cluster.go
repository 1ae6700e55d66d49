package config

import (
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Cluster configures running on several machines over NATS JetStream
// (package cluster). Node empty (the default) is one node with today's
// files, and no NATS code runs.
type Cluster struct {
	// Node is this node's unique name (letters, digits, - and _, at most
	// 64). Empty (default): single-node mode.
	Node string `yaml:"node"`
	// Replicas is the number of copies of the log stream, the lease bucket
	// and the object store (1 to 5; on a single NATS node 1 is used
	// whatever this says). Default 3.
	Replicas int `yaml:"replicas"`
	// LeaseTTLMS is how long the turn runner's lease lasts unrenewed, in
	// milliseconds (300 to 60000); it is renewed every third of it. Default
	// 1500: a dead holder is replaced within about 1.5 s.
	LeaseTTLMS int `yaml:"lease_ttl_ms"`
	// PublicURL is the address people open this node's web page at
	// (http://host:port or https://host, no query or fragment). The other
	// nodes learn it and list it in /api/session's cluster.nodes, and a
	// page opened here moves to a live node's URL when this one stops
	// answering. Empty (default): unknown, and the page stays put (a
	// reverse proxy in front of the nodes does the moving then).
	PublicURL string `yaml:"public_url"`
	// NATS says where JetStream runs.
	NATS ClusterNATS `yaml:"nats"`
}

// ClusterNATS is either an existing NATS cluster (URL) or an embedded
// server per node.
type ClusterNATS struct {
	// URL of an existing NATS cluster (nats://a:4222,nats://b:4222). Empty
	// (default): run the embedded server below.
	URL string `yaml:"url"`
	// TokenEnv names the environment variable holding the token for URL.
	// Empty (default): no token.
	TokenEnv string `yaml:"token_env"`
	// CredsEnv names the environment variable holding the path of a .creds
	// file for URL. Empty (default): none.
	CredsEnv string `yaml:"creds_env"`
	// Embedded configures the JetStream server inside this process.
	Embedded ClusterEmbedded `yaml:"embedded"`
}

// ClusterEmbedded configures the embedded JetStream server.
type ClusterEmbedded struct {
	// Listen is its client address, for the nats CLI; it needs SecretEnv.
	// Empty (default): no client port anyone can use (the node's own
	// connection is in-process; see cluster.Embedded.Listen).
	Listen string `yaml:"listen"`
	// ClusterListen is the address the other nodes' routes dial. Default
	// 127.0.0.1:6222 (set a private address for several machines).
	ClusterListen string `yaml:"cluster_listen"`
	// Routes are the other nodes' cluster_listen as nats://host:port.
	// Empty (default): one NATS node (replicas 1, every write synced).
	Routes []string `yaml:"routes"`
	// StoreDir is JetStream's directory. Empty (default): <data_dir>/nats.
	StoreDir string `yaml:"store_dir"`
	// SecretEnv names the environment variable holding the secret every
	// node's routes and clients must present (the same on all nodes, at
	// least 16 characters). Required with routes or listen. Empty
	// (default): none, allowed only for a node on its own (no routes) with
	// no client port (no listen), which opens no NATS port.
	SecretEnv string `yaml:"secret_env"`
}

func clusterDefaults() Cluster {
	return Cluster{Replicas: 3, LeaseTTLMS: 1500, NATS: ClusterNATS{Embedded: ClusterEmbedded{
		ClusterListen: "127.0.0.1:6222", Routes: []string{}}}}
}

// Enabled reports whether this node runs in cluster mode.
func (c Cluster) Enabled() bool { return c.Node != "" }

var nodeName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// resolve fills the store directory from dataDir.
func (c *Cluster) resolve(dataDir string) {
	if c.NATS.Embedded.StoreDir == "" {
		c.NATS.Embedded.StoreDir = filepath.Join(dataDir, "nats")
	}
}

// validateCluster checks the cluster block; the shape is checked even when
// Node is empty, so a typo shows before the cluster is switched on.
func (c *Config) validateCluster(bad badFunc) {
	k := c.Cluster
	if k.Node != "" && !nodeName.MatchString(k.Node) {
		bad("cluster.node", "%q: use 1 to 64 letters, digits, - or _ (it names this node to the others)", k.Node)
	}
	if k.Replicas < 1 || k.Replicas > 5 {
		bad("cluster.replicas", "%d: use 1 to 5 (default 3; an odd number survives the loss of a minority)", k.Replicas)
	}
	if k.LeaseTTLMS < 300 || k.LeaseTTLMS > 60000 {
		bad("cluster.lease_ttl_ms", "%d: use 300 to 60000 milliseconds (default 1500)", k.LeaseTTLMS)
	}
	if k.PublicURL != "" {
		if msg := publicURLProblem(k.PublicURL); msg != "" {
			bad("cluster.public_url", "%q %s", k.PublicURL, msg)
		}
	}
	n := k.NATS
	if n.URL != "" {
		for i, u := range strings.Split(n.URL, ",") {
			p, err := url.Parse(strings.TrimSpace(u))
			if err != nil || p.Host == "" || !slices.Contains([]string{"nats", "tls", "ws", "wss"}, p.Scheme) {
				bad("cluster.nats.url", "part %d %q is not nats://host:port (tls://, ws://, wss:// work too)", i+1, u)
			}
		}
		if len(n.Embedded.Routes) > 0 {
			bad("cluster.nats.embedded.routes", "must be empty when cluster.nats.url is set (an existing cluster is used, no embedded server runs)")
		}
	}
	if n.Embedded.Listen != "" {
		hostPort(bad, "cluster.nats.embedded.listen", n.Embedded.Listen)
	}
	hostPort(bad, "cluster.nats.embedded.cluster_listen", n.Embedded.ClusterListen)
	if k.Node != "" && n.URL == "" && n.Embedded.SecretEnv == "" {
		// No unauthenticated NATS port, loopback or not: on a shared host
		// any local process could otherwise read and write the log.
		if len(n.Embedded.Routes) > 0 {
			bad("cluster.nats.embedded.secret_env", "is empty but routes are set: a cluster's routes need a secret, the same on every node (make one with: openssl rand -hex 16, put it in a variable, and name the variable here)")
		} else if n.Embedded.Listen != "" {
			bad("cluster.nats.embedded.secret_env", "is empty but listen %q opens a NATS client port, which needs a secret (or leave listen empty: the node needs no client port)", n.Embedded.Listen)
		}
	}
	for i, r := range n.Embedded.Routes {
		p, err := url.Parse(r)
		if err != nil || p.Scheme != "nats" || p.Port() == "" {
			bad("cluster.nats.embedded.routes["+strconv.Itoa(i)+"]", "%q is not nats://host:port (another node's cluster_listen)", r)
		}
	}
}

// publicURLProblem says what is wrong with a public URL ("" if nothing):
// a browser is sent there, so only an absolute http(s) address will do.
func publicURLProblem(u string) string {
	p, err := url.Parse(u)
	switch {
	case err != nil || !p.IsAbs() || p.Host == "":
		return "is not an absolute URL (for example http://10.0.0.2:8080 or https://b.example.com)"
	case p.Scheme != "http" && p.Scheme != "https":
		return "must start with http:// or https:// (where a browser opens this node's page)"
	case p.User != nil:
		return "must not carry a user name or password"
	case p.RawQuery != "" || p.Fragment != "" || strings.HasSuffix(u, "#") || strings.HasSuffix(u, "?"):
		return "must not have a query or a fragment (the page adds its own)"
	}
	return ""
}

func hostPort(bad badFunc, key, addr string) {
	_, port, err := net.SplitHostPort(addr)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
		bad(key, "%q is not HOST:PORT (for example 127.0.0.1:4222)", addr)
	}
}
