package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/channels/console"
	"github.com/frontdesk-hq/frontdesk/channels/email"
	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/clusterhub"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/datadir"
	"github.com/frontdesk-hq/frontdesk/erasure"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/limithits"
	"github.com/frontdesk-hq/frontdesk/mcp"
	"github.com/frontdesk-hq/frontdesk/memory"
	"github.com/frontdesk-hq/frontdesk/people"
	"github.com/frontdesk-hq/frontdesk/schedule"
	"github.com/frontdesk-hq/frontdesk/web"
)

// serve runs the server until ctx ends (a signal) or the hub or the HTTP
// server fails: open the stores, wire the parts, start them, then shut
// them down in order.
func serve(ctx context.Context, cfg config.Config, token string, logger *slog.Logger, logs *console.LogSink,
	stdin io.Reader, stdout io.Writer, getenv func(string) string) error {
	// Ctrl-\ in the console stops the server as a signal would.
	ctx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	withConsole, color := consoleMode(cfg, stdin, stdout, getenv, logs)
	st, err := openStores(cfg, getenv, logger)
	if err != nil {
		return err
	}
	node, err := joinWithCreds(ctx, cfg, st, getenv, logger) // and people's credentials, st.creds (serve_creds.go)
	if node != nil {
		defer node.Close()
	}
	var a *app
	if err == nil {
		a, err = wire(cfg, token, getenv, logger, st, node)
	}
	if err != nil {
		st.close()
		return err
	}
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		st.close()
		return fmt.Errorf("listen: %w", err)
	}
	srv := web.NewServer(a.handler, web.ServerOptions{Logger: logger})

	// The index and the MCP servers run beside the session and stop after
	// it (these defers run after shutdown): the hub's last appends get
	// indexed, and a turn's last tool call has ended by then.
	defer background(ctx, st.search.Run)()
	stopTools := func() {}
	if a.tools != nil {
		stopTools = background(ctx, func(ctx context.Context) error { a.tools.Run(ctx); return nil })
		defer stopTools()
	}
	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHub()
	hubErr := make(chan error, 1)
	go func() { hubErr <- a.hub.Run(hubCtx) }()
	defer startCreds(ctx, cfg, st, a.hub, ln.Addr().String(), logger)() // credentials: admin socket, audit, pruning
	// On a cluster node the runner copies the log in and takes part in the
	// lease election; the holder's doors start when this node wins.
	var lt leadTasks
	stopRunner, runnerErr := startRunner(ctx, cfg, node, a, st, &lt, logger)
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	banner(stdout, cfg, ln.Addr())

	// The console REPL ends on /quit, Ctrl-D or end of input; the server
	// goes on.
	var repl *task
	if withConsole {
		repl = startTask(ctx, logger, "console", func(ctx context.Context) error {
			return console.Run(ctx, a.hub, console.Options{Stdin: stdin, Stdout: stdout, Color: color, Logs: logs, Cluster: consoleCluster(a, node),
				Stop: func() { logger.Info("stop requested from the console (Ctrl-\\)"); stopServer() }, Schedules: a.schedAPI,
				Person: consolePerson(cfg, st.people), Names: consoleNames(st.people)})
		})
	}
	if node == nil {
		lt.start(ctx, a, logger)
	}

	runErr, hubStopped := waitForEnd(ctx, logger, hubErr, srvErr, runnerErr)
	doors, sched := lt.get()
	// The holder keeps its lease until its hub has closed the turn: then
	// it lets go, and another node takes over at once.
	afterHub := func() { stopRunner(); go stopTools() }
	if err := shutdown(logger, repl, doors, sched, stopHub, hubErr, hubStopped, afterHub, srv, a.ws, st.chatLog); err != nil && runErr == nil {
		runErr = err
	}
	a.closeChats(logger)
	return runErr
}

// banner is the start-up line (the tests and scripts wait for its
// "listening on"), and on a cluster node on its own a line saying so.
func banner(stdout io.Writer, cfg config.Config, addr net.Addr) {
	fmt.Fprintf(stdout, "frontdesk %s listening on http://%s (data in %s, agent %s)\n",
		version, addr, cfg.DataDir, cfg.Agent.Backend)
	if alone := clusterhub.OnItsOwn(cfg); alone != "" {
		fmt.Fprintln(stdout, alone)
	}
}

