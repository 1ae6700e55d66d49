package web_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/datadir"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdisk"
	"github.com/frontdesk-hq/frontdesk/memory"
	"github.com/frontdesk-hq/frontdesk/web"
)

// startMemory serves a session with a memory item store in a temporary
// data directory.
func startMemory(t *testing.T, o web.Options) *env {
	t.Helper()
	return startMemoryWith(t, o, &agent.Demo{})
}

// startMemoryWith is startMemory with the agent a and the webhook door.
func startMemoryWith(t *testing.T, o web.Options, a agent.Agent) *env {
	t.Helper()
	return startMemoryIn(t, o, a, hub.Config{}, nil)
}

// startMemoryEmbed is startMemoryWith with search by meaning through e
// (nil: keywords only).
func startMemoryEmbed(t *testing.T, o web.Options, a agent.Agent, e index.Embedder) *env {
	t.Helper()
	return startMemoryIn(t, o, a, hub.Config{}, e)
}

// startMemoryCfg is startMemoryWith over cfg (its data directory, item
// store, index, history and logger are set here).
func startMemoryCfg(t testing.TB, o web.Options, a agent.Agent, cfg hub.Config) *env {
	t.Helper()
	return startMemoryIn(t, o, a, cfg, nil)
}

func startMemoryIn(t testing.TB, o web.Options, a agent.Agent, cfg hub.Config, e index.Embedder) *env {
	t.Helper()
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o700); err != nil {
		t.Fatal(err)
	}
	items, err := memory.OpenItems(filepath.Join(dir, "memory"))
	if err != nil {
		t.Fatal(err)
	}
	// The search index, with the items: the panel's filter searches them.
	ix, err := index.NewFollower(index.FollowerOptions{Path: filepath.Join(dir, index.FileName),
		Log: history.NewReader(filepath.Join(dir, "chat_history.ndjson")).Since, Memory: datadir.MemoryDocs(items),
		Logger: slog.New(slog.DiscardHandler), Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir, cfg.Items, cfg.Index, cfg.Logger = dir, items, ix, slog.New(slog.DiscardHandler)
	cfg.History = history.NewReader(filepath.Join(dir, "chat_history.ndjson"))
	m := hub.New(cfg, lg, a)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); go ix.Run(ctx); m.Run(ctx) }()
	wsh := ws.New(m, ws.Options{})
	o.WS = wsh
	o.Messages = webhook.New(m, webhook.Options{})
	srv := httptest.NewServer(web.Handler(m, o))
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
		wsh.Wait(context.Background())
		lg.Close()
	})
	return &env{hub: m, srv: srv}
}

func memoryItems(t *testing.T, e *env) []memory.Item {
	t.Helper()
	r := do(t, request(t, "GET", e.srv.URL+"/api/memory", ""))
	if r.status != 200 {
		t.Fatalf("GET /api/memory = %d %s", r.status, r.raw)
	}
	var body struct{ Items []memory.Item }
	if err := json.Unmarshal([]byte(r.raw), &body); err != nil || body.Items == nil {
		t.Fatalf("GET /api/memory body %s: %v (want items, [] when none)", r.raw, err)
	}
	return body.Items
}

