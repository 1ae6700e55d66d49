// Command frontdesk serves one persistent AI assistant with one shared
// conversation to the web UI, the terminal, email and webhooks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/console"
	"github.com/frontdesk-hq/frontdesk/channels/email"
	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/mcp"
	"github.com/frontdesk-hq/frontdesk/memory"
	"github.com/frontdesk-hq/frontdesk/web"
	"github.com/prometheus/client_golang/prometheus"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "frontdesk:", err)
		os.Exit(1)
	}
}

// run is the whole program; tests call it with their own streams. It
// returns when ctx is cancelled (after a clean shutdown) or on an error.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("frontdesk", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintf(stderr, "usage: frontdesk [flags]               serve\n"+
			"       frontdesk version                print the version\n"+
			"       frontdesk check-config [flags]   validate the configuration and reach the agent backend\n"+
			"       frontdesk history recent|range|search …   read the chat log (frontdesk history -h)\n"+
			"       frontdesk mcp [-config FILE] [-data DIR]   the history tools over MCP stdio (frontdesk mcp -h)\n"+
			"       frontdesk backup -o FILE.tar.gz [flags]   snapshot the data directory, running or not\n"+
			"       frontdesk restore [flags] FILE.tar.gz     restore a backup into an empty data directory\n"+
			"       frontdesk healthcheck [-addr HOST:PORT]   exit 0 when the server's /healthz answers 200\n\nflags:\n")
		fl.PrintDefaults()
	}
	cfgPath := fl.String("config", "", "config file (default config.yaml if present)")
	addr := fl.String("addr", "", "listen address HOST:PORT (overrides server.addr)")
	dataDir := fl.String("data", "", "data directory (overrides data_dir)")

	if len(args) > 1 {
		switch args[1] {
		case "history":
			return runHistory(args[2:], getenv, stdout, stderr)
		case "backup":
			return runBackup(args[2:], stdout, stderr)
		case "restore":
			return runRestore(args[2:], stdout, stderr)
		case "healthcheck":
			return runHealthcheck(ctx, args[2:], getenv, stdout, stderr)
		}
	}
	if len(args) > 1 && args[1] == "mcp" {
		return runMCP(ctx, args[2:], stdin, stdout, stderr)
	}
	cmd := ""
	rest := args[1:]
	if len(rest) > 0 && (rest[0] == "version" || rest[0] == "check-config") {
		cmd, rest = rest[0], rest[1:]
	}
	if err := fl.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see frontdesk -h)", fl.Arg(0))
	}
	if cmd == "version" {
		fmt.Fprintln(stdout, "frontdesk", version)
		return nil
	}

	cfg, err := loadConfig(*cfgPath, *addr, *dataDir)
	if err != nil {
		return err
	}
	if err := cfg.CheckAuthToken(getenv); err != nil {
		return err
	}
	token := cfg.AuthTokenValue(getenv)
	if err := checkExposure(cfg.Server.Addr, token, cfg.Server.AuthTokenEnv); err != nil {
		return err
	}
	if cmd == "check-config" {
		return checkConfig(ctx, cfg, getenv, stdout)
	}
	// Logs go through a sink the console can point at its prompt-aware writer.
	logs := console.NewLogSink(stderr)
	logger := setupLogging(cfg, getenv, logs)
	return serve(ctx, cfg, token, logger, logs, stdin, stdout, getenv)
}

func loadConfig(path, addr, dataDir string) (config.Config, error) {
	optional := path == ""
	if optional {
		path = "config.yaml"
	}
	cfg, err := config.Load(path, optional)
	if err != nil {
		return cfg, err
	}
	if addr != "" {
		cfg.Server.Addr = addr
	}
	if dataDir != "" {
		cfg.DataDir = dataDir
	}
	cfg.Resolve()
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("invalid config:\n%w", err)
	}
	return cfg, nil
}

// checkExposure refuses to listen beyond loopback without a token.
func checkExposure(addr, token, tokenEnv string) error {
	host, _, _ := net.SplitHostPort(addr)
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	if token == "" {
		return fmt.Errorf("refusing to listen on %s without an auth token: set the %s environment variable "+
			"(or server.auth_token in the config), or listen on 127.0.0.1", addr, tokenEnv)
	}
	return nil
}

