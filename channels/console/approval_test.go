package console

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// The terminal shows a tool call that waits for approval with its id, and
// /approve lets it run; every client sees who answered.
func TestApproveFromTheTerminal(t *testing.T) {
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	var runs atomic.Int32
	m := hub.New(hub.Config{DataDir: dir, Tools: testagent.Confirmed("files__delete", &runs), Logger: slog.New(slog.DiscardHandler)},
		lg, testagent.CallTool{Name: "files__delete", Args: `{"path":"/tmp/x"}`})
	r, stop := runREPL(m)
	defer stop()
	typed, out, repl := r.typed, r.out, r.repl
	io.WriteString(typed, "delete the file\n")
	out.waitFor(t, "approval needed [a", 1)
	if !strings.Contains(out.String(), `files__delete {"path":"/tmp/x"}`) {
		t.Errorf("the request does not show the call:\n%s", out.String())
	}
	io.WriteString(typed, "/approve\n") // the only one waiting
	out.waitFor(t, "approved (by console)", 1)
	out.waitFor(t, "done", 1)
	io.WriteString(typed, "/deny a1\n")
	out.waitFor(t, "deny failed: no tool call is waiting", 1)
	typed.Close()
	if err := <-repl; err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 {
		t.Errorf("%d runs", runs.Load())
	}
}

// The terminal's approval line for a memory tool says the text to
// remember, not only the call's JSON (memory.save_approval always makes a
// save from the terminal ask).
func TestApprovalOfMemorySaveShowsText(t *testing.T) {
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	items, err := memory.OpenItems(filepath.Join(dir, "memory"))
	if err != nil {
		t.Fatal(err)
	}
	m := hub.New(hub.Config{DataDir: dir, Items: items, MemorySaveApproval: hub.SaveApprovalAlways, Logger: slog.New(slog.DiscardHandler)},
		lg, testagent.CallTool{Name: "memory_save", Args: `{"text":"The wifi password is hunter2."}`})
	r, stop := runREPL(m)
	defer stop()
	io.WriteString(r.typed, "remember the wifi password\n")
	r.out.waitFor(t, "approval needed [a", 1)
	r.out.waitFor(t, "memory_save — Remember: The wifi password is hunter2. — /approve", 1)
	io.WriteString(r.typed, "/deny\n")
	r.out.waitFor(t, "denied (by console)", 1)
	r.typed.Close()
	if err := <-r.repl; err != nil {
		t.Fatal(err)
	}
	if n := items.Len(); n != 0 {
		t.Errorf("%d items after the denial", n)
	}
}