// waitForEnd waits for a signal (ctx), the hub's end, the HTTP server's
// failure or the cluster runner's; it returns the error that ended the
// server and whether the hub has already returned.
func waitForEnd(ctx context.Context, logger *slog.Logger, hubErr, srvErr, runnerErr <-chan error) (runErr error, hubStopped bool) {
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case runErr = <-hubErr:
		hubStopped = true
	case err := <-srvErr:
		runErr = fmt.Errorf("http server: %w", err)
	case runErr = <-runnerErr:
		logger.Error("cluster", "err", runErr)
	}
	return runErr, hubStopped
}

// stores are the files the session lives on.
type stores struct {
	tail    []event.Event // the end of the chat log, for the hub to resume from
	chatLog *history.Log
	mem     *memory.Store
	items   *memory.Items
	// itemsDamage is what a damaged items.json cost at start (nil: sound).
	itemsDamage *memory.ItemsDamage
	search      *index.Follower
	files       clusterhub.FileStore // the local store, or on a cluster node the object store cached there
	local       *attachments.Store   // the local store
	// creds is people's credentials (serve_creds.go); closeCreds
	// releases them (once).
	creds      *auth.Store
	closeCreds func()
	// people is who the doors know (config people, and OIDC guests kept
	// in creds): the hub's Gate and every door's directory.
	people *people.Directory
}

