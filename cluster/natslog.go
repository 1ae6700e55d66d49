package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// trouble is one kind of setup mistake the embedded server reports in
// its log: a port already taken, a secret refused, a name taken.
type trouble int

const (
	portTaken     trouble = iota + 1 // a listener could not bind
	secretRefused                    // a route this node dialled refused its secret
	secretWrong                      // a node dialled this one with another secret
	clientRefused                    // a client without the secret was refused
	nameTaken                        // a route came from a server with this server's name
	serverFailed                     // any other fatal error of the server
)

// problem is what natsLog saw: its kind and the server's own words.
type problem struct {
	kind trouble
	text string
}

// logRepeat is how long natsLog stays quiet about a problem it has just
// logged: a node that keeps dialling with the wrong secret is logged once,
// then once a minute with a count, not at every attempt.
const logRepeat = time.Minute

// natsLog is the embedded server's logger (server.Logger). The server logs
// from its own goroutines; natsLog picks out the few messages frontdesk
// acts on and drops the rest. While the node starts, a problem of its
// own (a port, its name, its secret refused) is sent on seen for Start to
// fail with a plain sentence; any other problem, and every problem once
// it runs (started), is logged, at most once per logRepeat per kind.
type natsLog struct {
	log  *slog.Logger
	seen chan problem  // buffered; a full channel drops (Start needs only the first)
	poke chan struct{} // cap 1: something was sent on seen

	mu      sync.Mutex
	started bool
	last    map[trouble]time.Time
	again   map[trouble]int
}

func newNATSLog(l *slog.Logger) *natsLog {
	return &natsLog{log: l, seen: make(chan problem, 16), poke: make(chan struct{}, 1),
		last: map[trouble]time.Time{}, again: map[trouble]int{}}
}

// running switches from reporting to Start to logging.
func (w *natsLog) running() {
	w.mu.Lock()
	w.started = true
	w.mu.Unlock()
}

// classify tells a message of the server's frontdesk acts on.
func classify(fatal bool, msg string) trouble {
	switch {
	case fatal && strings.Contains(msg, "Error listening on") && strings.Contains(msg, "address already in use"):
		return portTaken
	case fatal:
		return serverFailed
	case strings.Contains(msg, "Route Error") && strings.Contains(msg, "Authorization Violation"):
		return secretRefused
	case strings.Contains(msg, "authentication error") && strings.Contains(msg, " - rid:"):
		return secretWrong
	case strings.Contains(msg, "authentication error") && strings.Contains(msg, " - cid:"):
		return clientRefused
	case strings.Contains(msg, "Remote server has a duplicate name"):
		return nameTaken
	}
	return 0
}

func (w *natsLog) report(fatal bool, format string, args []any) {
	msg := fmt.Sprintf(format, args...)
	kind := classify(fatal, msg)
	if kind == 0 {
		return
	}
	w.mu.Lock()
	// What another node did wrong (another secret, a client without one)
	// does not stop this node's start: it is logged, as once running.
	toStart := !w.started && kind != secretWrong && kind != clientRefused
	now := time.Now()
	quiet := now.Sub(w.last[kind]) < logRepeat
	again := w.again[kind]
	if !toStart && quiet {
		w.again[kind]++
	} else if !toStart {
		w.last[kind], w.again[kind] = now, 0
	}
	w.mu.Unlock()
	if toStart {
		select {
		case w.seen <- problem{kind, msg}:
		default:
		}
		select {
		case w.poke <- struct{}{}:
		default:
		}
		return
	}
	if !quiet {
		w.log.Error(runningText(kind), "nats", msg, "times_since_last_logged", again)
	}
}

// runningText says what a problem means to a node that is serving.
func runningText(k trouble) string {
	switch k {
	case secretRefused:
		return "cluster: a node this one dials refused its secret: cluster.nats.embedded.secret_env must hold the same secret on every node"
	case secretWrong:
		return "cluster: refused a node that tried to join with another secret (cluster.nats.embedded.secret_env differs on that node)"
	case clientRefused:
		return "cluster: refused a NATS client without the secret (the nats CLI needs it as its token)"
	case nameTaken:
		return "cluster: refused a node that tried to join with this node's name: each node needs its own cluster.node"
	}
	return "cluster: embedded NATS"
}

