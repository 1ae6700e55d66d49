package main

import (
	"log/slog"
	"time"

	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/mcp"
)

// mcpServers turns mcp.servers into the client's configs, reading the
// variables they name. A stdio server gets PATH and HOME (so npx and the
// like work) and its pass_env variables, nothing else of frontdesk's
// environment: no secret reaches a tool server unless passed by name.
func mcpServers(cfg config.Config, getenv func(string) string) []mcp.ServerConfig {
	out := make([]mcp.ServerConfig, 0, len(cfg.MCP.Servers))
	for _, s := range cfg.MCP.Servers {
		sc := mcp.ServerConfig{Name: s.Name, Command: s.Command, Args: s.Args, URL: s.URL, Tools: s.Tools, Confirm: s.Confirm,
			Timeout: time.Duration(s.TimeoutSec) * time.Second}
		if s.Command != "" {
			for _, k := range append([]string{"PATH", "HOME"}, s.PassEnv...) {
				if v := getenv(k); v != "" {
					sc.Env = append(sc.Env, k+"="+v)
				}
			}
		}
		if len(s.HeadersEnv) > 0 {
			sc.Headers = map[string]string{}
			for h, k := range s.HeadersEnv {
				sc.Headers[h] = getenv(k)
			}
		}
		out = append(out, sc)
	}
	return out
}

// newMCPManager returns the MCP client for the configured servers, or nil
// when there are none.
func newMCPManager(cfg config.Config, getenv func(string) string, logger *slog.Logger) *mcp.Manager {
	if len(cfg.MCP.Servers) == 0 {
		return nil
	}
	return mcp.NewManager(version, mcpServers(cfg, getenv), logger)
}
