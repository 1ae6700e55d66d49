package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// usePattern matches "use <tool> {json args}" (also "call" and "run"): the
// demo's way to try a tool — an MCP server's "<server>__<tool>" or one of
// frontdesk's own — without a model. The arguments are optional ({}).
var usePattern = regexp.MustCompile(`(?is)^\s*(?:please\s+)?(?:use|call|run)\s+(?:the\s+)?(?:tool\s+)?([A-Za-z0-9_.-]+)\s*(\{.*\})?\s*$`)

// toolUse is a parsed "use <tool> {args}".
type toolUse struct {
	name string
	args string // JSON text; "" when none was given
}

func parseUse(content string) (toolUse, bool) {
	m := usePattern.FindStringSubmatch(content)
	if m == nil {
		return toolUse{}, false
	}
	return toolUse{name: m[1], args: strings.TrimSpace(m[2])}, true
}

// use calls the named tool with the given arguments, the way a model
// would (a tool that needs approval waits for a person first: the hub
// asks), and says what came back.
func (d *Demo) use(ctx context.Context, req Request, u toolUse, emit Emitter) (string, error) {
	t := findTool(req.Tools, u.name)
	if t == nil {
		return noSuchTool(req.Tools, u.name), nil
	}
	args := []byte(u.args)
	if len(args) == 0 {
		args = []byte("{}")
	}
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil {
		return fmt.Sprintf("I did not call %s: its arguments must be one JSON object, such as {\"path\": \"/tmp\"} (%v).", u.name, err), nil
	}
	out, err := callTool(ctx, req.Turn, t, args, emit)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return fmt.Sprintf("I called %s with %s, and it failed: %v.", u.name, args, err), nil
	}
	return fmt.Sprintf("I called %s with %s. It answered: %s", u.name, args, clipRunes(out, 600)), nil
}

// noSuchTool names the tools there are, so the next try can be right.
func noSuchTool(tools []Tool, name string) string {
	if len(tools) == 0 {
		return fmt.Sprintf("There is no tool %s: no tools are configured. Add an MCP server under mcp.servers in config.yaml (see the README's “Tools”) and try again.", name)
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	sort.Strings(names)
	more := ""
	if len(names) > 20 {
		more = fmt.Sprintf(" and %d more", len(names)-20)
		names = names[:20]
	}
	return fmt.Sprintf("There is no tool %s. The tools I have: %s%s. Say “use <tool> {json arguments}”.", name, strings.Join(names, ", "), more)
}

func clipRunes(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