func serve(ctx context.Context, cfg config.Config, token string, logger *slog.Logger, logs *console.LogSink,
	stdin io.Reader, stdout io.Writer, getenv func(string) string) error {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	tail, skipped, err := history.ReadTail(cfg.Session.ChatLogPath, cfg.Session.BufferEvents)
	if err != nil {
		return fmt.Errorf("read chat log: %w", err)
	}
	if skipped > 0 {
		logger.Warn("skipped malformed chat log lines", "count", skipped)
	}
	log, err := history.Open(history.Options{
		Path: cfg.Session.ChatLogPath, RotateMB: cfg.Session.LogRotateMB, Fsync: cfg.Session.Fsync,
	})
	if err != nil {
		return err
	}
	defer log.Close()

	mem, err := memory.Open(cfg.Memory.Dir)
	if err != nil {
		return fmt.Errorf("open memory: %w", err)
	}
	ag, err := newAgent(cfg, getenv, logger)
	if err != nil {
		return err
	}
	var logSeq int64
	if len(tail) > 0 {
		logSeq = tail[len(tail)-1].Seq
	}
	search, err := openIndex(cfg, logSeq, mem, logger)
	if err != nil {
		return err
	}
	tools := newMCPManager(cfg, getenv, logger)
	var extraTools func() []agent.Tool
	if tools != nil {
		extraTools = tools.Tools
	}
	h := hub.New(hub.Config{
		DataDir:         cfg.DataDir,
		BusyPolicy:      cfg.Session.BusyPolicy,
		RetainExchanges: cfg.Session.RetainExchanges,
		BufferEvents:    cfg.Session.BufferEvents,
		ClientQueue:     cfg.Server.ClientQueue,
		IdleTimeout:     time.Duration(cfg.Session.IdleTimeoutSec) * time.Second,
		Logger:          logger,
		Restore:         tail,
		Memory:          mem,
		History:         history.NewReader(cfg.Session.ChatLogPath),
		Index:           search,
		Tools:           extraTools,
		ApprovalTimeout: time.Duration(cfg.MCP.ApprovalTimeoutSec) * time.Second,
	}, log, ag)

	// The email channel: IMAP in, SMTP out. Enabled but unusable (say, a
	// password variable not set) refuses to start rather than silently
	// not answering mail. It stops before the hub at shutdown, so no mail is
	// handed to a stopping session; what is unanswered waits in
	// <data_dir>/email for the next start.
	registry := prometheus.NewRegistry()
	registry.MustRegister(h.Collectors()...)
	var mailCh *email.Channel
	if e := cfg.Channels.Email; e.Enabled {
		mailCh, err = email.New(h, email.Options{
			Address: e.Address, AllowFrom: e.AllowFrom, MaxBytes: e.MaxBytes, RatePerHour: e.RatePerHour,
			IMAP: email.IMAPOptions{Addr: e.IMAP.Addr, TLS: e.IMAP.TLS, Username: e.IMAP.Username,
				Password: getenv(e.IMAP.PasswordEnv), PasswordEnv: e.IMAP.PasswordEnv, Mailbox: e.IMAP.Mailbox,
				Idle: e.IMAP.Idle, PollInterval: time.Duration(e.IMAP.PollIntervalSec) * time.Second},
			SMTP: email.SMTPOptions{Addr: e.SMTP.Addr, TLS: e.SMTP.TLS, Username: e.SMTP.Username,
				Password: getenv(e.SMTP.PasswordEnv), PasswordEnv: e.SMTP.PasswordEnv},
			DataDir: cfg.DataDir, Logger: logger,
		})
		if err != nil {
			return err // it names the channel and the variable to set
		}
		registry.MustRegister(mailCh.Collector())
	}

	var messages http.Handler
	if wh := cfg.Channels.Webhook; wh.Enabled {
		hook := webhook.New(h, webhook.Options{MaxBytes: cfg.Server.MaxMessageBytes,
			RatePerSec: wh.RatePerSec, RateBurst: wh.RateBurst})
		registry.MustRegister(hook.Collectors()...)
		messages = hook
	}
	var mcpHandler http.Handler
	if cfg.MCP.Serve {
		served := hub.HistoryTools(h, "")
		if cfg.MCP.ServeSend {
			served = append(served, mcp.SendTool(h))
		}
		mcpHandler = mcp.Handler(mcp.NewServer(version, served))
	}
	var mcpStates func() any
	if tools != nil {
		mcpStates = func() any { return tools.States() }
	}
	wsHandler := ws.New(h, ws.Options{
		MaxMessageBytes: cfg.Server.MaxMessageBytes,
		PingInterval:    time.Duration(cfg.Server.PingIntervalSec) * time.Second,
		WriteTimeout:    time.Duration(cfg.Server.WriteTimeoutSec) * time.Second,
		MaxClients:      cfg.Server.MaxClients,
		FrameRatePerSec: cfg.Server.FrameRatePerSec,
		FrameRateBurst:  cfg.Server.FrameRateBurst,
		Logger:          logger,
	})
	registry.MustRegister(wsHandler.Collectors()...)
	handler := web.Handler(h, web.Options{
		Addr:           cfg.Server.Addr,
		Token:          token,
		AllowedOrigins: cfg.Server.AllowedOrigins,
		AllowedHosts:   cfg.Server.AllowedHosts,
		WS:             wsHandler,
		Messages:       messages,
		MCP:            mcpHandler,
		MCPServers:     mcpStates,
		Registry:       registry,
	})

	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := web.NewServer(handler, web.ServerOptions{Logger: logger})

	// The index follows the log on its own goroutine; it stops last, after
	// the hub has appended its final events.
	indexCtx, stopIndex := context.WithCancel(context.WithoutCancel(ctx))
	indexDone := make(chan struct{})
	go func() { defer close(indexDone); search.Run(indexCtx) }()
	defer func() { stopIndex(); <-indexDone }()

	// The MCP servers run beside the session and stop after it (deferred
	// before the hub's stop, so run after it): a turn's last tool call
	// has ended by then.
	if tools != nil {
		toolsCtx, stopTools := context.WithCancel(context.WithoutCancel(ctx))
		toolsDone := make(chan struct{})
		go func() { defer close(toolsDone); tools.Run(toolsCtx) }()
		defer func() { stopTools(); <-toolsDone }()
	}

	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHub()
	hubErr := make(chan error, 1)
	go func() { hubErr <- h.Run(hubCtx) }()
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()

	fmt.Fprintf(stdout, "frontdesk %s listening on http://%s (data in %s, agent %s)\n",
		version, ln.Addr(), cfg.DataDir, cfg.Agent.Backend)

	// The console REPL: on when stdin is a terminal (auto), or forced. It
	// ends on /quit, Ctrl-D or end of input; the server goes on.
	consoleCtx, stopConsole := context.WithCancel(ctx)
	defer stopConsole()
	consoleDone := make(chan struct{})
	if c := cfg.Channels.Console.Enabled; c == "true" || (c == "auto" && console.IsTerminal(stdin)) {
		color := console.IsTerminal(stdout) && getenv("NO_COLOR") == ""
		go func() {
			defer close(consoleDone)
			if err := console.Run(consoleCtx, h, console.Options{Stdin: stdin, Stdout: stdout, Color: color, Logs: logs}); err != nil {
				logger.Error("console", "err", err)
			}
		}()
	} else {
		close(consoleDone)
	}

	emailCtx, stopEmail := context.WithCancel(ctx)
	defer stopEmail()
	emailDone := make(chan struct{})
	if mailCh != nil {
		go func() {
			defer close(emailDone)
			if err := mailCh.Run(emailCtx); err != nil {
				logger.Error("email channel", "err", err)
			}
		}()
	} else {
		close(emailDone)
	}

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err := <-hubErr:
		runErr = err
		hubErr <- err
	case err := <-srvErr:
		runErr = fmt.Errorf("http server: %w", err)
	}

	// Shutdown order: stop taking input (the hub stops: inputs get
	// ErrClosed, the running turn ends interrupted, the log is synced, every
	// WebSocket is told 1001), then drain HTTP and the WebSockets, then
	// close the log. DESIGN promises an exit within 5 s of the signal: each
	// phase has its own slice of that, so one stuck part (a mail server, a
	// client that does not read) cannot starve the ones after it.
	start := time.Now()
	phase := func(until time.Duration) (context.Context, context.CancelFunc) {
		return context.WithDeadline(context.Background(), start.Add(until))
	}
	inputs, cancelInputs := phase(shutdownInputs)
	defer cancelInputs()
	stopConsole()
	select { // the REPL restores the terminal before anything else
	case <-consoleDone:
	case <-inputs.Done():
	}
	stopEmail()
	select { // before the hub: no mail goes into a stopping session
	case <-emailDone:
	case <-inputs.Done():
		logger.Error("email channel did not stop in time")
	}
	session, cancelSession := phase(shutdownSession)
	defer cancelSession()
	stopHub()
	select {
	case err := <-hubErr:
		if err != nil && runErr == nil {
			runErr = err
		}
	case <-session.Done():
		logger.Error("session hub did not stop in time")
	}
	clients, cancelClients := phase(shutdownClients)
	defer cancelClients()
	if err := srv.Shutdown(clients); err != nil {
		logger.Warn("http shutdown", "err", err)
		srv.Close()
	}
	if err := wsHandler.Shutdown(clients); err != nil {
		logger.Warn("websocket clients did not close in time")
	}
	if err := log.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("close chat log: %w", err)
	}
	return runErr
}