func (w *natsLog) Noticef(string, ...any)         {}
func (w *natsLog) Warnf(string, ...any)           {}
func (w *natsLog) Debugf(string, ...any)          {}
func (w *natsLog) Tracef(string, ...any)          {}
func (w *natsLog) Errorf(format string, v ...any) { w.report(false, format, v) }

// Fatalf must not exit: the server runs inside frontdesk, which fails
// Start (or logs) instead.
func (w *natsLog) Fatalf(format string, v ...any) { w.report(true, format, v) }

// refusedWait is how long Start waits, after a route refused this node's
// secret, for any route to come up before it gives up: a node whose
// secret one misconfigured peer refuses still joins the others.
const refusedWait = time.Second

// startTrouble returns the error that ends Start, if the embedded server
// reported one: a port taken, this node's name taken, or its secret
// refused by the routes (and no route up a second later). It is called
// by Start's goroutine only.
func (n *Node) startTrouble() error {
	if n.watch == nil {
		return nil
	}
	for {
		select {
		case p := <-n.watch.seen:
			switch p.kind {
			case portTaken:
				key, addr := "cluster.nats.embedded.listen", n.cfg.Embedded.Listen
				if strings.Contains(p.text, "router port") {
					key, addr = "cluster.nats.embedded.cluster_listen", n.cfg.Embedded.ClusterListen
				}
				return fmt.Errorf("cluster: %s %s: address already in use — is this node already running? (or another program uses that port: pick another)", key, addr)
			case serverFailed:
				return fmt.Errorf("cluster: embedded NATS: %s", p.text)
			case nameTaken:
				return fmt.Errorf("cluster: cluster.node %q is taken: another node of this cluster already runs with that name; give each node its own name", n.cfg.Node)
			case secretRefused:
				if n.refusedAt.IsZero() {
					n.refusedAt = time.Now()
				}
			}
		default:
			if !n.refusedAt.IsZero() && time.Since(n.refusedAt) >= refusedWait && n.srv.NumRoutes() == 0 {
				return errors.New("cluster: the routes refused this node's secret: cluster.nats.embedded.secret_env must hold the same secret on every node")
			}
			return nil
		}
	}
}

// settleWait bounds settle.
const settleWait = 3 * time.Second

// settle waits, once bound, until this node has a route to every other
// node whose route port answers, for at most settleWait, and fails Start
// if the server reports trouble meanwhile. Binding can succeed within
// milliseconds through one node while another is still refusing this one
// (its name taken): the refusal must end Start, not reach a node already
// serving. A node whose routes all come up waits no longer than that.
func (n *Node) settle(ctx context.Context) error {
	if n.srv == nil || len(n.cfg.Embedded.Routes) == 0 {
		return nil
	}
	answering := 0
	for _, r := range n.cfg.Embedded.Routes {
		if u, err := url.Parse(r); err == nil {
			if c, err := net.DialTimeout("tcp", u.Host, 300*time.Millisecond); err == nil {
				_ = c.Close()
				answering++
			}
		}
	}
	for end := time.Now().Add(settleWait); ; {
		if err := n.startTrouble(); err != nil {
			return err
		}
		if n.routedNodes() >= answering || time.Now().After(end) || ctx.Err() != nil {
			return nil
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// routedNodes is the number of other servers this one has a route to.
func (n *Node) routedNodes() int {
	rz, err := n.srv.Routez(nil)
	if err != nil {
		return 0
	}
	names := map[string]bool{}
	for _, r := range rz.Routes {
		names[r.RemoteName] = true
	}
	return len(names)
}

// attemptCtx bounds one JetStream request of Start's bind: apiTimeout, cut
// short when the server reports trouble (so Start says so at once rather
// than after the request), and when the routes refused this node's secret,
// at the end of refusedWait.
func (n *Node) attemptCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	d := apiTimeout
	if !n.refusedAt.IsZero() {
		d = min(d, max(time.Until(n.refusedAt.Add(refusedWait)), 10*time.Millisecond))
	}
	actx, cancel := context.WithTimeout(ctx, d)
	if n.watch == nil {
		return actx, cancel
	}
	go func() {
		select {
		case <-n.watch.poke:
			cancel()
		case <-actx.Done():
		}
	}()
	return actx, cancel
}
