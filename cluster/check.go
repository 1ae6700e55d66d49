package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// checkWait bounds each network probe of Check.
const checkWait = 5 * time.Second

// Check tells, without joining, whether this node could join the cluster
// as cfg says (`frontdesk check-config`): for an embedded server, the
// cluster's shape (replicas no more than the nodes, routes not to itself
// nor twice, a cluster address the other machines can dial), that its
// ports are free, and that the routes that answer take its secret; for an
// existing NATS cluster (URL), that it connects with the credentials and
// has JetStream, and has servers enough for the replicas. It returns what
// it found, one line each, and an error naming the first problem.
func Check(ctx context.Context, cfg Config) ([]string, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.URL != "" {
		return checkURL(ctx, cfg)
	}
	return checkEmbedded(ctx, cfg)
}

func checkEmbedded(ctx context.Context, cfg Config) ([]string, error) {
	e := cfg.Embedded
	var lines []string
	if err := checkShape(cfg); err != nil {
		return nil, err
	}
	if len(e.Routes) == 0 {
		lines = append(lines, "cluster: node "+cfg.Node+" is on its own: no routes, so it is a one-node desk of its own (replicas 1, every write synced) that other nodes do not reach; to join a cluster, list the other nodes' cluster_listen in cluster.nats.embedded.routes")
	} else {
		lines = append(lines, fmt.Sprintf("cluster: node %s, one of %d embedded NATS nodes, replicas %d (a majority of %d must be up)",
			cfg.Node, len(e.Routes)+1, cfg.Replicas, cfg.Replicas/2+1))
	}
	var ports [][2]string
	if e.Listen == "" {
		lines = append(lines, "cluster.nats.embedded.listen: none (no NATS client port; this node connects in-process)")
	} else {
		ports = append(ports, [2]string{"cluster.nats.embedded.listen", e.Listen})
	}
	if len(e.Routes) > 0 {
		ports = append(ports, [2]string{"cluster.nats.embedded.cluster_listen", e.ClusterListen})
	}
	for _, p := range ports {
		if err := portFree(p[1]); err != nil {
			return lines, fmt.Errorf("%s %s cannot be listened on: %w — is this node already running (stop it first), or another NATS server or program there? Pick another port if so", p[0], p[1], err)
		}
		lines = append(lines, fmt.Sprintf("%s %s: free", p[0], p[1]))
	}
	var refused []string
	for _, r := range e.Routes {
		line, err := checkRoute(ctx, r, e.Secret)
		lines = append(lines, line)
		if err != nil {
			refused = append(refused, r)
		}
	}
	if len(refused) > 0 {
		return lines, fmt.Errorf("the routes refused this node's secret (%s): cluster.nats.embedded.secret_env must hold the same secret on every node", strings.Join(refused, ", "))
	}
	return lines, nil
}

// errRefused: a route refused the secret.
var errRefused = errors.New("refused")

// checkRoute dials route r as a route of this cluster with the secret and
// tells what answered: nothing (the node is down: fine), a NATS route port
// that takes the secret, one that refuses it (errRefused), or something
// else. It sends a route CONNECT and a PING, and closes before it sends
// an INFO, so the node never counts it as a route; a node that refuses
// logs the refusal as it would a node's.
func checkRoute(ctx context.Context, r, secret string) (string, error) {
	u, _ := url.Parse(r)
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return fmt.Sprintf("route %s: not answering (that node is down or not started yet; the cluster forms once a majority is up)", r), nil
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "INFO ") {
		return fmt.Sprintf("route %s: answering, but not as a NATS route port (is it another node's cluster_listen?)", r), nil
	}
	connect, _ := json.Marshal(map[string]any{"verbose": false, "pedantic": false, "user": routeUser, "pass": secret,
		"tls_required": false, "name": "frontdesk-check-config", "cluster": ClusterName})
	if _, err := fmt.Fprintf(c, "CONNECT %s\r\nPING\r\n", connect); err != nil {
		return fmt.Sprintf("route %s: answering, then closed: %v", r, err), nil
	}
	for {
		line, err := br.ReadString('\n')
		switch {
		case err != nil:
			return fmt.Sprintf("route %s: answering, then closed without a word (%v)", r, err), nil
		case strings.HasPrefix(line, "PONG"):
			return fmt.Sprintf("route %s: answering, takes this node's secret", r), nil
		case strings.Contains(line, "Authorization Violation"):
			return fmt.Sprintf("route %s: answering, REFUSED this node's secret", r), errRefused
		case strings.HasPrefix(line, "-ERR"):
			return fmt.Sprintf("route %s: answering, but said %s", r, strings.TrimSpace(line)), nil
		}
	}
}