// Shutdown phases, each ending this long after the signal. The last leaves
// room within DESIGN's 5 s for closing the chat log and exiting. The hub's
// slice covers its own 2 s wait for the agent to stop.
const (
	shutdownInputs  = 1500 * time.Millisecond // console and email stop taking input
	shutdownSession = 3500 * time.Millisecond // the hub ends the turn, syncs the log
	shutdownClients = 4250 * time.Millisecond // HTTP requests and WebSockets end
)

func newAgent(cfg config.Config, getenv func(string) string, logger *slog.Logger) (agent.Agent, error) {
	switch a := cfg.Agent; a.Backend {
	case "openai":
		o := a.OpenAI
		key := ""
		if o.APIKeyEnv != "" {
			key = getenv(o.APIKeyEnv)
		}
		oa, err := agent.NewOpenAI(agent.OpenAIOptions{
			BaseURL:             o.BaseURL,
			APIKey:              key,
			APIKeyEnv:           o.APIKeyEnv,
			Model:               o.Model,
			SystemPrompt:        o.SystemPrompt,
			Temperature:         o.Temperature,
			MaxTokens:           o.MaxTokens,
			RequestTimeout:      time.Duration(o.RequestTimeoutSec) * time.Second,
			MaxToolSteps:        o.MaxToolSteps,
			ContextBudgetTokens: o.ContextBudgetTokens,
			Logger:              logger,
		})
		if err != nil {
			return nil, err
		}
		return oa, nil
	case "command":
		c := a.Command
		env := make([]string, 0, len(c.Env)+len(c.PassEnv))
		for k, v := range c.Env { // keys are unique, so order does not matter
			env = append(env, k+"="+v)
		}
		for _, k := range c.PassEnv { // after env: a passed variable wins
			if v := getenv(k); v != "" {
				env = append(env, k+"="+v)
			}
		}
		return &agent.Command{Argv: c.Argv, Env: env, Timeout: time.Duration(c.TimeoutSec) * time.Second, Logger: logger}, nil
	}
	return &agent.Demo{Delay: time.Duration(cfg.Agent.Demo.DelayMS) * time.Millisecond}, nil
}

// checkConfig reports the effective configuration and whether the agent
// backend answers (a cheap request: the model list, or the program exists).
func checkConfig(ctx context.Context, cfg config.Config, getenv func(string) string, stdout io.Writer) error {
	fmt.Fprintf(stdout, "config ok: listening on %s, data in %s, agent %s\n", cfg.Server.Addr, cfg.DataDir, cfg.Agent.Backend)
	ag, err := newAgent(cfg, getenv, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	if checker, ok := ag.(interface{ Check(context.Context) error }); ok {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := checker.Check(cctx)
		cancel()
		if err != nil {
			return fmt.Errorf("agent backend %s is not reachable: %w", cfg.Agent.Backend, err)
		}
		fmt.Fprintf(stdout, "agent backend %s: reachable\n", cfg.Agent.Backend)
	}
	// Each MCP server is started (or dialled), asked for its tools and
	// stopped.
	if tools := newMCPManager(cfg, getenv, slog.New(slog.DiscardHandler)); tools != nil {
		lines, err := tools.Check(ctx)
		for _, l := range lines {
			fmt.Fprintln(stdout, l)
		}
		return err
	}
	return nil
}
