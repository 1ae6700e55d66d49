package web_test

// Browser tests of what a newcomer ran into (issue 20, 4b): file chips
// beside thumbnails, the view kept at the bottom while images load, a
// small and a too-large file picked together, `/` in the empty composer,
// the header at phone widths, the approval card once answered and the
// status line while a call waits for a person.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/schedule"
)

// upload stores data through POST /api/attachments and returns its id.
func upload(t *testing.T, srv *liveServer, name string, data []byte) string {
	t.Helper()
	req, err := http.NewRequest("POST", srv.url()+"api/attachments?name="+name, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var att struct{ SHA256 string }
	if err := json.NewDecoder(resp.Body).Decode(&att); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload %s: %d %v", name, resp.StatusCode, err)
	}
	return att.SHA256
}

// postFiles sends a webhook message carrying the stored files ids.
func postFiles(t *testing.T, srv *liveServer, content string, ids ...string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"content": content, "attachments": ids})
	srv.post(string(body))
}

// A message with an image and a file: the file's chip keeps its own
// height beside the thumbnail (it was stretched to the thumbnail's 160 px
// and drawn as a large white oval).
func TestBrowserChipBesideThumbnail(t *testing.T) {
	srv := newAttachServer(t, "", 0)
	postFiles(t, srv, "the plan and the chart",
		upload(t, srv, "chart.png", testPNG(t, 300, 200)), upload(t, srv, "plan.txt", []byte("step one, step two")))
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("the thumbnail loaded", `(() => { const img = document.querySelector('#log .attachments img');
		return img && img.complete && img.naturalWidth === 300 && img.getBoundingClientRect().height > 100; })()`)
	p.screenshot("chip-beside-thumbnail")
	chip := eval[map[string]float64](p, `(() => { const c = document.querySelector('#log .attachments a.chip');
		const r = c.getBoundingClientRect(); const name = c.querySelector('.chip-name').getBoundingClientRect();
		return { chip: r.height, name: name.height, thumb: document.querySelector('#log .attachments img').getBoundingClientRect().height }; })()`)
	// Its height is its line of text and the padding, whatever the thumbnail's.
	if chip["chip"] > chip["name"]+16 || chip["chip"] > 40 {
		t.Errorf("the chip is %.0f px high beside a %.0f px thumbnail (its text is %.0f px)", chip["chip"], chip["thumb"], chip["name"])
	}
}

// Opening the page on a conversation whose last messages carry images:
// the images arrive after the first scroll to the bottom (they are slowed
// down here so that they surely do), and the view follows them to the
// end instead of stopping a thumbnail's height above it.
func TestBrowserFollowsBottomWhileImagesLoad(t *testing.T) {
	srv := newAttachServer(t, "", 0)
	srv.seed(12, func(i int) string { return fmt.Sprintf("message %d before the pictures", i) })
	for i := range 2 {
		postFiles(t, srv, fmt.Sprintf("picture %d", i), upload(t, srv, fmt.Sprintf("pic%d.png", i), testPNG(t, 320, 240+i)))
		waitReplies(t, srv, 13+i)
	}
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", "about:blank")
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{{URLPattern: "*://*:*/api/attachments/*", Latency: 700, DownloadThroughput: -1, UploadThroughput: -1}}})
		return err
	}), chromedp.Navigate(srv.url()))
	p.wait("the conversation shown, the images not yet", jsConnected+` && `+jsReplies+` === 14 && [...document.querySelectorAll('#log .attachments img')].some((i) => !i.complete)`)
	p.wait("both images loaded", `(() => { const imgs = [...document.querySelectorAll('#log .attachments img')];
		return imgs.length === 2 && imgs.every((i) => i.complete && i.naturalWidth === 320); })()`)
	p.wait("the view at the very bottom", `(() => { const m = document.querySelector('#conversation');
		return m.scrollHeight - m.scrollTop - m.clientHeight < 2 && document.querySelector('#jump').hidden; })()`)
	p.screenshot("bottom-after-images")
}