// openStores creates the data directory and opens the chat log (reading
// its tail first), memory and the search index.
func openStores(cfg config.Config, getenv func(string) string, logger *slog.Logger) (*stores, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	tail, skipped, err := history.ReadTail(cfg.Session.ChatLogPath, cfg.Session.BufferEvents)
	if err != nil {
		return nil, fmt.Errorf("read chat log: %w", err)
	}
	if skipped > 0 {
		logger.Warn("skipped malformed chat log lines", "count", skipped)
	}
	chatLog, err := history.Open(history.Options{
		Path: cfg.Session.ChatLogPath, RotateMB: cfg.Session.LogRotateMB, Fsync: cfg.Session.Fsync,
	})
	if err != nil {
		return nil, err
	}
	st := &stores{tail: tail, chatLog: chatLog}
	if st.mem, err = memory.Open(cfg.Memory.Dir); err != nil {
		st.close()
		return nil, fmt.Errorf("open memory: %w", err)
	}
	if st.items, st.itemsDamage, err = memory.OpenItemsMending(cfg.Memory.Dir, time.Now()); err != nil {
		st.close()
		return nil, err
	}
	if st.itemsDamage != nil {
		logger.Error(st.itemsDamage.Message())
	}
	local, err := attachments.Open(filepath.Join(cfg.DataDir, "attachments"), cfg.Attachments.MaxBytes)
	if err != nil {
		st.close()
		return nil, err
	}
	st.files, st.local = local, local
	var logSeq int64
	if len(tail) > 0 {
		logSeq = tail[len(tail)-1].Seq
	}
	if st.search, err = datadir.OpenIndex(cfg, logSeq, st.items, getenv, logger); err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

// close closes what openStores opened, when serve gives up before running
// anything (once running, shutdown closes the log and the index's Run
// closes the index).
func (st *stores) close() {
	st.chatLog.Close()
	if st.closeCreds != nil {
		st.closeCreds()
	}
	if st.search != nil {
		st.search.Close()
	}
}

// app is the wired server, ready to start.
type app struct {
	hub     *hub.SessionManager
	tools   *mcp.Manager // nil without mcp.servers
	mail    *email.Channel
	chats   []chatDoor // the chat doors enabled (serve_chat.go)
	sched   *schedule.Scheduler
	ws      *ws.Handler
	handler http.Handler
	runner  *clusterhub.Runner // a cluster node's; nil on a single node
	// schedAPI is the schedule API of the doors: the scheduler, or on a
	// cluster node the one that forwards to the holder's.
	schedAPI web.Schedules
	state    *clusterhub.HolderFiles // a cluster node's replicated files; nil on a single node
	// itemsDamage is what a damaged items.json cost at start (nil: sound).
	itemsDamage *memory.ItemsDamage

	clusterMetrics *clusterhub.Metrics // a cluster node's
	search         *index.Follower     // for /healthz's reasons
}

// wire builds the agent, the hub and every door over st.
func wire(cfg config.Config, token string, getenv func(string) string, logger *slog.Logger, st *stores, node *cluster.Node) (*app, error) {
	var files agent.Files
	if st.files != nil {
		files = st.files
	}
	ag, err := newAgent(cfg, getenv, logger, files)
	if err != nil {
		return nil, err
	}
	a := &app{tools: mcp.FromConfig(version, cfg.MCP.Servers, getenv, logger), search: st.search, itemsDamage: st.itemsDamage}
	var lg hub.Log = st.chatLog
	var link hub.Cluster
	if node != nil {
		lg, link = clusterHub(node, a)
		a.state = clusterhub.NewHolderFiles(cfg.DataDir, node, func() { a.runner.Fenced() })
	}
	a.hub = newHub(cfg, logger, st, ag, a.turnTools, lg, link)
	registry := prometheus.NewRegistry()
	registry.MustRegister(append(a.hub.Collectors(), datadir.SemanticCollector(st.search))...)
	if a.clusterMetrics != nil {
		registry.MustRegister(a.clusterMetrics.Collectors()...)
	}

	if cfg.Channels.Email.Enabled {
		if a.mail, err = newEmail(cfg, a.hub, getenv, logger, st, a.state.MailReplicate()); err != nil {
			return nil, err // it names the channel and the variable to set
		}
		registry.MustRegister(a.mail.Collector())
	}
	if a.chats, err = newChatDoors(cfg, a, getenv, logger, st); err != nil {
		return nil, err
	}
	if a.sched, err = newScheduler(cfg, a, getenv, logger); err != nil {
		return nil, err
	}
	a.schedAPI = schedulesAPI(a)
	if a.tools != nil {
		// mcp.max_tools counts every tool of a request: the session's own,
		// then the schedule tools, first; the MCP servers' share the rest.
		a.tools.MaxTools, a.tools.Builtin = cfg.MCP.MaxTools, a.hub.BuiltinTools()+len(a.sched.Tools())
	}

	var messages http.Handler
	if wh := cfg.Channels.Webhook; wh.Enabled {
		hook := webhook.New(a.hub, webhook.Options{MaxBytes: cfg.Server.MaxMessageBytes,
			RatePerSec: wh.RatePerSec, RateBurst: wh.RateBurst})
		registry.MustRegister(hook.Collectors()...)
		messages = hook
	}
	var mcpStates func() any
	if a.tools != nil {
		mcpStates = func() any { return a.tools.States() }
	}
	a.ws = newWS(cfg, a.hub, logger)
	registry.MustRegister(a.ws.Collectors()...)
	a.handler = web.Handler(a.hub, web.Options{
		Addr:           cfg.Server.Addr,
		Token:          token,
		People:         st.people,
		Credentials:    st.creds,
		Auth:           cfg.Auth,
		AllowedOrigins: cfg.Server.AllowedOrigins,
		AllowedHosts:   cfg.Server.AllowedHosts,
		WS:             a.ws,
		Messages:       messages,
		MCP:            mcpServeHandler(cfg, a.hub, registry),
		MCPServers:     mcpStates,
		Registry:       registry,

		Attachments:        st.files,
		AttachmentMaxBytes: cfg.Attachments.MaxBytes,
		Schedules:          a.schedAPI,
		Warnings:           a.warnings,
		Doors:              a.chatStatus,
		Cluster:            clusterStatusFunc(a, node),
		OIDCClientSecret:   oidcClientSecret(cfg, getenv),
		Audit:              a.hub.RecordPersonChange,
	})
	return a, nil
}

// warnings is what /healthz reports as reasons while the desk still
// works: a damaged schedules.json kept aside at start, search by meaning
// failing or stopped.
func (a *app) warnings() []string {
	var w []string
	if d := a.sched.Damage(); d != nil {
		w = append(w, d.Message())
	}
	if s := datadir.SemanticWarning(a.search); s != "" {
		w = append(w, s)
	}
	if a.itemsDamage != nil {
		w = append(w, a.itemsDamage.Message())
	}
	return append(w, a.chatWarnings()...)
}

// newHub makes the session over the stores; tools supplies each turn's
// tools besides the history tools.
func newHub(cfg config.Config, logger *slog.Logger, st *stores, ag agent.Agent, tools func() []agent.Tool, lg hub.Log, link hub.Cluster) *hub.SessionManager {
	return hub.New(hub.Config{
		DataDir:             cfg.DataDir,
		BusyPolicy:          cfg.Session.BusyPolicy,
		RetainExchanges:     cfg.Session.RetainExchanges,
		BufferEvents:        cfg.Session.BufferEvents,
		ClientQueue:         cfg.Server.ClientQueue,
		IdleTimeout:         time.Duration(cfg.Session.IdleTimeoutSec) * time.Second,
		Logger:              logger,
		Restore:             st.tail,
		Memory:              st.mem,
		Items:               st.items,
		MemoryContextTokens: cfg.Memory.ContextTokens,
		MemorySaveApproval:  cfg.Memory.SaveApproval,
		MaxMemoryItems:      cfg.Memory.MaxItems,
		History:             history.NewReader(cfg.Session.ChatLogPath),
		Index:               st.search,
		Tools:               tools,
		ApprovalTimeout:     time.Duration(cfg.MCP.ApprovalTimeoutSec) * time.Second,
		Attachments:         st.files,
		MaxAttachments:      cfg.Attachments.MaxPerMessage,
		MaxMessageBytes:     cfg.Server.MaxMessageBytes,
		Cluster:             link,
		Erased:              st.eraser(cfg, logger, nil).Later,
		Gate:                st.people,
		ApprovalsNotSelf:    cfg.MCP.Approvals.NotSelf,
	}, lg, ag)
}

// eraser rids this node's files of erased events (package erasure).
func (st *stores) eraser(cfg config.Config, logger *slog.Logger, node *cluster.Node) *erasure.Applier {
	a := &erasure.Applier{Log: st.chatLog, AuditDir: filepath.Join(cfg.DataDir, "audit"),
		Attachments: st.local, Memory: st.mem, Logger: logger}
	if node != nil {
		a.Shared = node // the cluster's object store
	}
	if st.search != nil {
		a.Index = st.search
	}
	return a
}

// mcpServeHandler is /mcp (mcp.serve): the history tools, and
// send_message with mcp.serve_send; nil when off.
func mcpServeHandler(cfg config.Config, h *hub.SessionManager, registry *prometheus.Registry) http.Handler {
	if !cfg.MCP.Serve {
		return nil
	}
	served := hub.HistoryTools(h, "")
	if cfg.MCP.ServeSend {
		// The webhook's limits: both put a script's message into the session.
		limited := limithits.Counter("mcp_send_rate")
		registry.MustRegister(limited)
		served = append(served, mcp.SendTool(h, mcp.SendOptions{MaxBytes: cfg.Server.MaxMessageBytes,
			RatePerSec: cfg.Channels.Webhook.RatePerSec, RateBurst: cfg.Channels.Webhook.RateBurst, Limited: limited}))
	}
	return mcp.Handler(mcp.NewServer(version, served), mcp.HTTPOptions{MaxBodyBytes: cfg.Server.MaxMessageBytes})
}

// turnTools are the tools a turn gets besides the history tools: the
// schedule tools, then the MCP servers' that are ready. The hub calls it
// on its goroutine as each turn starts, after wire has set a.sched.
func (a *app) turnTools() []agent.Tool {
	tools := a.sched.Tools()
	if a.tools != nil {
		tools = append(tools, a.tools.Tools()...)
	}
	return tools
}

// newScheduler opens data_dir/schedules.json. notify: email and auto
// mail through the email channel, when it is on and schedules.notify_to
// is set (config checks that it is an allowed address).
func newScheduler(cfg config.Config, a *app, getenv func(string) string, logger *slog.Logger) (*schedule.Scheduler, error) {
	loc, err := schedule.ServerZone(cfg.Schedules.TZ, getenv)
	if err != nil {
		return nil, err
	}
	opts := schedule.Options{
		DataDir:         cfg.DataDir,
		MinInterval:     time.Duration(cfg.Schedules.MinIntervalSec) * time.Second,
		MaxSchedules:    cfg.Schedules.MaxSchedules,
		MaxContentBytes: int(min(int64(cfg.Schedules.MaxContentBytes), cfg.Server.MaxMessageBytes)),
		TZ:              loc,
		Logger:          logger,
		// Every open tab's Scheduled panel looks again (a.ws is set by
		// the time Run starts, which is the only caller).
		Changed: a.schedulesChanged,
		// A cluster holder's schedules.json is replicated for the next one.
		Replicate: a.state.SchedReplicate(),
	}
	if a.mail != nil && cfg.Schedules.NotifyTo != "" {
		opts.Mailer, opts.NotifyTo = a.mail, cfg.Schedules.NotifyTo
	}
	return schedule.Open(a.hub, opts)
}

// schedulesChanged tells every open tab's Scheduled panel to look again.
func (a *app) schedulesChanged() {
	a.ws.Broadcast(event.New(event.SchedulesChanged, "", time.Now(), nil))
}

// task is a door's run loop (the console, email) on a goroutine of its
// own, stopped with its context.
type task struct {
	name string
	stop context.CancelFunc
	done chan struct{}
}

// startTask runs fn until it returns or ctx ends; its error is logged
// under name (the server goes on without it).
func startTask(ctx context.Context, logger *slog.Logger, name string, fn func(context.Context) error) *task {
	tctx, stop := context.WithCancel(ctx)
	t := &task{name: name, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		if err := fn(tctx); err != nil {
			logger.Error(name, "err", err)
		}
	}()
	return t
}

// halt stops t and waits for it until deadline ends; it reports whether
// t ended. A nil task has nothing to stop.
func (t *task) halt(deadline context.Context) bool {
	if t == nil {
		return true
	}
	t.stop()
	select {
	case <-t.done:
		return true
	case <-deadline.Done():
		return false
	}
}

// background runs fn on a goroutine of its own, outliving ctx's
// cancellation (it is stopped explicitly), and returns the func that
// stops it and waits for it.
func background(ctx context.Context, fn func(context.Context) error) (stop func()) {
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = fn(bctx) }()
	return func() { cancel(); <-done }
}

