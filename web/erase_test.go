package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/erasure"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/web"
)

// eraseEnv is a session with its chat log, index and an erasure.Applier
// wired as serve wires them.
type eraseEnv struct {
	hub     *hub.SessionManager
	srv     *httptest.Server
	applier *erasure.Applier
}

func startErase(t *testing.T) *eraseEnv {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "chat_history.ndjson")
	lg, err := history.Open(history.Options{Path: path, RotateMB: 5, Fsync: history.FsyncNever})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.NewFollower(index.FollowerOptions{Path: filepath.Join(dir, index.FileName),
		Log: history.NewReader(path).Since, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ap := &erasure.Applier{Log: lg, Index: ix, AuditDir: filepath.Join(dir, "audit"), Logger: slog.New(slog.DiscardHandler)}
	m := hub.New(hub.Config{DataDir: dir, History: history.NewReader(path), Index: ix, Erased: ap.Later,
		Logger: slog.New(slog.DiscardHandler)}, lg, &agent.Demo{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); go ix.Run(ctx); m.Run(ctx) }()
	wsh := ws.New(m, ws.Options{})
	srv := httptest.NewServer(web.Handler(m, web.Options{WS: wsh, Messages: webhook.New(m, webhook.Options{})}))
	t.Cleanup(func() {
		cancel()
		<-done
		ap.Wait()
		srv.Close()
		wsh.Wait(context.Background())
		lg.Close()
	})
	return &eraseEnv{hub: m, srv: srv, applier: ap}
}

// turn runs one input to its end and returns the seqs of its user and
// assistant events and of its turn_end.
func (e *eraseEnv) turn(t *testing.T, content string) (user, reply, end int64) {
	t.Helper()
	out := make(chan hub.TurnOutcome, 1)
	res, err := e.hub.Submit(context.Background(), hub.Input{Channel: event.ChannelWebhook, Content: content, Done: out})
	if err != nil {
		t.Fatal(err)
	}
	<-out
	evs, err := e.hub.Recent(context.Background(), 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Turn != res.Turn {
			continue
		}
		switch ev.Type {
		case event.User:
			user = ev.Seq
		case event.Assistant:
			reply = ev.Seq
		case event.TurnEnd:
			end = ev.Seq
		}
	}
	if user == 0 || reply == 0 || end == 0 {
		t.Fatalf("turn %s: user %d, reply %d, end %d", res.Turn, user, reply, end)
	}
	return user, reply, end
}

// dialSince connects a WebSocket client that last saw since and returns
// what it got up to synced.
func dialSince(t *testing.T, url string, since int64) (*websocket.Conn, []event.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+fmt.Sprintf("/ws?since=%d", since), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	var got []event.Event
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		var e event.Event
		json.Unmarshal(b, &e)
		if e.Type == event.Synced {
			return c, got
		}
		got = append(got, e)
	}
}

// TestEraseEndpoint: DELETE /api/history/{seq} erases a message: 200
// {seq, erased}; every connected client gets the erased event; a client
// that left before and comes back with since gets it in its replay, and
// one that starts afresh gets the tombstone in place of the message; the
// history API shows the tombstone and search finds the text no more.
// Refusals: 404 unknown seq, 409 not a message or already erased, 400 a
// bad seq.
func TestEraseEndpoint(t *testing.T) {
	e := startErase(t)
	user, reply, end := e.turn(t, "the wifi password is quokkablue")
	a, b := peer(t, e.srv.URL), peer(t, e.srv.URL)
	rude, _ := dialSince(t, e.srv.URL, 0)
	rude.CloseNow() // it leaves without a word, having seen everything up to end

	for _, seq := range []int64{user, reply} {
		r := do(t, request(t, "DELETE", fmt.Sprintf("%s/api/history/%d", e.srv.URL, seq), ""))
		if r.status != 200 || r.body["seq"] != float64(seq) || r.body["erased"] != true {
			t.Fatalf("DELETE %d = %d %s, want 200 {seq:%d, erased:true}", seq, r.status, r.raw, seq)
		}
		for _, p := range []*wsPeer{a, b} {
			var d event.ErasedData
			if err := p.until(event.Erased).Decode(&d); err != nil || d.Seq != seq || d.By != "api" {
				t.Errorf("erased event %+v (%v), want seq %d by api", d, err, seq)
			}
		}
	}
	e.applier.Wait()

	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{fmt.Sprint(user), 409, "already_erased"},
		{fmt.Sprint(end), 409, "not_a_message"},
		{"9999", 404, "not_found"},
		{"0", 400, "bad_seq"},
		{"-3", 400, "bad_seq"},
		{"abc", 400, "bad_seq"},
		{"1.5", 400, "bad_seq"},
	} {
		r := do(t, request(t, "DELETE", e.srv.URL+"/api/history/"+c.path, ""))
		if r.status != c.status || r.body["code"] != c.code {
			t.Errorf("DELETE /api/history/%s = %d %s, want %d %s", c.path, r.status, r.raw, c.status, c.code)
		}
	}

	_, resumed := dialSince(t, e.srv.URL, end)
	erased := map[int64]bool{}
	for _, ev := range resumed {
		var d event.ErasedData
		if ev.Type == event.Erased && ev.Decode(&d) == nil {
			erased[d.Seq] = true
		}
	}
	if !erased[user] || !erased[reply] {
		t.Errorf("a client resuming with since=%d got %v; want the erased events of %d and %d", end, resumed, user, reply)
	}
	_, fresh := dialSince(t, e.srv.URL, 0)
	checkTombstones(t, "a fresh client's replay", fresh, user, reply)
	for _, q := range []string{"recent?n=50", fmt.Sprintf("range?from=%d&to=%d", user, reply)} {
		r := do(t, request(t, "GET", e.srv.URL+"/api/history/"+q, ""))
		var page struct{ Events []event.Event }
		json.Unmarshal([]byte(r.raw), &page)
		checkTombstones(t, "/api/history/"+q, page.Events, user, reply)
	}
	r := do(t, request(t, "GET", e.srv.URL+"/api/history/search?q=quokkablue", ""))
	if hits, _ := r.body["hits"].([]any); r.status != 200 || len(hits) != 0 {
		t.Errorf("search for the erased word = %d %s; want 200 and no hits", r.status, r.raw)
	}
}

// checkTombstones checks that evs hold the tombstones of seqs with their
// seq and type, empty content, and nothing of the erased text.
func checkTombstones(t *testing.T, where string, evs []event.Event, seqs ...int64) {
	t.Helper()
	found := 0
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		if strings.Contains(string(b), "quokkablue") {
			t.Errorf("%s: %s still holds the erased text", where, b)
		}
		for _, s := range seqs {
			if ev.Seq == s {
				found++
				if m, _ := ev.Message(); !event.IsTombstone(ev) || m.Content != "" {
					t.Errorf("%s: seq %d is %s, want its tombstone", where, s, b)
				}
			}
		}
	}
	if found != len(seqs) {
		t.Errorf("%s: %d of the seqs %v, want all", where, found, seqs)
	}
}
