package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
)

// wsWatch dials the binary's /ws and returns a function that reads frames
// until match says yes.
func wsWatch(t *testing.T, ctx context.Context, url string) (*websocket.Conn, func(match func(event.Event) bool) event.Event) {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c, func(match func(event.Event) bool) event.Event {
		t.Helper()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			var e event.Event
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("bad frame %s", b)
			}
			if match(e) {
				return e
			}
		}
	}
}

// TestDemoReminderReachesEveryClient is the "done when" with the
// built-in demo agent, in seconds instead of a minute: one client types
// "remind me in 2 seconds to stretch"; the demo agent calls
// schedule_create; two seconds later the reminder enters the session and
// both clients see it and its reply.
func TestDemoReminderReachesEveryClient(t *testing.T) {
	dir := t.TempDir()
	p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, readA := wsWatch(t, ctx, p.url)
	_, readB := wsWatch(t, ctx, p.url)
	for _, read := range []func(func(event.Event) bool) event.Event{readA, readB} {
		read(func(e event.Event) bool { return e.Type == event.Synced })
	}
	msg, _ := json.Marshal(map[string]string{"type": "message", "content": "remind me in 2 seconds to stretch", "client_msg_id": "c-1"})
	if err := a.Write(ctx, websocket.MessageText, msg); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func(func(event.Event) bool) event.Event{"a": readA, "b": readB} {
		call := read(func(e event.Event) bool { return e.Type == event.ToolCall })
		if !strings.Contains(string(call.Data), "schedule_create") {
			t.Fatalf("%s: tool call %s", name, call.Data)
		}
		u := read(func(e event.Event) bool { return e.Type == event.User && userData(e).Channel == event.ChannelSchedule })
		if d := userData(u); d.Content != "Reminder: stretch" || d.ScheduleID == "" {
			t.Fatalf("%s: fired input %+v", name, d)
		}
		reply := read(func(e event.Event) bool { return e.Type == event.Assistant && e.Turn == u.Turn })
		if !strings.Contains(string(reply.Data), "Reminder: stretch") {
			t.Fatalf("%s: reply %s", name, reply.Data)
		}
	}
}

