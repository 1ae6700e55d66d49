package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// rememberPattern matches "remember that X" (also "please remember that
// X", "remember: X"): something to keep in long-term memory. It must
// start the message, so "do you remember that film?" is not one.
var rememberPattern = regexp.MustCompile(`(?is)^\s*(?:please\s+)?remember(?:\s+that\b|\s*:)\s*(.+)$`)

// rememberText extracts X from "remember that X", if it is one.
func rememberText(content string) (string, bool) {
	m := rememberPattern.FindStringSubmatch(content)
	if m == nil {
		return "", false
	}
	text := strings.TrimSpace(m[1])
	if strings.Trim(text, ".!?…,;: ") == "" {
		return "", false
	}
	return text, true
}

// rememberedPattern matches "what do you remember about me?" (also
// "what do you know about me", "what do you remember", "what is in your
// memory", "show me your memory").
var rememberedPattern = regexp.MustCompile(`(?i)^\s*(?:so\s+|and\s+)?(?:what\s+do\s+you\s+(?:remember|know)(?:\s+about\s+(?:me|us))?|what(?:'s|’s|\s+is)\s+in\s+your\s+memory|(?:show|list)\s+(?:me\s+)?(?:your|the)\s+memory)\s*[?!.]*\s*$`)

// remember saves text with the memory_save tool, the way a model would:
// a tool_call, its tool_result, then a reply from it.
func (d *Demo) remember(ctx context.Context, req Request, text string, emit Emitter) (string, error) {
	save := findTool(req.Tools, "memory_save")
	if save == nil {
		return fmt.Sprintf("I cannot save anything to my memory right now, so I will not remember that %s.", text), nil
	}
	args, _ := json.Marshal(map[string]any{"text": text})
	out, err := callTool(ctx, req.Turn, save, args, emit)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return fmt.Sprintf("I tried to save that to my memory, but it failed: %v.", err), nil
	}
	var item struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal([]byte(out), &item)
	ref := ""
	if item.ID != "" {
		ref = " (memory " + item.ID + ")"
	}
	return fmt.Sprintf("Got it — I will remember: “%s”%s. You can see, edit or forget it in the web UI's Memory panel, or with /memory and /forget in the terminal.",
		text, ref), nil
}

// memoryLine is one item as the context carries it: "[m12] text" (see
// memory.Doc), perhaps as a list entry ("- [m12] text").
var memoryLine = regexp.MustCompile(`^\s*(?:[-*•]\s*)?\[([A-Za-z0-9_-]+)\]\s*(.+?)\s*$`)

// remembered answers "what do you remember about me?" from the memory
// the turn's context carries (Request.LongTermMemory), as a model would
// read it: each item with its id, the newest last.
func (d *Demo) remembered(_ context.Context, req Request, _ Emitter) (string, error) {
	var items []string
	more := ""
	for _, l := range strings.Split(req.LongTermMemory, "\n") {
		if m := memoryLine.FindStringSubmatch(l); m != nil {
			items = append(items, fmt.Sprintf("“%s” (%s)", clipRunes(m[2], 200), m[1]))
		} else if m := moreLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			more = fmt.Sprintf(" There %s %d more, older or less used, that I can find with a search.", plural(n, "is", "are"), n)
		}
	}
	if len(items) == 0 {
		if strings.TrimSpace(req.LongTermMemory) != "" {
			return "Here is what my long-term memory holds:\n\n" + clipRunes(req.LongTermMemory, 2000), nil
		}
		return "I do not remember anything about you yet. Tell me “remember that …” and I will; " +
			"you can also add, edit and forget what I remember in the web UI's Memory panel.", nil
	}
	return fmt.Sprintf("I remember %d %s: %s.%s You can edit or forget any of them in the web UI's Memory panel, with /forget <id> in the terminal, or by telling me “forget <id>”.",
		len(items), plural(len(items), "thing", "things"), strings.Join(items, "; "), more), nil
}

// moreLine is the context's note on the items it had no room for.
var moreLine = regexp.MustCompile(`^\s*\((\d+) older or less used`)

// forgetPattern matches "forget m12" (also "please forget item m12",
// "forget memory m12"): an item to delete by its id.
var forgetPattern = regexp.MustCompile(`(?i)^\s*(?:please\s+)?forget\s+(?:(?:memory\s+)?item\s+|memory\s+)?(m[0-9]+)\s*[.!]*\s*$`)

// forget deletes an item with the memory_forget tool, as a model would.
func (d *Demo) forget(ctx context.Context, req Request, id string, emit Emitter) (string, error) {
	tool := findTool(req.Tools, "memory_forget")
	if tool == nil {
		return fmt.Sprintf("I cannot change my memory right now, so I cannot forget %s.", id), nil
	}
	args, _ := json.Marshal(map[string]any{"id": id})
	if _, err := callTool(ctx, req.Turn, tool, args, emit); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return fmt.Sprintf("I could not forget %s: %v.", id, err), nil
	}
	return fmt.Sprintf("Done: I have forgotten %s.", id), nil
}