// waitReplies waits until the session holds n assistant replies.
func waitReplies(t *testing.T, srv *liveServer, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sub, snap, err := srv.cur.hub.Subscribe(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		sub.Close()
		got := 0
		for _, f := range snap.Replay {
			if f.Event.Type == "assistant" {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d replies, want %d", got, n)
		}
		<-time.After(20 * time.Millisecond)
	}
}

// A small file and one over the limit picked at once: the small one is
// attached and uploaded, the big one refused with its name and why (both
// were dropped before).
func TestBrowserAttachSmallAndTooLarge(t *testing.T) {
	srv := newAttachServer(t, "", 0)
	dir := t.TempDir()
	small, big := filepath.Join(dir, "notes.txt"), filepath.Join(dir, "video.mov")
	if err := os.WriteFile(small, []byte("ten bytes!"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 21<<20); err != nil { // sparse: over the 20 MiB default, costs no disk
		t.Fatal(err)
	}
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected)
	p.do(chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{small, big}))
	p.wait("the small file uploaded, the big one refused", jsTrayDone(1)+` &&
		document.querySelector('#tray li .chip-name').textContent === 'notes.txt' &&
		document.querySelector('#tray-error').textContent === '“video.mov” is 21 MiB: files may be at most 20 MiB. The other file is attached.'`)
	if n := nStored(t, srv); n != 1 {
		t.Errorf("%d files stored, want the small one", n)
	}
	p.do(chromedp.Click(chromedp.CSS("#send")))
	p.wait("sent with the small file, and the refusal gone", `(() => { const u = document.querySelector('#log li.msg.user');
		return u && u.querySelector('.attachments a.chip') && u.querySelector('.chip-name').textContent === 'notes.txt' &&
			document.querySelector('#tray-error').hidden; })()`)
}

// `/` opens the search from the empty composer (which has the focus from
// the start) and from outside any text field; once the composer holds
// text, `/` is typed into it.
func TestBrowserSlashOpensSearchFromEmptyComposer(t *testing.T) {
	srv := newLiveServer(t, "", &agent.Demo{})
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected, the composer focused", jsConnected+` && document.activeElement === document.querySelector('#message')`)
	slash := pressKey("/", "Slash", "/", 191, 0)
	p.do(slash)
	p.wait("the search open and focused, the composer still empty", `!document.querySelector('#search').hidden &&
		document.activeElement === document.querySelector('#search-input') && document.querySelector('#search-input').value === '' &&
		document.querySelector('#message').value === ''`)
	p.do(pressKey("Escape", "Escape", "", 27, 0))
	p.wait("closed, the composer focused again", `document.querySelector('#search').hidden && document.activeElement === document.querySelector('#message')`)
	p.do(chromedp.SendKeys(chromedp.CSS("#message"), "and/or"), slash)
	p.wait("a slash typed into the text", `document.querySelector('#message').value === 'and/or/' && document.querySelector('#search').hidden`)
	p.do(chromedp.Click(chromedp.CSS("#conversation")), slash)
	p.wait("from outside a text field too", `!document.querySelector('#search').hidden && document.querySelector('#message').value === 'and/or/'`)
}