// Shutdown phases, each ending this long after the signal. The last leaves
// room within DESIGN's 5 s for closing the chat log and exiting. The hub's
// slice covers its own 2 s wait for the agent to stop.
const (
	shutdownInputs  = 1500 * time.Millisecond // console and email stop taking input
	shutdownSession = 3500 * time.Millisecond // the hub ends the turn, syncs the log
	shutdownClients = 4250 * time.Millisecond // HTTP requests and WebSockets end
)

// shutdown stops everything in order: stop taking input (the REPL first,
// so it restores the terminal; then email, so no mail goes into a stopping
// session; then the scheduler, so no schedule fires into it), then the hub (inputs get ErrClosed, the running turn ends
// interrupted, the log is synced, every WebSocket is told 1001), then drain
// HTTP and the WebSockets, then close the chat log. DESIGN promises an exit
// within 5 s of the signal: each phase has its own slice of that, so one
// stuck part (a mail server, a client that does not read) cannot starve the
// ones after it. hubStopped says the hub has already returned (its error
// was taken from hubErr).
func shutdown(logger *slog.Logger, repl *task, doors []*task, sched *task, stopHub context.CancelFunc, hubErr <-chan error, hubStopped bool,
	afterHub func(), srv *http.Server, wsh *ws.Handler, chatLog *history.Log) error {
	start := time.Now()
	phase := func(until time.Duration) (context.Context, context.CancelFunc) {
		return context.WithDeadline(context.Background(), start.Add(until))
	}
	var firstErr error
	inputs, cancelInputs := phase(shutdownInputs)
	defer cancelInputs()
	repl.halt(inputs)
	for _, d := range doors {
		if !d.halt(inputs) {
			logger.Error(d.name + " did not stop in time")
		}
	}
	if !sched.halt(inputs) {
		logger.Error("scheduler did not stop in time")
	}
	session, cancelSession := phase(shutdownSession)
	defer cancelSession()
	stopHub()
	if !hubStopped {
		select {
		case firstErr = <-hubErr:
		case <-session.Done():
			logger.Error("session hub did not stop in time")
		}
	}
	// No turn runs now: the MCP servers stop (TERM, then KILL) while the
	// clients drain, not after them; a cluster node lets go of the lease.
	afterHub()
	clients, cancelClients := phase(shutdownClients)
	defer cancelClients()
	if err := srv.Shutdown(clients); err != nil {
		logger.Warn("http shutdown", "err", err)
		srv.Close()
	}
	if err := wsh.Shutdown(clients); err != nil {
		logger.Warn("websocket clients did not close in time")
	}
	if err := chatLog.Close(); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("close chat log: %w", err)
	}
	return firstErr
}