// TestScheduleFiringSurvivesKill9 kills the binary with SIGKILL in the
// state a crash between "record" and "run" leaves on disk (the firing in
// schedules.json, nothing in the chat log), restarts it: the firing runs
// once. Killed again after that and restarted, it does not run again.
func TestScheduleFiringSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-addr", "127.0.0.1:0", "-data", "state"}
	p := startBinary(t, dir, nil, args...)
	resp, err := http.Post(p.url+"/api/schedules", "application/json",
		bytes.NewReader([]byte(`{"content":"Reminder: feed the cat","in_seconds":3600}`)))
	if err != nil {
		t.Fatal(err)
	}
	var made struct {
		ID      string    `json:"id"`
		NextRun time.Time `json:"next_run"`
	}
	json.NewDecoder(resp.Body).Decode(&made)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || made.ID == "" {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	p.cmd.Process.Kill()
	<-p.exited
	p.exited <- nil

	key := recordFiring(t, filepath.Join(dir, "state", "schedules.json"), made.ID)
	logPath := filepath.Join(dir, "state", "chat_history.ndjson")
	runs := func() (n int, ended bool) { return runsOf(t, logPath, key) }
	for round := range 2 {
		p = startBinary(t, dir, nil, args...)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, read := wsWatch(t, ctx, p.url)
		if round == 0 {
			read(func(e event.Event) bool { return e.Type == event.TurnEnd })
		} else {
			read(func(e event.Event) bool { return e.Type == event.Synced })
			// Until the scheduler has settled the firing (offered again,
			// answered as a duplicate): the one-shot then leaves the list.
			for deadline := time.Now().Add(10 * time.Second); ; {
				var list struct{ Schedules []any }
				testio.GetJSON(t, p.url+"/api/schedules", &list)
				if len(list.Schedules) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the recorded firing was never settled: %v", list.Schedules)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		cancel()
		p.cmd.Process.Kill()
		<-p.exited
		p.exited <- nil
		if n, ended := runs(); n != 1 || (round == 0 && !ended) {
			t.Fatalf("round %d: the firing is in the chat log %d times (ended %v), want once", round, n, ended)
		}
	}
}

// recordFiring writes into schedules.json what fire writes before it
// submits: a firing of the schedule id, due 30 s ago. It returns its key.
func recordFiring(t *testing.T, path, id string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	json.Unmarshal(b, &f)
	sc := f["schedules"].([]any)[0].(map[string]any)
	due := time.Now().Add(-30 * time.Second).UTC().Truncate(time.Second)
	key := "schedule:" + id + ":" + jsonInt(due.Unix())
	sc["next_run"], sc["last_run"] = nil, due
	sc["firing"] = map[string]any{"due": due, "key": key}
	b, _ = json.Marshal(f)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return key
}

// runsOf counts the chat log's user events with client_msg_id key and
// says whether the last one's turn ended.
func runsOf(t *testing.T, logPath, key string) (n int, ended bool) {
	t.Helper()
	evs, _, err := history.ReadTail(logPath, 10000)
	if err != nil {
		t.Fatal(err)
	}
	turn := ""
	for _, e := range evs {
		if e.Type == event.User && userData(e).ClientMsgID == key {
			n++
			turn = e.Turn
		}
		if e.Type == event.TurnEnd && e.Turn == turn && turn != "" {
			ended = true
		}
	}
	return n, ended
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestBinaryStartsWithDamagedSchedules: the binary started over a
// schedules.json of garbage serves (it used to refuse to start), keeps the
// file aside byte for byte, says so once in the log, in /healthz
// (degraded, 200, with the reason) and in GET /api/schedules (damaged,
// for the Scheduled panel), and makes new schedules. A content over
// schedules.max_content_bytes (default 4096) is refused and changes
// nothing on disk.
func TestBinaryStartsWithDamagedSchedules(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	garbage := []byte("{\"v\":1,\"schedules\":[{\"id\":\"s-1\",\"content\":\"cut he")
	if err := os.WriteFile(filepath.Join(state, "schedules.json"), garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startLogged(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state")

	var health struct {
		Status  string   `json:"status"`
		Reasons []string `json:"reasons"`
	}
	if code := testio.GetJSON(t, p.url+"/healthz", &health); code != http.StatusOK || health.Status != "degraded" ||
		len(health.Reasons) != 1 || !strings.Contains(health.Reasons[0], "schedules.json.damaged-") {
		t.Fatalf("/healthz %d %+v, want 200 degraded naming the kept file", code, health)
	}
	var list struct {
		Schedules []any `json:"schedules"`
		Damaged   struct {
			File, Message string
		} `json:"damaged"`
	}
	testio.GetJSON(t, p.url+"/api/schedules", &list)
	if len(list.Schedules) != 0 || list.Damaged.File == "" || list.Damaged.Message != health.Reasons[0] {
		t.Fatalf("/api/schedules %+v, want none and the damage", list)
	}
	if kept, err := os.ReadFile(filepath.Join(state, list.Damaged.File)); err != nil || !bytes.Equal(kept, garbage) {
		t.Fatalf("kept aside: %q, %v", kept, err)
	}
	if n := strings.Count(p.logs.all(), "schedules.json was damaged"); n != 1 {
		t.Fatalf("the damage is in the log %d times, want once:\n%s", n, p.logs.all())
	}

	post := func(body string) (int, map[string]any) {
		resp, err := http.Post(p.url+"/api/schedules", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := post(`{"content":"Reminder: after the damage","in_seconds":3600}`); code != http.StatusCreated || m["created_by"] != "api" {
		t.Fatalf("create after the damage: %d %v", code, m)
	}
	before, _ := os.ReadFile(filepath.Join(state, "schedules.json"))
	if code, m := post(`{"content":"` + strings.Repeat("x", 65000) + `","in_seconds":3600}`); code != http.StatusBadRequest || m["code"] != "content_too_long" {
		t.Fatalf("65,000 bytes of content: %d %v, want 400 content_too_long", code, m)
	}
	if after, _ := os.ReadFile(filepath.Join(state, "schedules.json")); !bytes.Equal(before, after) {
		t.Fatal("a refused schedule changed schedules.json")
	}
}
