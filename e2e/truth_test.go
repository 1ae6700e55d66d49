package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdisk"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
)

// shown is every event of the shared stream that WebSocket clients were
// shown, across connections: what a seq named when it was shown.
type shown struct {
	mu    sync.Mutex
	bySeq map[int64]event.Event
	times map[int64]int // how often each seq was shown to this client
}

func newShown() *shown { return &shown{bySeq: map[int64]event.Event{}, times: map[int64]int{}} }

// follow reads c until match, recording every frame; it returns them all.
func (s *shown) follow(ctx context.Context, t *testing.T, c *wsClient, match func(event.Event) bool) []event.Event {
	t.Helper()
	evs := c.until(ctx, t, match)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range evs {
		if e.Seq == 0 {
			if e.Type.Persisted() && e.Type != event.TurnEnd {
				t.Fatalf("a %s event without a seq", e.Type)
			}
			continue
		}
		s.bySeq[e.Seq] = e
		s.times[e.Seq]++
	}
	return evs
}

func (s *shown) last() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for q := range s.bySeq {
		n = max(n, q)
	}
	return n
}

// matchLog checks that every seq shown names the same event in the chat
// log, that every logged event was shown exactly once, and returns the log.
func (s *shown) matchLog(t *testing.T, logPath string) []event.Event {
	t.Helper()
	logged, _, err := history.ReadTail(logPath, 10000)
	if err != nil {
		t.Fatal(err)
	}
	inLog := map[int64]event.Event{}
	for _, e := range logged {
		inLog[e.Seq] = e
		if n := s.times[e.Seq]; n != 1 {
			t.Errorf("logged seq %d (%s) was shown %d times, want once", e.Seq, e.Type, n)
		}
	}
	for q, e := range s.bySeq {
		l, ok := inLog[q]
		if !ok || l.Type != e.Type || l.Turn != e.Turn || !bytes.Equal(l.Data, e.Data) {
			t.Errorf("seq %d was shown as %s %s %s; the log has %s %s %s", q, e.Type, e.Turn, e.Data, l.Type, l.Turn, l.Data)
		}
	}
	return logged
}

// TestSeqsNameTheSameEventAfterKill9: a client watches a reply stream, the
// server is killed with SIGKILL mid-reply and restarted; the client resumes
// with the last seq it saw. Every seq it was ever shown names the event the
// log holds at that seq, and it sees every logged event exactly once.
func TestSeqsNameTheSameEventAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary twice")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("session: {fsync: always}\nagent: {demo: {delay_ms: 60}}\n"), 0o600)
	args := []string{"-addr", "127.0.0.1:0", "-data", "state", "-config", cfg}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := newShown()

	p := startLogged(t, dir, nil, args...)
	c := dialWS(ctx, t, p.url, 0)
	c.send(ctx, t, "tell me something long", "m-1")
	deltas := 0
	seen.follow(ctx, t, c, func(e event.Event) bool {
		if e.Type == event.Delta {
			deltas++
		}
		return deltas == 5
	})
	p.cmd.Process.Kill()
	<-p.exited
	p.exited <- nil

	p = startLogged(t, dir, nil, args...)
	c = dialWS(ctx, t, p.url, seen.last())
	seen.follow(ctx, t, c, func(e event.Event) bool { return e.Type == event.TurnEnd })
	c.send(ctx, t, "and now?", "m-2")
	seen.follow(ctx, t, c, func(e event.Event) bool {
		return e.Type == event.TurnEnd && turnEnd(e).Status == event.StatusCompleted
	})
	stopLogged(t, p)
	logged := seen.matchLog(t, filepath.Join(dir, "state", "chat_history.ndjson"))
	if got := fmt.Sprint(types(logged)); got != "[user turn_end user assistant turn_end]" {
		t.Fatalf("log %s", got)
	}
	if d := turnEnd(logged[1]); d.Status != event.StatusInterrupted {
		t.Fatalf("the killed turn ended %+v, want interrupted", d)
	}
}