func TestMemoryAPI(t *testing.T) {
	e := startMemory(t, web.Options{})
	js := []string{"Content-Type", "application/json"}
	if got := memoryItems(t, e); len(got) != 0 {
		t.Fatalf("items at start: %+v", got)
	}
	r := do(t, request(t, "POST", e.srv.URL+"/api/memory", `{"text":"The user's car is a blue Volvo."}`, js...))
	if r.status != 201 || r.body["text"] != "The user's car is a blue Volvo." || r.body["source"] != "api" || r.body["id"] == "" ||
		r.body["created"] == nil || r.body["updated"] == nil {
		t.Fatalf("POST = %d %s", r.status, r.raw)
	}
	id := r.body["id"].(string)
	r = do(t, request(t, "PUT", e.srv.URL+"/api/memory/"+id, `{"text":"The user's car is a red Volvo."}`, js...))
	if r.status != 200 || r.body["id"] != id || r.body["text"] != "The user's car is a red Volvo." {
		t.Fatalf("PUT = %d %s", r.status, r.raw)
	}

	// Bad input: a clear error, and nothing lost or changed.
	for _, tc := range []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		code                     string
	}{
		{"empty text", "POST", "/api/memory", `{"text":"  "}`, js, 400, "empty_text"},
		{"oversize text", "POST", "/api/memory", `{"text":"` + strings.Repeat("a", memory.MaxItemChars+1) + `"}`, js, 400, "text_too_long"},
		{"not JSON", "POST", "/api/memory", `remember this`, js, 400, "bad_json"},
		{"no text", "POST", "/api/memory", `{"txt":"x"}`, js, 400, "bad_json"},
		{"text not a string", "POST", "/api/memory", `{"text":42}`, js, 400, "bad_json"},
		{"form post", "POST", "/api/memory", `text=x`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"body too large", "POST", "/api/memory", `{"text":"` + strings.Repeat("a", 4*memory.MaxItemChars+5000) + `"}`, js, 413, "too_large"},
		{"edit empty", "PUT", "/api/memory/" + id, `{"text":""}`, js, 400, "empty_text"},
		{"edit not JSON", "PUT", "/api/memory/" + id, `{"text":`, js, 400, "bad_json"},
		{"edit unknown", "PUT", "/api/memory/m999", `{"text":"x"}`, js, 404, "not_found"},
		{"delete unknown", "DELETE", "/api/memory/m999", ``, nil, 404, "not_found"},
	} {
		r := do(t, request(t, tc.method, e.srv.URL+tc.path, tc.body, tc.hdr...))
		if r.status != tc.status || r.body["code"] != tc.code || r.body["message"] == "" {
			t.Errorf("%s: %d %.200s, want %d %s with a message", tc.name, r.status, r.raw, tc.status, tc.code)
		}
	}
	if got := memoryItems(t, e); len(got) != 1 || got[0].ID != id || got[0].Text != "The user's car is a red Volvo." {
		t.Fatalf("items after the bad requests: %+v", got)
	}

	if r := do(t, request(t, "DELETE", e.srv.URL+"/api/memory/"+id, "")); r.status != 204 {
		t.Fatalf("DELETE = %d %s", r.status, r.raw)
	}
	if got := memoryItems(t, e); len(got) != 0 {
		t.Fatalf("items after DELETE: %+v", got)
	}
}

func TestMemoryAPINeedsToken(t *testing.T) {
	e := startMemory(t, web.Options{Token: "s3cret"})
	js := []string{"Content-Type", "application/json"}
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/api/memory", ""}, {"POST", "/api/memory", `{"text":"x"}`},
		{"PUT", "/api/memory/m1", `{"text":"x"}`}, {"DELETE", "/api/memory/m1", ""},
	} {
		if r := do(t, request(t, req.method, e.srv.URL+req.path, req.body, js...)); r.status != 401 {
			t.Errorf("%s %s without the token = %d, want 401", req.method, req.path, r.status)
		}
	}
	r := do(t, request(t, "POST", e.srv.URL+"/api/memory", `{"text":"x"}`, "Content-Type", "application/json", "Authorization", "Bearer s3cret"))
	if r.status != 201 {
		t.Fatalf("POST with the token = %d %s", r.status, r.raw)
	}
}

