package web_test

// The UI's pure modules (web/static/core.js and what it imports) are tested
// under node: go test runs each file of web/uitest here (TestUICore, the
// protocol reducer's, is in web_test.go).

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestUIMarkdownRenderer runs the renderer's node tests (web/uitest), which
// include the XSS cases, as part of go test.
func TestUIMarkdownRenderer(t *testing.T) { runNodeTest(t, "uitest/markdown.test.mjs") }

// TestUIHistoryCore runs the node tests of the reducer's history part
// (web/uitest/history.test.mjs; TestUICore in web_test.go runs the protocol
// ones): older pages prepended and deduplicated, jumps into loaded and
// unloaded ranges, the archive window, reset dividers, search, highlighting.
func TestUIHistoryCore(t *testing.T) { runNodeTest(t, "uitest/history.test.mjs") }

// TestUIDeskCore runs the desk's node tests (web/uitest/desk.test.mjs): an
// input refused with no_leader/no_answer sent again by itself with its
// client_msg_id, bounded; the header while no node runs the assistant;
// where a tab whose node died moves, and what it takes along.
func TestUIDeskCore(t *testing.T) { runNodeTest(t, "uitest/desk.test.mjs") }

func runNodeTest(t *testing.T, file string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is required in CI to test the UI core")
		}
		t.Skip("node not installed")
	}
	var out bytes.Buffer
	cmd := exec.Command(node, "--test", file)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("node --test %s failed:\n%s", file, out.String())
		}
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "# pass 1") || !strings.Contains(out.String(), "# fail 0") {
		t.Fatalf("unexpected node test output for %s:\n%s", file, out.String())
	}
}

// TestUIAttachmentsCore runs the tray's node tests (web/uitest/attachments.test.mjs).
func TestUIAttachmentsCore(t *testing.T) { runNodeTest(t, "uitest/attachments.test.mjs") }

// TestUIQueueCore runs the node tests of queued inputs in the reducer
// (web/uitest/queue.test.mjs): user.queued, turn_start, replaced, unknown types.
func TestUIQueueCore(t *testing.T) { runNodeTest(t, "uitest/queue.test.mjs") }

// TestUIEraseCore runs the node tests of erased messages in the reducer
// (web/uitest/erase.test.mjs): live erased events, tombstones in a replay.
func TestUIEraseCore(t *testing.T) { runNodeTest(t, "uitest/erase.test.mjs") }

// TestUIPeopleNames runs the node tests of names and permissions
// (web/uitest/people.test.mjs): "Ann · web", "by Bo · web", the cancel
// notice and reset naming the person, ids without a name, door-only
// labels for events without person, what a viewer may do.
func TestUIPeopleNames(t *testing.T) { runNodeTest(t, "uitest/people.test.mjs") }