// joinCluster joins the cluster when cluster.node is set; nil on a single
// node. A cluster node's attachments are the cluster's object store, this
// node's store its cache.
func joinCluster(ctx context.Context, cfg config.Config, st *stores, getenv func(string) string, logger *slog.Logger) (*cluster.Node, error) {
	if !cfg.Cluster.Enabled() {
		return nil, nil
	}
	n, err := clusterhub.Join(ctx, cfg, st.lastSeq(), getenv, logger)
	if err != nil {
		return nil, err
	}
	st.files = &clusterhub.Files{Local: st.files, Node: n, Logger: logger}
	return n, nil
}

// schedulesAPI is the doors' schedule API: the scheduler on a single
// node, one that forwards to the holder's on a cluster node.
func schedulesAPI(a *app) web.Schedules {
	if a.state == nil {
		return a.sched
	}
	return a.state.Forwarding(a.sched)
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
	go func() { defer close(watched); a.state.WatchSchedules(rctx, a.schedulesChanged, logger) }()
	return func() { cancel(); <-done; <-watched }, runnerErr
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
// node wins the lease: the email poller, the chat doors and the
// scheduler's firing.
type leadTasks struct {
	mu    sync.Mutex
	doors []*task // email, then the chat doors
	sched *task
}

func (lt *leadTasks) start(ctx context.Context, a *app, logger *slog.Logger) {
	// A node that leads again: the last time's tasks end first (their ctx
	// ended when it stopped leading).
	doors, sched := lt.get()
	for _, t := range append(doors, sched) {
		if t != nil {
			<-t.done
		}
	}
	// A new holder starts from the schedules, the email spool and the
	// chat doors' state the last one replicated.
	var chats []string
	for _, c := range a.chats {
		chats = append(chats, c.name)
	}
	if err := a.state.TakeOver(ctx, a.sched, a.mail != nil, chats, logger); err != nil {
		if ctx.Err() == nil {
			logger.Error("cluster: could not take over the schedules, the email spool and the chat doors' state; this holder runs none of them", "err", err)
		}
		return
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	lt.doors = nil
	if a.mail != nil {
		lt.doors = append(lt.doors, startTask(ctx, logger, "email channel", a.mail.Run))
	}
	for _, c := range a.chats {
		lt.doors = append(lt.doors, startTask(ctx, logger, c.name+" door", c.door.Run))
	}
	lt.sched = startTask(ctx, logger, "scheduler", a.sched.Run)
	a.state.Lead(ctx, a.sched, logger)
}

func (lt *leadTasks) get() (doors []*task, sched *task) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return append([]*task(nil), lt.doors...), lt.sched
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
		Erased:  st.eraser(cfg, logger, n).Apply,
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
