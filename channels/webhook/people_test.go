package webhook_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/people"
)

// The token's person is the message's person (a "from" stays a label);
// a person without talk gets 403 forbidden and nothing is recorded.
func TestWebhookNamesTheTokensPerson(t *testing.T) {
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	ppl := people.New([]config.Person{{ID: "ci", Kind: people.KindService, Permissions: []string{event.PermTalk}}, {ID: "bo", Role: people.RoleViewer}})
	gate := testagent.NewGate()
	m := hub.New(hub.Config{DataDir: dir, Gate: ppl}, lg, gate)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	h := webhook.New(m, webhook.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := people.Who{Person: ppl.Get(r.URL.Query().Get("as")), Via: "token"}
		h.ServeHTTP(w, r.WithContext(people.NewContext(r.Context(), who)))
	}))
	t.Cleanup(func() { gate.Release <- struct{}{}; cancel(); <-done; srv.Close(); lg.Close() })
	post := func(as string) (int, string) {
		resp, err := http.Post(srv.URL+"?as="+as, "application/json", strings.NewReader(`{"content":"ping","from":"bo"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("bo"); code != http.StatusForbidden || !strings.Contains(body, `"permission":"talk"`) {
		t.Fatalf("bo: %d %s, want 403 forbidden talk", code, body)
	}
	if info, _ := m.Info(ctxOf(t)); info.LastSeq != 0 {
		t.Fatalf("a refused message was recorded: last_seq %d", info.LastSeq)
	}
	if code, body := post("ci"); code != http.StatusAccepted {
		t.Fatalf("ci: %d %s", code, body)
	}
	evs, err := m.Recent(ctxOf(t), 1)
	if err != nil || len(evs) != 1 {
		t.Fatal(evs, err)
	}
	var u event.UserData
	_ = evs[0].Decode(&u)
	if u.Person != "ci" || u.From != "bo" {
		t.Fatalf("user event %+v, want person ci (from stays the label bo)", u)
	}
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
