package config

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
)

// MCP configures the Model Context Protocol server (the history tools at
// /mcp).
type MCP struct {
	// Serve mounts /mcp: the history tools (history_search, history_recent,
	// history_range) over MCP streamable HTTP, behind the same token and
	// Origin/Host rules as /api/*. Default false.
	Serve bool `yaml:"serve"`
	// ServeSend adds the send_message tool, which puts a message into the
	// shared conversation (channel "mcp") and returns the reply. Default
	// false; it needs Serve.
	ServeSend bool `yaml:"serve_send"`
	// Servers are the MCP servers whose tools the assistant may use.
	// Default none.
	Servers []MCPServer `yaml:"servers"`
	// ApprovalTimeoutSec denies a call that needs approval when nobody
	// answers within it. Default 300.
	ApprovalTimeoutSec int `yaml:"approval_timeout_sec"`
	// MaxTools caps the tools one model request carries, frontdesk's own
	// (history, schedules) included: the servers' tools past it are left
	// out, in the order of Servers. 1 to 1024; default 128 (OpenAI's limit).
	MaxTools int `yaml:"max_tools"`
	// Approvals: who may answer an approval request.
	Approvals MCPApprovals `yaml:"approvals"`
}

// MCPApprovals is mcp.approvals.
type MCPApprovals struct {
	// NotSelf refuses an approval from the person whose turn asked for
	// the tool call (they may still deny it): someone else must approve
	// it. Default false.
	NotSelf bool `yaml:"not_self"`
}

// MCPServer is one MCP server the assistant uses: a stdio command or a
// streamable HTTP URL.
type MCPServer struct {
	// Name prefixes the server's tools (<name>__<tool>): a lower-case
	// letter, then up to 31 lower-case letters, digits, _ or -; unique.
	Name string `yaml:"name"`
	// Command and Args start a stdio server (in its own process group,
	// stopped with frontdesk). It gets only PATH, HOME and PassEnv from
	// frontdesk's environment.
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	PassEnv []string `yaml:"pass_env"`
	// URL is a streamable HTTP server instead of Command.
	URL string `yaml:"url"`
	// HeadersEnv sends headers whose values come from environment
	// variables: {Authorization: INTRANET_TOKEN}.
	HeadersEnv map[string]string `yaml:"headers_env"`
	// Tools, if not empty, offers only these of the server's tools.
	Tools []string `yaml:"tools"`
	// Confirm lists the tools (globs: "*", "write_*") whose every call a
	// person must approve first, from any door. Default none.
	Confirm []string `yaml:"confirm"`
	// TimeoutSec bounds one tool call. Default 60.
	TimeoutSec int `yaml:"timeout_sec"`
}

// mcpName is what an MCP server may be called: it becomes a tool-name
// prefix, which model APIs restrict.
var mcpName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

func (c *Config) validateMCPServers(bad badFunc) {
	seen := map[string]bool{}
	for i := range c.MCP.Servers {
		s := &c.MCP.Servers[i]
		key := fmt.Sprintf("mcp.servers[%d]", i)
		switch {
		case !mcpName.MatchString(s.Name):
			bad(key+".name", "%q: use a lower-case letter, then up to 31 lower-case letters, digits, _ or -", s.Name)
		case seen[s.Name]:
			bad(key+".name", "%q is used twice; names must be unique", s.Name)
		}
		seen[s.Name] = true
		switch {
		case (s.Command == "") == (s.URL == ""):
			bad(key, "set either command (a stdio server) or url (streamable HTTP), not both or neither")
		case s.URL != "":
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(key+".url", "%q is not an http(s) URL", s.URL)
			}
			if len(s.Args) > 0 || len(s.PassEnv) > 0 {
				bad(key, "args and pass_env go with command, not url")
			}
		default:
			if len(s.HeadersEnv) > 0 {
				bad(key+".headers_env", "goes with url, not command")
			}
		}
		for _, g := range s.Confirm {
			if _, err := path.Match(g, ""); err != nil {
				bad(key+".confirm", "%q is not a valid glob (use *, ?, [a-z])", g)
			}
		}
		for _, v := range s.PassEnv {
			if !envName(v) {
				bad(key+".pass_env", "%q is not an environment variable name", v)
			}
		}
		for h, v := range s.HeadersEnv {
			if !envName(v) {
				bad(key+".headers_env."+h, "%q is not an environment variable name", v)
			}
		}
		if s.TimeoutSec == 0 {
			s.TimeoutSec = 60
		}
		if s.TimeoutSec < 1 || s.TimeoutSec > 3600 {
			bad(key+".timeout_sec", "%d: use 1 to 3600 seconds (default 60)", s.TimeoutSec)
		}
	}
}
