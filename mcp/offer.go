package mcp

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxTools is mcp.max_tools: what chat-completions backends accept
// in one request (OpenAI refuses more than 128 tools).
const DefaultMaxTools = 128

// toolName is what a tool may be called as the model sees it
// (<server>__<tool>): OpenAI's rule for function names, which other
// backends share or are looser than. A server's tool whose full name does
// not match is left out: one such tool would make every request fail.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// SkippedTool is a tool a server offers that the model is not given.
type SkippedTool struct {
	Name   string `json:"name"` // as the server sent it, cut to 80 characters
	Reason string `json:"reason"`
}

// maxSkippedListed caps the skipped tools listed per server in States;
// SkippedCount has them all.
const maxSkippedListed = 20

// Reasons a tool is skipped.
const (
	reasonBadName  = "its name as the model would see it (<server>__<tool>) does not match ^[a-zA-Z0-9_-]{1,64}$"
	reasonMaxTools = "over mcp.max_tools (%d tools a request, the built-in tools included)"
)

// offer keeps the tools on the allowlist (all when there is none) and
// splits off those whose full name a backend would refuse.
func (c *client) offer(tools []*sdk.Tool) (kept []*sdk.Tool, skipped []SkippedTool) {
	for _, t := range tools {
		switch {
		case len(c.cfg.Tools) > 0 && !slices.Contains(c.cfg.Tools, t.Name):
			// not wanted: left out by the configuration, not skipped
		case !toolName.MatchString(c.cfg.Name + ToolSeparator + t.Name):
			skipped = append(skipped, SkippedTool{Name: shorten(t.Name, 80), Reason: reasonBadName})
		default:
			kept = append(kept, t)
		}
	}
	return kept, skipped
}

// shorten cuts s to n runes, marking the cut, and quotes nothing: the
// result goes into JSON and logs, which escape it.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// logSkipped says once, when a server's tools are listed, which are left
// out for their names.
func (c *client) logSkipped(skipped []SkippedTool) {
	if len(skipped) == 0 {
		return
	}
	c.m.logger.Warn("mcp server offers tools whose names a model backend refuses; they are left out",
		"server", c.cfg.Name, "count", len(skipped), "tools", skippedNames(skipped, 10), "rule", "^[a-zA-Z0-9_-]{1,64}$ after "+c.cfg.Name+ToolSeparator)
}

func skippedNames(skipped []SkippedTool, n int) string {
	names := make([]string, 0, min(len(skipped), n))
	for _, s := range skipped[:min(len(skipped), n)] {
		names = append(names, fmt.Sprintf("%q", s.Name))
	}
	if len(skipped) > n {
		names = append(names, fmt.Sprintf("and %d more", len(skipped)-n))
	}
	return strings.Join(names, ", ")
}
