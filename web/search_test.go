package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/web"
)

func TestSearchAPI(t *testing.T) {
	e := start(t, web.Options{}, &agent.Demo{})
	for _, msg := range []string{"My sister's birthday is on the 14th of March", "the plumber is coming on Tuesday"} {
		r := do(t, request(t, "POST", e.srv.URL+"/api/messages?wait=1", `{"content":"`+msg+`"}`, "Content-Type", "application/json"))
		if r.status != http.StatusOK {
			t.Fatalf("post: %d %s", r.status, r.raw)
		}
	}
	search := func(q string) reply {
		return do(t, request(t, "GET", e.srv.URL+"/api/history/search?q="+url.QueryEscape(q)+"&limit=5", ""))
	}
	r := search("birthdays sister")
	hits, _ := r.body["hits"].([]any)
	if r.status != 200 || r.body["mode"] != "and" || len(hits) == 0 {
		t.Fatalf("search: %d %s", r.status, r.raw)
	}
	first := hits[0].(map[string]any)
	if first["type"] != "user" || first["channel"] != "webhook" || first["seq"] != float64(1) ||
		!strings.Contains(first["snippet"].(string), "«sister»") || first["score"].(float64) <= 0 {
		t.Errorf("first hit %v", first)
	}
	if _, ok := r.body["indexing"]; ok {
		t.Errorf("indexing reported after the reply was awaited: %s", r.raw)
	}
	if r := search("plumber zeppelin"); r.body["mode"] != "or" {
		t.Errorf("partial: %s", r.raw)
	}
	for _, q := range []string{"type:robot", strings.Repeat("x ", 600), "before:soon sister", "***"} {
		r := search(q)
		if r.status != http.StatusBadRequest || r.body["code"] != "bad_query" || strings.Contains(strings.ToLower(r.raw), "sql") {
			t.Errorf("%.20q: %d %s", q, r.status, r.raw)
		}
	}
	// Hostile FTS5 syntax is plain words, not an error.
	for _, q := range []string{`NEAR(sister birthday)`, `content:sister`, `"sister`, `sister AND OR`} {
		if r := search(q); r.status != 200 {
			t.Errorf("%q: %d %s", q, r.status, r.raw)
		}
	}
}

// The MCP servers' states show in /api/session and /healthz, and a failed
// one does not make the server unhealthy.
func TestMCPServerStates(t *testing.T) {
	e := start(t, web.Options{MCPServers: func() any {
		return []map[string]any{{"name": "files", "state": "failed", "error": "exec: not found", "tools": []string{}}}
	}}, &agent.Demo{})
	for _, path := range []string{"/api/session", "/healthz"} {
		r := do(t, request(t, "GET", e.srv.URL+path, ""))
		servers, _ := r.body["mcp_servers"].([]any)
		if r.status != http.StatusOK || len(servers) != 1 || servers[0].(map[string]any)["state"] != "failed" {
			t.Errorf("%s: %d %s", path, r.status, r.raw)
		}
	}
	if r := do(t, request(t, "GET", e.srv.URL+"/api/session", "")); r.body["session_id"] == nil {
		t.Errorf("/api/session lost its own fields: %s", r.raw)
	}
}

// With a token configured, the open /healthz says only the status: no MCP
// server, tool, command path or error. The inventory is behind the token,
// in /api/session (and in /healthz when the token is sent).
func TestHealthWithoutTokenIsShort(t *testing.T) {
	const token = "s3cret"
	inventory := []string{"files", "read_secret_file", "/opt/mcp/bin/files-server", "exec: not found"}
	e := start(t, web.Options{Token: token, MCPServers: func() any {
		return []map[string]any{{"name": "files", "state": "failed", "command": "/opt/mcp/bin/files-server",
			"error": "exec: not found", "tools": []string{"read_secret_file"}}}
	}}, &agent.Demo{})
	r := do(t, request(t, "GET", e.srv.URL+"/healthz", ""))
	if r.status != http.StatusOK || r.body["status"] != "ok" {
		t.Fatalf("/healthz without the token = %d %s, want 200 ok", r.status, r.raw)
	}
	for _, s := range inventory {
		if strings.Contains(r.raw, s) {
			t.Errorf("/healthz without the token shows %q: %s", s, r.raw)
		}
	}
	if len(r.body) != 1 {
		t.Errorf("/healthz without the token = %s, want only the status", r.raw)
	}
	for _, path := range []string{"/api/session", "/healthz"} {
		r := do(t, request(t, "GET", e.srv.URL+path, "", "Authorization", "Bearer "+token))
		for _, s := range inventory {
			if r.status != http.StatusOK || !strings.Contains(r.raw, s) {
				t.Errorf("%s with the token = %d %s, want it to show %q", path, r.status, r.raw, s)
			}
		}
	}
}
