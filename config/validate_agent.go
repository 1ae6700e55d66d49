package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// badFunc records one problem: the key and how to fix it.
type badFunc = func(key, format string, args ...any)

// envName reports whether s is a valid environment variable name.
func envName(s string) bool {
	for i, r := range s {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (r < '0' || r > '9' || i == 0) {
			return false
		}
	}
	return s != ""
}

// validateOpenAI checks agent.openai (its model only when it is the backend).
func (c *Config) validateOpenAI(bad badFunc) {
	o := c.Agent.OpenAI
	if o.BaseURL != "" {
		if u, err := url.Parse(o.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("agent.openai.base_url", "%q is not an http(s) URL; use e.g. http://127.0.0.1:11434/v1, or leave it empty for https://api.openai.com/v1", o.BaseURL)
		}
	}
	if c.Agent.Backend == "openai" && strings.TrimSpace(o.Model) == "" {
		bad("agent.openai.model", "must name a model the server knows, e.g. gpt-4o-mini or llama3.2")
	}
	if o.APIKeyEnv != "" && !envName(o.APIKeyEnv) {
		bad("agent.openai.api_key_env", "%q is not an environment variable name", o.APIKeyEnv)
	}
	if t := o.Temperature; t != nil && (*t < 0 || *t > 2) {
		bad("agent.openai.temperature", "%g is out of range; use 0 to 2, or null for the server's default", *t)
	}
	if o.MaxTokens < 0 {
		bad("agent.openai.max_tokens", "must not be negative; 0 leaves it to the server")
	}
	if o.RequestTimeoutSec < 1 {
		bad("agent.openai.request_timeout_sec", "must be at least 1 (default 120)")
	}
	if o.MaxToolSteps < 0 || o.MaxToolSteps > 100 {
		bad("agent.openai.max_tool_steps", "must be 0 (no tools) to 100 (default 8)")
	}
	if o.ContextBudgetTokens < 1000 {
		bad("agent.openai.context_budget_tokens", "must be at least 1000 (default 12000)")
	}
}

// validateCommand checks agent.command (its argv only when it is the backend).
func (c *Config) validateCommand(bad badFunc) {
	cmd := c.Agent.Command
	if c.Agent.Backend == "command" && (len(cmd.Argv) == 0 || strings.TrimSpace(cmd.Argv[0]) == "") {
		bad("agent.command.argv", "must name the program to run, e.g. [\"/usr/local/bin/my-agent\", \"--json\"]")
	}
	for _, k := range slices.Sorted(maps.Keys(cmd.Env)) {
		if !envName(k) {
			bad("agent.command.env", "%q is not an environment variable name", k)
		}
	}
	for i, k := range cmd.PassEnv {
		if !envName(k) {
			bad(fmt.Sprintf("agent.command.pass_env[%d]", i), "%q is not an environment variable name", k)
		}
	}
	if cmd.TimeoutSec < 0 {
		bad("agent.command.timeout_sec", "must be 0 (no limit) or a positive number of seconds (default 300)")
	}
}
