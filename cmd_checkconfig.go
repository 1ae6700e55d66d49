package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/clusterhub"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/embed"
	"github.com/frontdesk-hq/frontdesk/mcp"
)

// checkConfig (`frontdesk check-config`) reports the effective
// configuration and checks what it can reach: the cluster's NATS side,
// the agent backend (a cheap request: the model list, or the program
// exists), the embeddings server and the MCP servers. It prints what it
// found as it goes and "config ok" last, only when every check passed:
// never "config ok" and then an error.
func checkConfig(ctx context.Context, cfg config.Config, getenv func(string) string, stdout io.Writer) error {
	fmt.Fprintf(stdout, "config: listening on %s, data in %s, agent %s\n", cfg.Server.Addr, cfg.DataDir, cfg.Agent.Backend)
	for _, w := range cfg.PeopleWarnings(getenv) { // warnings, not failures
		fmt.Fprintln(stdout, "warning:", w)
	}
	for _, check := range []func(context.Context, config.Config, func(string) string, io.Writer) error{
		checkCluster, checkAgent, checkEmbeddings, checkMCP} {
		if err := check(ctx, cfg, getenv, stdout); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, "config ok")
	return nil
}

// checkCluster checks a cluster node's NATS side (package cluster's Check).
func checkCluster(ctx context.Context, cfg config.Config, getenv func(string) string, stdout io.Writer) error {
	if !cfg.Cluster.Enabled() {
		return nil
	}
	if err := clusterhub.CheckSecret(cfg, getenv); err != nil {
		return err
	}
	lines, err := cluster.Check(ctx, clusterhub.FromConfig(cfg, getenv))
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	return err
}

// checkAgent asks the agent backend whether it answers.
func checkAgent(ctx context.Context, cfg config.Config, getenv func(string) string, stdout io.Writer) error {
	ag, err := newAgent(cfg, getenv, slog.New(slog.DiscardHandler), nil)
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
	return nil
}

// checkEmbeddings embeds one word when search.embeddings is set.
func checkEmbeddings(ctx context.Context, cfg config.Config, getenv func(string) string, stdout io.Writer) error {
	e := cfg.Search.Embeddings
	if e.BaseURL == "" {
		return nil
	}
	key := ""
	if e.APIKeyEnv != "" {
		key = getenv(e.APIKeyEnv)
	}
	c, err := embed.New(embed.Options{BaseURL: e.BaseURL, Model: e.Model, APIKey: key, APIKeyEnv: e.APIKeyEnv, Batch: e.Batch})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := c.Embed(cctx, []string{"check-config"})
	if err == nil && len(v) != 1 {
		err = fmt.Errorf("%d vectors for one text", len(v))
	}
	if err != nil {
		return fmt.Errorf("search.embeddings: %s does not answer for model %s: %w", e.BaseURL, e.Model, err)
	}
	fmt.Fprintf(stdout, "search.embeddings %s: answering (model %s, %d dimensions)\n", e.BaseURL, e.Model, len(v[0]))
	return nil
}

// checkMCP starts (or dials) each MCP server, asks it for its tools and
// stops it.
func checkMCP(ctx context.Context, cfg config.Config, getenv func(string) string, stdout io.Writer) error {
	tools := mcp.FromConfig(version, cfg.MCP.Servers, getenv, slog.New(slog.DiscardHandler))
	if tools == nil {
		return nil
	}
	lines, err := tools.Check(ctx)
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	return err
}
