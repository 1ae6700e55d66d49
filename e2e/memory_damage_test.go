package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/frontdesk-hq/frontdesk/memory"
)

// A damaged items.json does not stop the real binary: it is kept aside as
// items.json.damaged-<time>, byte for byte, the items are rebuilt from the
// chat log, and /healthz says so (200, "degraded", a reason naming it).
// On the old code the binary refused to start.
func TestBinaryDamagedItemsRebuiltFromLog(t *testing.T) {
	dir := t.TempDir()
	p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state")
	api := p.url + "/api/memory"
	memoryCall(t, "POST", api, `{"text":"The user's car is a blue Volvo."}`, 201)
	memoryCall(t, "POST", api, `{"text":"The launch is on Friday."}`, 201)
	before := memoryCall(t, "GET", api, "", 200)
	if _, err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr)
	}
	mdir := filepath.Join(dir, "state", "memory")
	damaged := []byte(`{"version":1,"applied_seq":9,"items":[{"id":"m3","te`)
	if err := os.WriteFile(filepath.Join(mdir, memory.ItemsFile), damaged, 0o600); err != nil {
		t.Fatal(err)
	}

	p2 := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state")
	after := memoryCall(t, "GET", p2.url+"/api/memory", "", 200)
	if got, want := texts(after), texts(before); got != want || got == "" {
		t.Fatalf("items after the restart: %q, want %q", got, want)
	}
	aside, _ := filepath.Glob(filepath.Join(mdir, memory.ItemsFile+".damaged-*"))
	if len(aside) != 1 {
		t.Fatalf("files kept aside: %v, want one items.json.damaged-*", aside)
	}
	if b, _ := os.ReadFile(aside[0]); string(b) != string(damaged) {
		t.Fatalf("kept aside %q, want the damaged bytes %q", b, damaged)
	}
	resp, err := http.Get(p2.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Status  string   `json:"status"`
		Reasons []string `json:"reasons"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	reason := strings.Join(h.Reasons, " | ")
	if resp.StatusCode != 200 || h.Status != "degraded" || !strings.Contains(reason, "items.json was damaged") ||
		!strings.Contains(reason, filepath.Base(aside[0])) || !strings.Contains(reason, "rebuilt from the chat log") {
		t.Fatalf("/healthz = %d %q reasons %q; want 200 degraded naming the damaged items.json, its copy and the rebuild", resp.StatusCode, h.Status, reason)
	}
}

// texts is the items' texts of a GET /api/memory answer, joined.
func texts(list map[string]any) string {
	var out []string
	items, _ := list["items"].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any)["text"].(string))
	}
	return strings.Join(out, "\n")
}
