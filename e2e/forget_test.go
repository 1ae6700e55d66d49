package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// forgottenSummary is what the fake model's summary gives: the forgotten
// password back, and a fact worth keeping.
const forgottenSummary = "- The wifi password is hunter2.\n- The quarterly review is on Thursday with Priya."

// fakeModel is an OpenAI-compatible server that answers every turn
// "Noted." and every consolidation (the summary prompt) with
// forgottenSummary: a model that writes a forgotten item back. Each
// turn's request body is sent on turns.
func fakeModel(t *testing.T, turns chan<- string) *httptest.Server {
	chunk := func(content, finish string) string {
		fin := "null"
		if finish != "" {
			fin = fmt.Sprintf("%q", finish)
		}
		b, _ := json.Marshal(content)
		return fmt.Sprintf(`data: {"id":"c1","object":"chat.completion.chunk","created":1762000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":%s},"finish_reason":%s}]}`+"\n\n", b, fin)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		reply := "Noted."
		if strings.Contains(string(body), "You keep the long-term memory") {
			reply = forgottenSummary
		} else {
			select {
			case turns <- string(body):
			default:
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunk(reply, ""))
		io.WriteString(w, chunk("", "stop"))
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A forgotten item stays forgotten: remembered, said in the conversation,
// forgotten, then a reset consolidates the conversation — with the demo
// agent (the offline summary) and with a model that writes the password
// back — and neither GET /api/memory nor a type:memory search holds it,
// while the rest of the conversation is consolidated.
func TestForgottenItemStaysForgotten(t *testing.T) {
	turns := make(chan string, 16)
	model := fakeModel(t, turns)
	cases := []struct {
		name, agent string
		turns       chan string // the model's turn requests; nil for the demo
	}{
		{"demo", "{backend: demo, demo: {delay_ms: 0}}", nil},
		{"model writes it back", fmt.Sprintf("{backend: openai, openai: {base_url: %q, model: m}}", model.URL+"/v1"), turns},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(cfg, []byte("agent: "+tc.agent+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
			api := p.url + "/api/memory"
			it := memoryCall(t, "POST", api, `{"text":"The wifi password is hunter2"}`, 201)
			for _, m := range []string{"The wifi password is hunter2.", "The quarterly review is on Thursday with Priya, bring the slides."} {
				b, _ := json.Marshal(map[string]string{"content": m})
				memoryCall(t, "POST", p.url+"/api/messages?wait=1", string(b), 200)
			}
			memoryCall(t, "DELETE", api+"/"+it["id"].(string), "", 204)
			// The next turn's context: no item, no line of the
			// conversation that gives it away.
			for len(tc.turns) > 0 {
				<-tc.turns
			}
			memoryCall(t, "POST", p.url+"/api/messages?wait=1", `{"content":"And what about lunch?"}`, 200)
			if tc.turns != nil {
				if body := <-tc.turns; strings.Contains(strings.ToLower(body), "hunter2") {
					t.Errorf("the turn after the forget gave the model the password: %s", body)
				}
			}
			memoryCall(t, "POST", p.url+"/api/reset", "", 200)

			consolidated := waitConsolidated(t, api)
			if strings.Contains(strings.ToLower(consolidated), "hunter2") {
				t.Errorf("the consolidation saved the forgotten password:\n%s", consolidated)
			}
			all := memoryCall(t, "GET", api, "", 200)
			if b, _ := json.Marshal(all); strings.Contains(strings.ToLower(string(b)), "hunter2") {
				t.Errorf("GET /api/memory holds the forgotten password: %s", b)
			}
			st, err := os.ReadFile(filepath.Join(dir, "state", "memory", "short_term.md"))
			if err != nil || strings.Contains(strings.ToLower(string(st)), "hunter2") {
				t.Errorf("short_term.md (%v) holds the forgotten password:\n%s", err, st)
			}
			// The index has the consolidation (it finds Priya) and nothing
			// of the password.
			waitSearch(t, p.url, "priya type:memory", func(n int) bool { return n > 0 })
			if hits := searchHits(t, p.url, "hunter2 type:memory"); hits != 0 {
				t.Errorf("search hunter2 type:memory: %d hits, want none", hits)
			}
		})
	}
}

// waitConsolidated waits for the item a consolidation saved and returns
// its text.
func waitConsolidated(t *testing.T, api string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		got := memoryCall(t, "GET", api, "", 200)
		items, _ := got["items"].([]any)
		for _, x := range items {
			m := x.(map[string]any)
			if m["source"] == "consolidation" {
				return m["text"].(string)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no consolidation was saved within 20 s")
	return ""
}

// searchHits runs a history search and returns its number of hits.
func searchHits(t *testing.T, base, q string) int {
	t.Helper()
	resp, err := http.Get(base + "/api/history/search?q=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Hits []json.RawMessage `json:"hits"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("search %q: %d %v", q, resp.StatusCode, err)
	}
	return len(r.Hits)
}

func waitSearch(t *testing.T, base, q string, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok(searchHits(t, base, q)) {
		if time.Now().After(deadline) {
			t.Fatalf("search %q: no answer as wanted within 20 s", q)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
