package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/mcp"
	"github.com/frontdesk-hq/frontdesk/people"
)

// send_message's input is the token's person's (people.Who in the
// request's context, as the web guard sets it).
func TestSendMessageNamesTheTokensPerson(t *testing.T) {
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: history.FsyncNever})
	if err != nil {
		t.Fatal(err)
	}
	ppl := people.New([]config.Person{{ID: "ci", Kind: people.KindService, Permissions: []string{event.PermTalk}}})
	h := hub.New(hub.Config{DataDir: dir, Gate: ppl}, lg, &agent.Demo{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	mh := mcp.Handler(mcp.NewServer("test", []agent.Tool{mcp.SendTool(h, mcp.SendOptions{})}), mcp.HTTPOptions{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mh.ServeHTTP(w, r.WithContext(people.NewContext(r.Context(), people.Who{Person: ppl.Get("ci"), Via: "token"})))
	}))
	t.Cleanup(func() { cancel(); <-done; srv.Close(); lg.Close() })
	cs, err := connect(t, srv.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	if out, isErr := call(t, cs, "send_message", map[string]any{"content": "hello"}); isErr {
		t.Fatalf("send_message: %s", out)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	evs, err := h.Recent(cctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		var u event.UserData
		if e.Type == event.User && e.Decode(&u) == nil {
			if u.Person != "ci" || u.Channel != mcp.Channel {
				t.Fatalf("user event %+v, want person ci on mcp", u)
			}
			return
		}
	}
	t.Fatal("no user event")
}