// A memory_forget the agent makes on a turn that came in by the webhook
// waits for a person's approval: the item stays until someone approves.
func TestMemoryForgetFromWebhookWaitsForApproval(t *testing.T) {
	e := startMemoryWith(t, web.Options{}, testagent.CallTool{Name: "memory_forget", Args: `{"id":"m1"}`})
	js := []string{"Content-Type", "application/json"}
	if r := do(t, request(t, "POST", e.srv.URL+"/api/memory", `{"text":"The user's car is a blue Volvo."}`, js...)); r.status != 201 || r.body["id"] != "m1" {
		t.Fatalf("POST /api/memory = %d %s", r.status, r.raw)
	}
	p := peer(t, e.srv.URL)
	if r := do(t, request(t, "POST", e.srv.URL+"/api/messages", `{"content":"forget my car"}`, js...)); r.status != 202 {
		t.Fatalf("webhook = %d %s", r.status, r.raw)
	}
	var req event.ApprovalRequestData
	p.until(event.ApprovalRequest).Decode(&req)
	if req.Tool != "memory_forget" || string(req.Args) != `{"id":"m1"}` {
		t.Fatalf("approval request %+v", req)
	}
	if got := memoryItems(t, e); len(got) != 1 {
		t.Fatalf("items while the forget waits for approval: %+v", got)
	}
	if r := do(t, request(t, "POST", e.srv.URL+"/api/approvals/"+req.ID, `{"decision":"approve"}`, js...)); r.status != 200 {
		t.Fatalf("approve = %d %s", r.status, r.raw)
	}
	var d event.MemoryChangedData
	p.until(event.MemoryChanged).Decode(&d)
	if d.Action != event.MemoryDeleted || d.ID != "m1" || d.By != "agent" {
		t.Fatalf("memory_changed %+v", d)
	}
	p.until(event.TurnEnd)
	if got := memoryItems(t, e); len(got) != 0 {
		t.Fatalf("items after the approved forget: %+v", got)
	}
}

// A memory change the disk refuses answers 507 storage_full (a full disk)
// or 503 storage_error and changes nothing; once the disk takes writes
// again the same request succeeds.
func TestMemoryAPIStorageFault(t *testing.T) {
	disk := testdisk.New(t)
	code, status := hub.StorageFailed, 503
	if disk.Full {
		code, status = hub.StorageFull, 507
	}
	lg, err := history.Open(history.Options{Path: filepath.Join(disk.Dir, "chat_history.ndjson"), RotateMB: 5, Fsync: history.FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(disk.Dir, "memory"), 0o700); err != nil {
		t.Fatal(err)
	}
	items, err := memory.OpenItems(filepath.Join(disk.Dir, "memory"))
	if err != nil {
		t.Fatal(err)
	}
	m := hub.New(hub.Config{DataDir: disk.Dir, Items: items, Logger: slog.New(slog.DiscardHandler)}, lg, &agent.Demo{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	srv := httptest.NewServer(web.Handler(m, web.Options{WS: ws.New(m, ws.Options{})}))
	t.Cleanup(func() { cancel(); <-done; srv.Close(); lg.Close() })
	e := &env{hub: m, srv: srv}
	// The hub has loaded session.json and runs before the disk fails (a
	// start on a failing disk is another story: Run returns its error).
	if _, err := m.Info(context.Background()); err != nil {
		t.Fatal(err)
	}

	disk.Fail()
	// More than a page, so that it cannot slip into a full tmpfs.
	body := `{"text":"` + strings.Repeat("The launch is on Friday. ", 400) + `"}`
	r := do(t, request(t, "POST", srv.URL+"/api/memory", body, "Content-Type", "application/json"))
	if r.status != status || r.body["code"] != code || !strings.Contains(r.raw, "nothing was saved") {
		t.Fatalf("POST on a failing disk = %d %s, want %d %s", r.status, r.raw, status, code)
	}
	if got := memoryItems(t, e); len(got) != 0 {
		t.Fatalf("items after a refused POST: %+v", got)
	}
	disk.Heal()
	if r := do(t, request(t, "POST", srv.URL+"/api/memory", body, "Content-Type", "application/json")); r.status != 201 {
		t.Fatalf("POST once the disk is healed = %d %.200s", r.status, r.raw)
	}
	if got := memoryItems(t, e); len(got) != 1 {
		t.Fatalf("items after the healed POST: %d", len(got))
	}
}
