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
	"os"
	"os/signal"
	"syscall"
	"time"
	// The time-zone database, built in (400 KB): schedules name
	// zones, and the static binary may run where /usr/share/zoneinfo is
	// missing (the FROM scratch image).
	_ "time/tzdata"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/console"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/internal/logging"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	// SIGQUIT (Ctrl-\ in a terminal) stops cleanly too, instead of the Go
	// runtime's goroutine dump: it is the documented way to stop the server
	// from the terminal it runs in.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGQUIT)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "frontdesk:", err)
		// A request refused as given (frontdesk token …) exits 2.
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
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
			"       frontdesk healthcheck [-addr HOST:PORT]   exit 0 when the server's /healthz answers 200\n"+
			"       frontdesk token add|list|revoke …        people's API tokens (frontdesk token -h)\n"+
			"       frontdesk login-link <person>            a one-time sign-in link for the web page\n\nflags:\n")
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
		case "token": // people's credentials (cmd_token.go)
			return runToken(args[2:], stdout, stderr)
		case "login-link":
			return runLoginLink(args[2:], stdout, stderr)
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

	cfg, err := config.ForCommand(*cfgPath, *addr, *dataDir)
	if err != nil {
		return err
	}
	if err := checkSecrets(cfg, getenv); err != nil {
		return err
	}
	token := cfg.AuthTokenValue(getenv)
	if cmd == "check-config" {
		return checkConfig(ctx, cfg, getenv, stdout)
	}
	// Logs go through a sink the console can point at its prompt-aware writer.
	logs := console.NewLogSink(stderr)
	logger := logging.Setup(cfg, getenv, logs)
	return serve(ctx, cfg, token, logger, logs, stdin, stdout, getenv)
}

// checkExposure refuses to listen beyond loopback without a token.
func checkExposure(cfg config.Config, token string) error {
	host, _, _ := net.SplitHostPort(cfg.Server.Addr)
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	if token == "" && len(cfg.People) == 0 {
		return fmt.Errorf("refusing to listen on %s without an auth token: set the %s environment variable "+
			"(or server.auth_token in the config), list people (each signs in with their own token or link), "+
			"or listen on 127.0.0.1", cfg.Server.Addr, cfg.Server.AuthTokenEnv)
	}
	return nil
}

// checkSecrets checks what the environment gives before anything starts
// (check-config as serve): the shared token's strength, a named OIDC
// client secret variable that is set, and that a public address asks for
// a credential (a shared token, or people who sign in).
func checkSecrets(cfg config.Config, getenv func(string) string) error {
	if err := cfg.CheckAuthToken(getenv); err != nil {
		return err
	}
	if _, err := cfg.OIDCClientSecret(getenv); err != nil {
		return err
	}
	return checkExposure(cfg, cfg.AuthTokenValue(getenv))
}

// files (nil for check-config) gives the backends the attachments' bytes.
func newAgent(cfg config.Config, getenv func(string) string, logger *slog.Logger, files agent.Files) (agent.Agent, error) {
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
			Vision:              o.Vision,
			Files:               files,
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
		return &agent.Command{Argv: c.Argv, Env: env, Timeout: time.Duration(c.TimeoutSec) * time.Second, Logger: logger, Files: files}, nil
	}
	return &agent.Demo{Delay: time.Duration(cfg.Agent.Demo.DelayMS) * time.Millisecond}, nil
}
