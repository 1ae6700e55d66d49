package web_test

import (
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// A tool call that needs approval shows in both tabs with Approve and
// Deny; one tab approves, both show who did, and the call runs once.
func TestBrowserApproval(t *testing.T) {
	var runs atomic.Int32
	srv := &liveServer{t: t, dir: t.TempDir(), agent: testagent.CallTool{Name: "files__delete", Args: `{"path":"/tmp/old-notes.txt"}`},
		tools: testagent.Confirmed("files__delete", &runs)}
	srv.start()
	t.Cleanup(srv.stop)
	browser := newBrowser(t, 1200, 800)
	a := openTab(t, browser, "tab A", srv.url())
	b := openTab(t, browser, "tab B", srv.url())
	a.wait("tab A connected", jsConnected)
	b.wait("tab B connected", jsConnected)

	a.send("clean up my old notes")
	for _, p := range []*tab{a, b} {
		p.wait("the approval card", `(() => {
			const li = document.querySelector('#log li.approval');
			return li && /files__delete \(files\)/.test(li.querySelector('.tool-name').textContent) &&
				/old-notes\.txt/.test(li.querySelector('.tool-args').textContent) &&
				li.querySelector('.approval-state').textContent === 'waiting for an answer' &&
				!li.querySelector('button.approve').disabled && !li.querySelector('button.deny').disabled;
		})()`)
	}
	a.screenshot("approval-waiting")
	b.do(chromedp.Click(chromedp.CSS("#log li.approval button.approve")))
	for _, p := range []*tab{a, b} {
		p.wait("approved by web, buttons gone", `(() => {
			const li = document.querySelector('#log li.approval');
			return li.classList.contains('decided') && li.querySelector('.approval-label').textContent === 'approved' && li.querySelector('.approval-state').textContent === 'by web' &&
				li.querySelector('.approval-buttons').hidden;
		})()`)
		p.wait("the reply", `[...document.querySelectorAll('#log li.msg.assistant')].some((e) => e.textContent.includes('done'))`)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the approved call ran %d times", n)
	}
}
