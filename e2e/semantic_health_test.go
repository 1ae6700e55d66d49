package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testmetrics"
)

// TestSemanticHealthSaysWhy: the real binary with search.embeddings
// pointing at a web server's root (base_url without /v1, answering an HTML
// page): /healthz says "degraded" with a reason naming search by meaning,
// /metrics has frontdesk_search_semantic_up 0, the log says in one
// sentence that the base_url may miss /v1 (not the page), and a search
// answers from keywords marked "semantic": "unavailable".
func TestSemanticHealthSaysWhy(t *testing.T) {
	t.Parallel()
	page := "<!DOCTYPE html><html><body>" + strings.Repeat("<p>Welcome to the web interface.</p>", 20) + "</body></html>"
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(page))
	}))
	defer web.Close()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	os.MkdirAll(state, 0o700)
	writeConversation(t, state, 3)
	cfg := filepath.Join(dir, "embed.yaml")
	os.WriteFile(cfg, fmt.Appendf(nil, "search:\n  embeddings:\n    base_url: %s\n    model: fake\n", web.URL), 0o600)
	p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)

	var health struct {
		Status  string   `json:"status"`
		Reasons []string `json:"reasons"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		testio.GetJSON(t, p.url+"/healthz", &health)
		if health.Status == "degraded" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling the binary: nothing to wait on
	}
	if health.Status != "degraded" || len(health.Reasons) != 1 || !strings.HasPrefix(health.Reasons[0], "search by meaning unavailable") {
		t.Fatalf("/healthz = %+v; want degraded with the reason search by meaning is unavailable\n%s", health, p.stderr)
	}
	if v := testmetrics.Must(t, getText(t, p.url+"/metrics"), "frontdesk_search_semantic_up"); v != 0 {
		t.Errorf("frontdesk_search_semantic_up = %g, want 0", v)
	}
	logs := p.stderr.String()
	if !strings.Contains(logs, "answered HTML, not JSON") || !strings.Contains(logs, "missing /v1 (try "+web.URL+"/v1)") {
		t.Errorf("the log does not suggest the /v1 path:\n%s", logs)
	}
	if strings.Contains(logs, "<p>") {
		t.Errorf("the log holds the HTML page:\n%s", logs)
	}
	if a := searchAPI(t, p, "automobile"); a.Semantic != "unavailable" || len(a.Hits) != 1 {
		t.Errorf("search: semantic %q, %d hits; want unavailable and the keyword hit", a.Semantic, len(a.Hits))
	}
}
