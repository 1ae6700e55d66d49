// Package chattest is what the chat doors' tests share: a real session
// on a temporary data directory, a door run on it, and waiting for what
// the chat log records. It is imported only by tests.
package chattest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testchat"
)

// Session is a running hub over a chat log in Dir.
type Session struct {
	*hub.SessionManager
	Dir string
	t   testing.TB
}

// Start runs a session with ag in dir (t.TempDir() if ""); cfg's DataDir
// is filled in. It stops at the end of the test.
func Start(t testing.TB, dir string, cfg hub.Config, ag agent.Agent) *Session {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = dir
	m := hub.New(cfg, lg, ag)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; lg.Close() })
	return &Session{SessionManager: m, Dir: dir, t: t}
}

// Events reads the chat log.
func (s *Session) Events() []event.Event {
	return testchat.ReadAll(s.t, filepath.Join(s.Dir, "chat_history.ndjson"))
}

// Users returns the user events of the log.
func (s *Session) Users() []event.UserData {
	var out []event.UserData
	for _, e := range s.Events() {
		var u event.UserData
		if e.Type == event.User && e.Decode(&u) == nil {
			out = append(out, u)
		}
	}
	return out
}

// RunDoor runs d until the returned stop is called (or the test ends);
// stop waits for Run to return.
func RunDoor(t testing.TB, d *chat.Door) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("door Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("door Run did not return 10 s after its context ended")
		}
	}
	t.Cleanup(stop)
	return stop
}

// Eventually polls cond every 10 ms for up to 15 s.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
