// Package testchat reads a chat log whole for tests that check what it
// holds. It is imported only by tests.
package testchat

import (
	"context"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// ReadAll returns every event of the chat log at path (rotated parts
// included), failing the test on a malformed or partial line.
func ReadAll(t testing.TB, path string) []event.Event {
	t.Helper()
	evs, truncated, st, err := history.NewReader(path).Range(context.Background(), history.Bound{}, history.Bound{}, 0)
	if err != nil || truncated {
		t.Fatalf("read %s: %v (truncated %v)", path, err, truncated)
	}
	if st.Skipped > 0 {
		t.Fatalf("read %s: %d malformed or partial lines", path, st.Skipped)
	}
	return evs
}