// TestFullDiskReplyIsNotDone: on a full disk (a 1 MiB tmpfs) an input
// that fits and a reply that does not. The waiting webhook caller gets 507
// storage_full with status error, the WebSocket client a turn_end error
// storage_full; later inputs get 507; once space is back the log records
// why the turn failed before the next input, and after a restart nothing
// claims the server stopped.
func TestFullDiskReplyIsNotDone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	disk := testdisk.New(t)
	if !disk.Full {
		t.Skip("needs a tmpfs (root)")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("session: {fsync: always}\nagent: {demo: {delay_ms: 0}}\n"), 0o600)
	args := []string{"-addr", "127.0.0.1:0", "-data", disk.Dir, "-config", cfg}
	logPath := filepath.Join(disk.Dir, "chat_history.ndjson")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := newShown()

	p := startLogged(t, dir, nil, args...)
	c := dialWS(ctx, t, p.url, 0)
	padLastPage(ctx, t, p.url, logPath, func() {
		seen.follow(ctx, t, c, func(e event.Event) bool { return e.Type == event.TurnEnd })
	})
	disk.Fail()
	// A user line is its content and ~150 bytes; 60 bytes are left, too
	// few for any line.
	code, body := post(t, p.url, strings.Repeat("a", slack(t, logPath)-userOverhead(t, logPath)-60))
	var w struct{ Turn, Status, Code, Error string }
	json.Unmarshal(body, &w)
	if code != http.StatusInsufficientStorage || w.Status != event.StatusError || w.Code != "storage_full" || w.Turn == "" {
		t.Fatalf("the reply the disk refused: %d %s, want 507 status error code storage_full", code, body)
	}
	evs := seen.follow(ctx, t, c, func(e event.Event) bool { return e.Type == event.TurnEnd })
	end := evs[len(evs)-1]
	if d := turnEnd(end); end.Seq != 0 || d.Status != event.StatusError || d.Code != "storage_full" {
		t.Fatalf("clients were shown turn_end seq %d %s, want no seq, error storage_full", end.Seq, end.Data)
	}
	for _, e := range evs {
		if e.Type == event.Assistant {
			t.Fatalf("clients were shown a reply that is not on disk: %s", e.Data)
		}
	}
	if code, body := post(t, p.url, "still there?"); code != http.StatusInsufficientStorage {
		t.Fatalf("an input on the still-full disk: %d %s, want 507", code, body)
	}
	var health struct{ Status string }
	if code := testio.GetJSON(t, p.url+"/healthz", &health); code != http.StatusServiceUnavailable {
		t.Fatalf("/healthz on a full disk: %d %+v", code, health)
	}

	disk.Heal()
	if code, body := post(t, p.url, "space is back"); code != http.StatusOK {
		t.Fatalf("after the disk healed: %d %s", code, body)
	}
	// The owed turn_end, now with its seq, then the new turn.
	seen.follow(ctx, t, c, func(e event.Event) bool {
		return e.Type == event.TurnEnd && turnEnd(e).Status == event.StatusCompleted
	})
	p.cmd.Process.Kill()
	<-p.exited
	p.exited <- nil
	// What a restart makes of the log.
	p = startLogged(t, dir, nil, args...)
	stopLogged(t, p)
	logged := seen.matchLog(t, logPath)
	var failed event.TurnEndData
	for _, e := range logged {
		if e.Type == event.TurnEnd && e.Turn == w.Turn {
			failed = turnEnd(e)
		}
		if e.Type == event.TurnEnd && turnEnd(e).Status == event.StatusInterrupted {
			t.Fatalf("the log says a turn was interrupted: %s", e.Data)
		}
		if e.Type == event.Assistant && e.Turn == w.Turn {
			t.Fatalf("the refused reply is in the log")
		}
	}
	if failed.Status != event.StatusError || failed.Code != "storage_full" || !strings.Contains(failed.Error, "disk is full") {
		t.Fatalf("the failed turn's record: %+v", failed)
	}
}

// stopLogged stops p with SIGTERM and waits for it to exit cleanly.
func stopLogged(t *testing.T, p *loggedProc) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit within 10s of SIGTERM")
	}
}

// padLastPage runs turns until the chat log's last tmpfs page has room for
// an input but not for a reply after it; seen follows each turn's end.
func padLastPage(ctx context.Context, t *testing.T, url, logPath string, seen func()) {
	t.Helper()
	for i := 0; slack(t, logPath) < 400 || slack(t, logPath) > 3500; i++ {
		if i == 10 || ctx.Err() != nil {
			t.Fatal("the log's last page never had the room this test needs")
		}
		if code, _ := post(t, url, strings.Repeat("b", 900)); code != http.StatusOK {
			t.Fatalf("padding turn: %d", code)
		}
		seen()
	}
}

// post sends content through the webhook and waits for the reply.
func post(t *testing.T, url, content string) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"content": content})
	resp, err := http.Post(url+"/api/messages?wait=1", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes()
}

// slack is how many bytes the chat log's last tmpfs page has left.
func slack(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int((4096 - fi.Size()%4096) % 4096)
}

// userOverhead is the length of the last logged user line less its content.
func userOverhead(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e event.Event
		if json.Unmarshal(line, &e) == nil && e.Type == event.User {
			return len(line) + 1 - len(userData(e).Content) + 10 // the seq and turn may gain a digit
		}
	}
	t.Fatal("no user line in the log")
	return 0
}

func types(evs []event.Event) []event.Type {
	out := make([]event.Type, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}
