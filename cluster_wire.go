package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/frontdesk-hq/frontdesk/channels/console"
	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/clusterhub"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/web"
)

// joinCluster joins the cluster when cluster.node is set (startCluster);
// nil on a single node.
func joinCluster(ctx context.Context, cfg config.Config, st *stores, getenv func(string) string, logger *slog.Logger) (*cluster.Node, error) {
	if !cfg.Cluster.Enabled() {
		return nil, nil
	}
	return startCluster(ctx, cfg, st, getenv, logger)
}

// startRunner starts the runner that joins the hub to the cluster (the
// log copied in, the lease election, the holder's doors when this node
// wins) on a cluster node; stop stops it and waits; errc gets its error.
// On a single node both do nothing.
func startRunner(ctx context.Context, cfg config.Config, node *cluster.Node, a *app, st *stores, lt *leadTasks,
	logger *slog.Logger) (stop func(), errc <-chan error) {
	runnerErr := make(chan error, 1)
	if node == nil {
		return func() {}, runnerErr
	}
	a.runner = newRunner(cfg, node, a, st, lt, logger)
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); runnerErr <- a.runner.Run(rctx) }()
	watched := make(chan struct{})
	go func() { defer close(watched); a.state.watchSchedules(rctx, a.schedulesChanged, logger) }()
	return func() { cancel(); <-done; <-watched }, runnerErr
}

// startCluster joins this node to the cluster (cluster.node set): NATS
// up, the log stream bound, this data directory checked against it and
// given the cluster's session id.
func startCluster(ctx context.Context, cfg config.Config, st *stores, getenv func(string) string, logger *slog.Logger) (*cluster.Node, error) {
	if err := clusterhub.CheckSecret(cfg, getenv); err != nil {
		return nil, err
	}
	n, err := cluster.Start(ctx, clusterhub.FromConfig(cfg, getenv), logger)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*cluster.Node, error) { n.Close(); return nil, err }
	last, err := n.LastSeq(ctx)
	if err != nil {
		return fail(err)
	}
	if local := st.lastSeq(); local > last {
		return fail(fmt.Errorf("this node's chat log (%s) reaches seq %d but the cluster's log only %d: it is not a copy of this cluster's log; give this node an empty data directory",
			cfg.Session.ChatLogPath, local, last))
	}
	id, created, err := n.Session(ctx)
	if err != nil {
		return fail(err)
	}
	if err := hub.AdoptSession(cfg.DataDir, id, created, st.lastSeq() == 0); err != nil {
		return fail(err)
	}
	// Attachments: the object store, this node's store its cache.
	st.files = &clusterhub.Files{Local: st.files, Node: n, Logger: logger}
	logger.Info("cluster node up", "node", n.Name(), "replicas", n.Replicas(), "log_last_seq", last)
	return n, nil
}

// lastSeq is the last seq of this node's chat log at start.
func (st *stores) lastSeq() int64 {
	if len(st.tail) == 0 {
		return 0
	}
	return st.tail[len(st.tail)-1].Seq
}

// clusterHub is the hub's log and link on a cluster node; the runner is
// set by the time the hub runs.
func clusterHub(n *cluster.Node, a *app) (hub.Log, hub.Cluster) {
	a.clusterMetrics = clusterhub.NewMetrics()
	return clusterhub.Log{Node: n, Fenced: func() { a.runner.Fenced() }, Metrics: a.clusterMetrics}, clusterhub.Link{Node: n}
}

// clusterStatusFunc reports this node's view of the cluster to the web
// API; nil on a single node.
func clusterStatusFunc(a *app, n *cluster.Node) func() web.ClusterStatus {
	if n == nil {
		return nil
	}
	return func() web.ClusterStatus {
		st := a.runner.State()
		nodes := make([]web.ClusterNode, len(st.Nodes))
		for i, m := range st.Nodes {
			nodes[i] = web.ClusterNode(m)
		}
		return web.ClusterStatus{Node: st.Node, Leader: st.Leader, Role: st.Role, Nodes: nodes}
	}
}

// consoleCluster is what /status in the console shows of the cluster; nil
// on a single node.
func consoleCluster(a *app, n *cluster.Node) func() console.ClusterView {
	if n == nil {
		return nil
	}
	return func() console.ClusterView {
		st := a.runner.State()
		return console.ClusterView{Node: st.Node, Holder: st.Leader, Role: st.Role}
	}
}

// leadTasks are the holder's doors besides the hub, started when this
// node wins the lease: the email poller and the scheduler's firing.
type leadTasks struct {
	mu          sync.Mutex
	mail, sched *task
}

func (lt *leadTasks) start(ctx context.Context, a *app, logger *slog.Logger) {
	// A node that leads again: the last time's tasks end first (their ctx
	// ended when it stopped leading).
	for _, t := range lt.getAll() {
		<-t.done
	}
	// A new holder starts from the schedules and the email spool the
	// last one replicated.
	if err := a.state.takeOver(ctx, a, logger); err != nil {
		if ctx.Err() == nil {
			logger.Error("cluster: could not take over the schedules and the email spool; this holder runs neither", "err", err)
		}
		return
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if a.mail != nil {
		lt.mail = startTask(ctx, logger, "email channel", a.mail.Run)
	}
	lt.sched = startTask(ctx, logger, "scheduler", a.sched.Run)
	a.state.lead(ctx, a, logger)
}

// getAll returns the tasks started, if any.
func (lt *leadTasks) getAll() []*task {
	var all []*task
	mail, sched := lt.get()
	for _, t := range []*task{mail, sched} {
		if t != nil {
			all = append(all, t)
		}
	}
	return all
}

func (lt *leadTasks) get() (mail, sched *task) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.mail, lt.sched
}

// newRunner makes the runner that joins the hub to the cluster.
func newRunner(cfg config.Config, n *cluster.Node, a *app, st *stores, lt *leadTasks, logger *slog.Logger) *clusterhub.Runner {
	return clusterhub.New(clusterhub.Options{
		Node: n, Hub: a.hub, ChatLog: st.chatLog, After: st.lastSeq(),
		Tail: func() ([]event.Event, error) {
			tail, _, err := history.ReadTail(cfg.Session.ChatLogPath, cfg.Session.BufferEvents)
			return tail, err
		},
		TailEvents: cfg.Session.BufferEvents,
		Indexed:    st.search.Notify,
		PublicURL:  cfg.Cluster.PublicURL,
		Copied:     prefetch(st),
		// The hub calls its Config.Erased on a single node only: here the
		// copier rids this node's files of each erased event it copies.
		Erased:  st.eraser(cfg, logger).Apply,
		Lead:    func(ctx context.Context) { lt.start(ctx, a, logger) },
		Metrics: a.clusterMetrics,
		Logger:  logger,
	})
}

// prefetch is Runner's Copied on a cluster node: each file the log refers
// to is fetched into this node's store.
func prefetch(st *stores) func(event.Event) {
	if f, ok := st.files.(*clusterhub.Files); ok {
		return f.Prefetch
	}
	return nil
}
