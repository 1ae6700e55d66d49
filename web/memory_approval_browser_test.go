package web_test

import (
	"testing"

	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/web"
)

// The web page's approval card for memory_forget shows the item's text,
// not {"id":"m1"}: a person sees what would be forgotten (a turn from the
// webhook, which must ask).
func TestBrowserMemoryApprovalCardShowsText(t *testing.T) {
	e := startMemoryWith(t, web.Options{}, testagent.CallTool{Name: "memory_forget", Args: `{"id":"m1"}`})
	js := []string{"Content-Type", "application/json"}
	if r := do(t, request(t, "POST", e.srv.URL+"/api/memory", `{"text":"The wifi password is hunter2."}`, js...)); r.status != 201 || r.body["id"] != "m1" {
		t.Fatalf("POST /api/memory = %d %s", r.status, r.raw)
	}
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", e.srv.URL+"/")
	p.wait("connected", jsConnected)
	if r := do(t, request(t, "POST", e.srv.URL+"/api/messages", `{"content":"forget the wifi password"}`, js...)); r.status != 202 {
		t.Fatalf("webhook = %d %s", r.status, r.raw)
	}
	p.wait("the approval card saying the item's text", `(() => {
		const li = document.querySelector('#log li.approval');
		return li && /memory_forget/.test(li.querySelector('.tool-name').textContent) &&
			li.querySelector('.tool-args').textContent === 'Forget m1: The wifi password is hunter2.';
	})()`)
}
