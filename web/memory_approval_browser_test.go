package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

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

// The panel lists a page of 100 items and a "Show more" button for the
// rest; the count in its header is every item's.
func TestBrowserMemoryPanelShowsMore(t *testing.T) {
	e := startMemory(t, web.Options{})
	for i := range 105 {
		memSave(t, e, fmt.Sprintf("fact number %03d", i))
	}
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", e.srv.URL+"/")
	p.wait("connected", jsConnected)
	p.do(chromedp.Click(chromedp.CSS("#memory-open")))
	p.wait("a page of 100 and a Show more for 5", `document.querySelectorAll('#memory-list li').length === 100 &&
		!document.querySelector('#memory-more').hidden && /^Show 5 more/.test(document.querySelector('#memory-more').textContent) &&
		/105 items/.test(document.querySelector('#memory').textContent)`)
	p.do(chromedp.Click(chromedp.CSS("#memory-more")))
	p.wait("all 105 listed, no Show more", `document.querySelectorAll('#memory-list li').length === 105 && document.querySelector('#memory-more').hidden`)
}
