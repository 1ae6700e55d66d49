package mcp

import (
	"log/slog"
	"time"

	"github.com/frontdesk-hq/frontdesk/config"
)

// ServersFromConfig turns mcp.servers into the client's configs, reading
// the variables they name. A stdio server gets PATH and HOME (so npx and
// the like work) and its pass_env variables, nothing else of frontdesk's
// environment: no secret reaches a tool server unless passed by name.
func ServersFromConfig(servers []config.MCPServer, getenv func(string) string) []ServerConfig {
	out := make([]ServerConfig, 0, len(servers))
	for _, s := range servers {
		sc := ServerConfig{Name: s.Name, Command: s.Command, Args: s.Args, URL: s.URL, Tools: s.Tools, Confirm: s.Confirm,
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

// FromConfig returns the MCP client for the configured servers, or nil
// when there are none; version is frontdesk's, told to the servers.
func FromConfig(version string, servers []config.MCPServer, getenv func(string) string, logger *slog.Logger) *Manager {
	if len(servers) == 0 {
		return nil
	}
	return NewManager(version, ServersFromConfig(servers, getenv), logger)
}