// At phone widths the header cuts nothing: "connected" whole, every
// button on one line (the Scheduled button shows a clock and the count),
// no sideways scrolling; at common phone widths it stays one row.
func TestBrowserPhoneHeader(t *testing.T) {
	e := startSchedules(t, schedule.Options{})
	if r := e.post(t, `{"content":"Reminder: water the plants","in_seconds":3600}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", e.srv.URL+"/")
	p.wait("connected, one scheduled", jsConnected+` && document.querySelector('#schedules-open').textContent === 'Scheduled · 1'`)
	for _, w := range []int64{320, 360, 375, 390, 412, 1200} {
		p.emulate(w, 740, w < 600, "light")
		p.wait(fmt.Sprintf("the layout at %d px", w), `document.documentElement.clientWidth === `+fmt.Sprint(w))
		got := eval[map[string]any](p, `(() => {
			const conn = document.querySelector('#conn'), text = document.querySelector('#conn-text');
			const btns = [...document.querySelectorAll('header.top button')].filter((b) => !b.hidden);
			const one = Math.max(...btns.map((b) => parseFloat(getComputedStyle(b).minHeight)));
			return {
				connCut: conn.scrollWidth > conn.clientWidth + 0.5 || text.getBoundingClientRect().right > conn.getBoundingClientRect().right + 0.5,
				connText: text.textContent,
				wrapped: btns.filter((b) => b.getBoundingClientRect().height > one + 1 || b.scrollWidth > b.clientWidth + 0.5).map((b) => b.id || b.textContent),
				sideways: document.documentElement.scrollWidth > window.innerWidth,
				rows: (() => { const mid = (n) => { const r = n.getBoundingClientRect(); return (r.top + r.bottom) / 2; };
					const h1 = mid(document.querySelector('header.top h1'));
					return [conn, ...btns].some((n) => Math.abs(mid(n) - h1) > 6) ? 2 : 1; })(),
				count: document.querySelector('#schedules-open .sched-count').innerText.trim(),
			}; })()`)
		if got["connCut"] == true || got["connText"] != "connected" {
			t.Errorf("%d px: the connection state is cut (%v)", w, got["connText"])
		}
		if wr, _ := got["wrapped"].([]any); len(wr) > 0 {
			t.Errorf("%d px: buttons wrapped or cut: %v", w, wr)
		}
		if got["sideways"] == true {
			t.Errorf("%d px: the page scrolls sideways", w)
		}
		if rows, _ := got["rows"].(float64); w >= 360 && rows != 1 {
			t.Errorf("%d px: the header takes %v rows", w, rows)
		}
		if c, _ := got["count"].(string); (w < 600 && c != "1") || (w >= 600 && c != "· 1") {
			t.Errorf("%d px: the schedule count reads %q", w, c)
		}
		p.screenshot(fmt.Sprintf("header-%d", w))
	}
}

// A tool call that waits for a person: the status line says so (not the
// backend's "asking …"), the card says "approval needed" until answered
// and then what became of it. The demo agent asks for the call on a
// plain request ("use files__delete {…}"), so this is the newcomer's way
// to see an approval without a model.
func TestBrowserDemoApprovalCard(t *testing.T) {
	var runs atomic.Int32
	srv := &liveServer{t: t, dir: t.TempDir(), agent: &agent.Demo{}, tools: testagent.Confirmed("files__delete", &runs)}
	srv.start()
	t.Cleanup(srv.stop)
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected)
	p.send(`use files__delete {"path": "/tmp/old-notes.txt"}`)
	p.wait("the card and the status line waiting for a person", `(() => {
		const li = document.querySelector('#log li.approval');
		return li && li.querySelector('.approval-label').textContent === 'approval needed' &&
			/old-notes\.txt/.test(li.querySelector('.tool-args').textContent) &&
			document.querySelector('#log li.tool .tool-state').textContent === 'waiting for approval' &&
			document.querySelector('#status-text').textContent === 'Waiting for approval to run files__delete — Approve or Deny below.'; })()`)
	p.screenshot("approval-status")
	p.do(chromedp.Click(chromedp.CSS("#log li.approval button.deny")))
	p.wait("the card says denied, by whom; the demo says so", jsIdle+` && (() => {
		const li = document.querySelector('#log li.approval');
		return li.querySelector('.approval-label').textContent === 'denied' && li.querySelector('.approval-state').textContent === 'by web' &&
			[...document.querySelectorAll('#log li.msg.assistant .md')].some((m) => /I called files__delete with .* and it failed: the user denied this call/.test(m.textContent)); })()`)

	p.send(`use files__delete {"path": "/tmp/old-notes.txt"}`)
	p.wait("a second card", `document.querySelectorAll('#log li.approval').length === 2 && !document.querySelectorAll('#log li.approval')[1].classList.contains('decided')`)
	p.do(chromedp.Click(chromedp.CSS("#log li.approval:not(.decided) button.approve")))
	p.wait("approved, and the tool's answer in the reply", jsIdle+` && (() => {
		const li = document.querySelectorAll('#log li.approval')[1];
		return li.querySelector('.approval-label').textContent === 'approved' && li.querySelector('.approval-state').textContent === 'by web' &&
			[...document.querySelectorAll('#log li.msg.assistant .md')].some((m) => /It answered: done/.test(m.textContent)); })()`)
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times; want once (approved), not for the denied call", n)
	}

	// The reset dialog says what a reset does: the recent exchanges stay.
	p.do(chromedp.Click(chromedp.CSS("#reset")))
	p.wait("the dialog", `document.querySelector('#reset-dialog').open &&
		/only the most\s+recent exchanges \(20 unless the server is set otherwise\) stay in its context/.test(document.querySelector('#reset-desc').textContent)`)
}

// Times read the same everywhere: 24-hour in a message, in full with the
// zone's name in its title (the terminal's "Mon 2 Jan 15:04 MST").
func TestBrowserTimeFormat(t *testing.T) {
	srv := newLiveServer(t, "", &agent.Demo{})
	srv.post(`{"content":"what time is it"}`)
	waitReplies(t, srv, 1)
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", "about:blank")
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Europe/Berlin"})
		return err
	}), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "en-US"})
		return err
	}), chromedp.Navigate(srv.url()))
	p.wait("the reply", jsConnected+` && `+jsReplies+` === 1 && `+jsIdle)
	times := eval[[]map[string]string](p, `[...document.querySelectorAll('#log time.when')].map((t) => ({ text: t.textContent, title: t.title }))`)
	if len(times) != 2 {
		t.Fatalf("times %v", times)
	}
	for _, tm := range times {
		if ok, _ := filepath.Match("[0-2][0-9]:[0-5][0-9]", tm["text"]); !ok {
			t.Errorf("time %q is not 24-hour HH:MM", tm["text"])
		}
		// en-US names Berlin's zone by its offset.
		if ok, _ := filepath.Match("[A-Z][a-z][a-z] [0-9]* [A-Z][a-z][a-z] "+tm["text"]+" GMT+[12]", tm["title"]); !ok {
			t.Errorf("title %q, want the day, the time and the zone", tm["title"])
		}
	}
}
