package web_test

// Browser test of Erase… on a message (web/static/erase.js).

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Erase… on a user message asks first, with a sentence that says what an
// erase does and that backups made before still hold it; Keep it leaves the
// message, Erase erases it: both tabs, and a tab opened afterwards (a
// replay), show "message erased (by web)" in its place and nothing of its
// text, with no Erase… left on it.
func TestBrowserEraseMessage(t *testing.T) {
	srv := newLiveServer(t, "", &scripted{delay: time.Millisecond,
		reply: func(in string) string { return "Understood." }})
	srv.seed(1, func(int) string { return "my wifi password is quokkasecret" })
	browser := newBrowser(t, 1200, 800)
	a := openTab(t, browser, "tab A", srv.url())
	b := openTab(t, browser, "tab B", srv.url())
	const userMsg = `document.querySelector('#log li.msg.user')`
	for _, p := range []*tab{a, b} {
		p.wait("the message", jsConnected+` && `+userMsg+` && `+userMsg+`.textContent.includes('quokkasecret')`)
	}
	const sel = "#log li.msg.user .erase"
	a.do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	a.wait("the dialog", `document.querySelector('#erase-dialog').open`)
	desc := eval[string](a, `document.querySelector('#erase-desc').textContent`)
	for _, want := range []string{"removed for everyone", "backups made before the erase still hold the message", "cannot be undone"} {
		if !strings.Contains(strings.Join(strings.Fields(desc), " "), want) {
			t.Errorf("the dialog says %q; want it to say %q", desc, want)
		}
	}
	a.do(chromedp.Click(chromedp.CSS("#erase-keep"), chromedp.NodeVisible))
	a.wait("the dialog closed", `!document.querySelector('#erase-dialog').open`)
	if !eval[bool](a, userMsg+`.textContent.includes('quokkasecret')`) {
		t.Fatal("Keep it erased the message")
	}
	a.do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	a.wait("the dialog again", `document.querySelector('#erase-dialog').open`)
	a.do(chromedp.Click(chromedp.CSS("#erase-confirm"), chromedp.NodeVisible))
	c := (*tab)(nil)
	for i, p := range []*tab{a, b, nil} {
		if i == 2 {
			c = openTab(t, browser, "tab C", srv.url())
			p = c
		}
		p.wait("message erased in its place", jsConnected+` && (() => { const m = `+userMsg+`;
			return m && m.classList.contains('erased') && m.querySelector('.text').textContent === 'message erased (by web)'; })()`)
		if eval[bool](p, `document.querySelector('#log').textContent.includes('quokkasecret') && !!document.querySelector('#log li.msg.user.erased')`) {
			// The reply of this agent does not echo the message: any trace is the message's own.
			t.Errorf("%s: the page still shows the erased text", p.name)
		}
		if eval[bool](p, `!document.querySelector('`+sel+`').hidden`) {
			t.Errorf("%s: an erased message still offers Erase…", p.name)
		}
	}
	a.wait("the dialog closed after the erase", `!document.querySelector('#erase-dialog').open`)
}