// checkShape checks the embedded cluster's shape.
func checkShape(cfg Config) error {
	e := cfg.Embedded
	if len(e.Routes) == 0 {
		return nil
	}
	if nodes := len(e.Routes) + 1; cfg.Replicas > nodes {
		return fmt.Errorf("cluster.replicas is %d but the cluster has %d nodes (this one and %d routes): use at most %d, or add the other nodes' routes",
			cfg.Replicas, nodes, len(e.Routes), nodes)
	}
	selfHost, selfPort, _ := net.SplitHostPort(e.ClusterListen)
	loopback := isLoopback(selfHost)
	seen := map[string]bool{}
	for _, r := range e.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "nats" || u.Port() == "" {
			return fmt.Errorf("cluster.nats.embedded.routes: %q is not nats://host:port (another node's cluster_listen)", r)
		}
		if seen[u.Host] {
			return fmt.Errorf("cluster.nats.embedded.routes: %s is listed twice", r)
		}
		seen[u.Host] = true
		if u.Host == e.ClusterListen || (u.Port() == selfPort && isLoopback(u.Hostname()) && loopback) {
			return fmt.Errorf("cluster.nats.embedded.routes: %s is this node's own cluster_listen: list the other nodes only", r)
		}
		if loopback && !isLoopback(u.Hostname()) {
			return fmt.Errorf("cluster.nats.embedded.cluster_listen %s is a loopback address but route %s is on another machine, which cannot dial it: listen on this machine's private address", e.ClusterListen, r)
		}
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// portFree reports whether addr can be listened on now (port 0 always can).
func portFree(addr string) error {
	if _, port, _ := net.SplitHostPort(addr); port == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			return op.Err
		}
		return err
	}
	return ln.Close()
}

// checkURL connects to an existing NATS cluster.
func checkURL(ctx context.Context, cfg Config) ([]string, error) {
	opts := []nats.Option{nats.Name("frontdesk check-config " + cfg.Node), nats.Timeout(checkWait)}
	if cfg.Token != "" {
		opts = append(opts, nats.Token(cfg.Token))
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster.nats.url %s: cannot connect: %w", cfg.URL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster.nats.url %s: %w", cfg.URL, err)
	}
	actx, cancel := context.WithTimeout(ctx, checkWait)
	defer cancel()
	if _, err := js.AccountInfo(actx); err != nil {
		return nil, fmt.Errorf("cluster.nats.url %s: connected, but JetStream does not answer for this account (enable it on the servers, with a store): %w", cfg.URL, err)
	}
	servers := nc.Servers()
	lines := []string{fmt.Sprintf("cluster: node %s connected to %s, JetStream ok", cfg.Node, nc.ConnectedUrlRedacted())}
	name := nc.ConnectedClusterName()
	if name == "" {
		return append(lines, "cluster: a single NATS server (no cluster): replicas 1 is used, whatever cluster.replicas says"), nil
	}
	lines = append(lines, fmt.Sprintf("cluster: NATS cluster %q, %d servers known (%s), replicas %d", name, len(servers), strings.Join(servers, ", "), cfg.Replicas))
	if cfg.Replicas > len(servers) {
		return lines, fmt.Errorf("cluster.replicas is %d but the NATS cluster %q shows %d servers: use at most %d", cfg.Replicas, name, len(servers), len(servers))
	}
	return lines, nil
}
