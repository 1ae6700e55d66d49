package web_test

// Browser tests of the connection and the view's place in it: a server
// that is full (close 1013), a connection cut while a reply runs, and a
// window narrowed to phone width.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/frontdesk-hq/frontdesk/agent"
)

// A server at server.max_clients closes a new connection with 1013 "try
// again later": the page says the server is full (not "offline"), and gets
// in by itself once a place is free.
func TestBrowserServerFullRetries(t *testing.T) {
	srv := &liveServer{t: t, dir: t.TempDir(), agent: &agent.Demo{Delay: time.Millisecond}, maxClients: 1}
	srv.start()
	t.Cleanup(srv.stop)
	browser := newBrowser(t, 1200, 800)
	a := openTab(t, browser, "tab A", srv.url())
	a.wait("tab A connected", jsConnected)

	b := openTab(t, browser, "tab B", srv.url())
	b.wait("told the server is full", `document.querySelector('#conn').dataset.state === 'offline' &&
		/^server full \(too many clients\), retrying in \d+ s$/.test(document.querySelector('#conn-text').textContent) &&
		/^The server has as many clients as it takes/.test(document.querySelector('#empty').textContent)`)
	b.screenshot("server-full")

	// Tab A leaves; B comes in on its next try, without a click.
	if err := chromedp.Cancel(a.ctx); err != nil { // closes the tab
		t.Fatal(err)
	}
	b.wait("tab B connected once a place is free", jsConnected)
	b.send("I got in")
	b.wait("the reply", jsReplies+` === 1 && `+jsIdle)
}

// The connection drops while a reply runs: the page cannot know how the
// reply goes, so it does not say "working", and offers no Cancel it could
// not send; Esc does nothing. Both come back with the connection.
func TestBrowserConnectionLostWhileBusy(t *testing.T) {
	hold := make(chan struct{})
	srv := newLiveServer(t, "", &scripted{delay: 5 * time.Millisecond, hold: hold,
		reply: func(string) string { return "A reply that waits for the test to let it finish." }})
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected)
	p.send("start something long")
	p.wait("streaming, with Cancel", jsStreaming+` && !document.querySelector('#cancel').hidden`)

	// Cut every WebSocket and refuse new ones; the hub and its turn go on.
	r := srv.cur
	r.http.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	r.ws.Shutdown(ctx)
	cancel()

	p.wait("the status says the connection is gone, and Cancel is off", `document.querySelector('#conn').dataset.state !== 'connected' &&
		!document.querySelector('#statusline').hidden && document.querySelector('#statusline').dataset.kind === 'offline' &&
		/^The reply goes on at the server/.test(document.querySelector('#status-text').textContent) && document.querySelector('#cancel').hidden`)
	if got := eval[string](p, `document.querySelector('#status-text').textContent`); got == "" || strings.Contains(got, "working") || strings.Contains(got, "Replying") {
		t.Errorf("status while disconnected: %q", got)
	}
	p.screenshot("busy-disconnected")

	// The server comes back (same data, same port): the replay ends the
	// interrupted turn, and the page is idle and connected again.
	srv.stop()
	srv.start()
	p.wait("connected again and idle", jsConnected+` && `+jsIdle+` && document.querySelector('#cancel').hidden`)
}

// Narrowed to phone width, the view stays at the newest message; scrolled
// up one screen, "↓ Latest" appears, and takes the reader back down.
func TestBrowserPhoneWidthKeepsNewestAndOffersLatest(t *testing.T) {
	srv := newLiveServer(t, "", &agent.Demo{})
	srv.seed(12, standupNote)
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected with the history", jsConnected+` && `+jsUsers+` === 12`)
	const jsAtBottom = `(() => { const m = document.querySelector('#conversation'); return m.scrollHeight - m.scrollTop - m.clientHeight < 2; })()`
	p.wait("at the newest message", jsAtBottom)

	p.emulate(375, 740, true, "light")
	p.wait("still at the newest message at phone width", jsAtBottom+` && document.querySelector('#jump').hidden`)
	p.screenshot("phone-after-resize")

	p.do(chromedp.Evaluate[chromedp.Void](`(() => { const m = document.querySelector('#conversation'); m.scrollTop -= m.clientHeight; })()`))
	p.wait("↓ Latest offered one screen up", `!document.querySelector('#jump').hidden`)
	p.do(chromedp.Click(chromedp.CSS("#jump")))
	p.wait("back at the newest message", jsAtBottom+` && document.querySelector('#jump').hidden`)
	if n := eval[int](p, jsUsers); n != 12 {
		t.Errorf("%d user messages, want 12", n)
	}
}
