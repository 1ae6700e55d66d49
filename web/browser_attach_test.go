package web_test

// Browser tests of attachments in the UI against the real store and
// POST/GET /api/attachments: the attach button (a real file input, with a
// token), paste and drop (a DataTransfer built in the page), a file the
// server refuses, the limits checked before a byte is sent, and a message
// with files seen by a second tab.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/attachments"
)

// nStored counts the files in the server's attachment store (each is a
// file named by its sha256, besides the store's own records).
func nStored(t *testing.T, srv *liveServer) int {
	t.Helper()
	n := 0
	for _, p := range storedFiles(t, filepath.Join(srv.dir, "attachments")) {
		if attachments.ValidHash(filepath.Base(p)) {
			n++
		}
	}
	return n
}

// testPNG is a small real PNG of w×h pixels.
func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		for y := range h {
			img.Set(x, y, color.RGBA{uint8(x * 255 / w), 120, uint8(y * 255 / h), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func newAttachServer(t *testing.T, token string, max int64) *liveServer {
	srv := &liveServer{t: t, dir: t.TempDir(), token: token, agent: &agent.Demo{Delay: time.Millisecond}, attachMax: max}
	srv.start()
	t.Cleanup(srv.stop)
	return srv
}

// jsTrayDone is true when the tray holds n files, all uploaded.
func jsTrayDone(n int) string {
	return fmt.Sprintf(`(() => { const li = document.querySelectorAll('#tray li');
		return li.length === %d && [...li].every((x) => x.dataset.state === 'done'); })()`, n)
}

// jsPasteFiles pastes n PNG files (base64 b64) into the composer the way a
// browser does for a screenshot: a paste event whose clipboardData holds files.
func jsPasteFiles(b64 string, n int) string {
	return fmt.Sprintf(`(() => {
		const bytes = Uint8Array.from(atob(%q), (c) => c.charCodeAt(0));
		const dt = new DataTransfer();
		// A byte after the image makes each file distinct (the store keeps one copy of equal ones).
		for (let i = 0; i < %d; i++) dt.items.add(new File([bytes, new Uint8Array([i])], 'screenshot-' + i + '.png', { type: 'image/png' }));
		const e = new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true });
		document.querySelector('#message').dispatchEvent(e);
		return e.defaultPrevented; })()`, b64, n)
}

// Through the attach button's file input (a real file from disk), with the
// token in use (exchanged for the session cookie): the upload is signed
// in by the cookie, the tray shows the thumbnail from GET
// /api/attachments/{sha256}, and the stored bytes are the file's.
func TestBrowserAttachThroughFileInput(t *testing.T) {
	srv := newAttachServer(t, "s3cret", 0)
	pic := testPNG(t, 64, 48)
	path := filepath.Join(t.TempDir(), "diagram.png")
	if err := os.WriteFile(path, pic, 0o600); err != nil {
		t.Fatal(err)
	}
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("the token prompt", `!document.querySelector('#auth').hidden`)
	p.do(chromedp.SendKeys(chromedp.CSS("#auth-token"), "s3cret"), pressEnter(false))
	p.wait("connected", jsConnected)
	p.do(chromedp.SendKeys(chromedp.CSS("#message"), "see the diagram"))

	p.do(chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{path}))
	p.wait("the file uploaded, its thumbnail shown", jsTrayDone(1)+` && (() => {
		const img = document.querySelector('#tray li .tray-thumb img');
		return img && img.complete && img.naturalWidth === 64; })()`)
	sum := sha256.Sum256(pic)
	id := hex.EncodeToString(sum[:])
	if src := eval[string](p, `document.querySelector('#tray li .tray-thumb img').getAttribute('src')`); src != "/api/attachments/"+id {
		t.Errorf("thumbnail src %q", src)
	}
	if got := eval[string](p, `document.querySelector('#tray li .chip-name').textContent`); got != "diagram.png" {
		t.Errorf("tray name %q", got)
	}
	if n := nStored(t, srv); n != 1 {
		t.Errorf("%d files stored; want 1", n)
	}
	if got, err := os.ReadFile(filepath.Join(srv.dir, "attachments", id[:2], id)); err != nil || !bytes.Equal(got, pic) {
		t.Errorf("the stored file is not the one picked (%v)", err)
	}
	if got := eval[string](p, `document.querySelector('#message').value`); got != "see the diagram" {
		t.Errorf("the composer's text changed to %q", got)
	}
	if eval[bool](p, `document.querySelector('#send').disabled`) {
		t.Error("Send is off with the file uploaded")
	}
	p.screenshot("attach-tray")

	// × removes it, and the composer keeps its text.
	p.do(chromedp.Click(chromedp.CSS("#tray li .tray-remove")))
	p.wait("the tray empty", `document.querySelector('#tray').hidden && document.querySelector('#message').value === 'see the diagram'`)
}

// Pasting a screenshot and dropping files attach them; a batch over the
// limit (11 files) is refused whole before anything is uploaded.
func TestBrowserAttachPasteAndDrop(t *testing.T) {
	srv := newAttachServer(t, "", 0)
	b64 := base64.StdEncoding.EncodeToString(testPNG(t, 20, 20))
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected)

	if !eval[bool](p, jsPasteFiles(b64, 1)) {
		t.Error("a pasted image also went into the text (the paste was not taken)")
	}
	p.wait("the pasted image in the tray", jsTrayDone(1))

	p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const bytes = Uint8Array.from(atob(%q), (c) => c.charCodeAt(0));
		const dt = new DataTransfer();
		dt.items.add(new File([bytes], 'dropped.png', { type: 'image/png' }));
		dt.items.add(new File(['some notes'], 'notes.txt', { type: 'text/plain' }));
		document.body.dispatchEvent(new DragEvent('dragenter', { dataTransfer: dt, bubbles: true, cancelable: true }));
		window.__dropShown = !document.querySelector('#drop').hidden;
		document.body.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true })); })()`, b64)))
	if !eval[bool](p, `window.__dropShown`) {
		t.Error("dragging files over the page does not show the drop zone")
	}
	p.wait("the dropped files in the tray", jsTrayDone(3)+` && document.querySelector('#drop').hidden`)
	names := eval[[]string](p, `[...document.querySelectorAll('#tray li .chip-name')].map((e) => e.textContent)`)
	if got := strings.Join(names, ","); got != "screenshot-0.png,dropped.png,notes.txt" {
		t.Errorf("tray: %s", got)
	}

	before := nStored(t, srv)
	p.do(chromedp.Evaluate[chromedp.Void](jsPasteFiles(b64, 8))) // 3 + 8 > 10
	p.wait("the refusal", `document.querySelector('#tray-error').textContent === 'A message may carry at most 10 files (3 already attached).'`)
	if after := nStored(t, srv); after != before || before != 3 {
		t.Errorf("%d files stored before a refused batch and %d after; want 3 and 3", before, after)
	}
	if n := eval[int](p, `document.querySelectorAll('#tray li').length`); n != 3 {
		t.Errorf("tray holds %d files after a refused batch, want the 3 before", n)
	}
}

// The server refuses a file (413, its attachments.max_bytes is lower than
// the UI's default): the tray says why, Send stays off with the reason,
// the composer keeps its text, and removing the file frees Send again.
func TestBrowserAttachTooLargeForServer(t *testing.T) {
	srv := newAttachServer(t, "", 1000)
	path := filepath.Join(t.TempDir(), "big.log")
	if err := os.WriteFile(path, bytes.Repeat([]byte("a log line\n"), 500), 0o600); err != nil {
		t.Fatal(err)
	}
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected)
	p.do(chromedp.SendKeys(chromedp.CSS("#message"), "my draft"))
	p.do(chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{path}))
	p.wait("the refusal in the tray", `(() => { const li = document.querySelector('#tray li');
		return li && li.dataset.state === 'failed' &&
			li.querySelector('.tray-status').textContent === 'not uploaded: the file is larger than 1000 B (attachments.max_bytes)'; })()`)
	if n := nStored(t, srv); n != 0 {
		t.Errorf("%d files stored from a refused upload", n)
	}
	p.wait("Send off, saying why", `document.querySelector('#send').disabled &&
		document.querySelector('#composer-reason').textContent === 'A file did not upload: retry or remove it to send.'`)
	if got := eval[string](p, `document.querySelector('#message').value`); got != "my draft" {
		t.Errorf("the composer's text is %q after a failed upload", got)
	}
	if n := eval[int](p, `document.querySelectorAll('#pending li, #log li.msg.user').length`); n != 0 {
		t.Errorf("%d messages went out with a failed upload", n)
	}
	p.screenshot("attach-too-large")
	p.do(chromedp.Click(chromedp.CSS("#tray li .tray-remove")))
	p.wait("Send on again", `!document.querySelector('#send').disabled && document.querySelector('#tray').hidden`)
}

// Files sent from one tab show in every tab: an image as a thumbnail
// loaded from GET /api/attachments/{sha256}, anything else as a chip with
// name and size; a click opens it in a new tab. A message may be files only.
func TestBrowserAttachmentsShownInEveryTab(t *testing.T) {
	srv := newAttachServer(t, "", 0)
	dir := t.TempDir()
	photo, notes := filepath.Join(dir, "photo.png"), filepath.Join(dir, "notes.txt")
	pic := testPNG(t, 40, 30)
	if err := os.WriteFile(photo, pic, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, []byte("ten bytes!"), 0o600); err != nil {
		t.Fatal(err)
	}
	browser := newBrowser(t, 1200, 800)
	a := openTab(t, browser, "tab A", srv.url())
	b := openTab(t, browser, "tab B", srv.url())
	a.wait("connected", jsConnected)
	b.wait("connected", jsConnected)

	a.do(chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{photo, notes}))
	a.wait("both uploaded", jsTrayDone(2))
	a.send("the photo and my notes")
	for _, p := range []*tab{a, b} {
		p.wait("the message with its thumbnail and chip", jsUserText("the photo and my notes")+` && (() => {
			const u = document.querySelector('#log li.msg.user');
			const img = u.querySelector('.attachments a.thumb img');
			const chip = u.querySelector('.attachments a.chip');
			return img && img.complete && img.naturalWidth === 40 && img.getAttribute('loading') === 'lazy' && img.alt === 'photo.png' &&
				chip && chip.textContent === 'notes.txt10 B' && chip.hasAttribute('download') && chip.target === '_blank'; })()`)
		p.wait("the reply", jsReplies+` === 1 && `+jsIdle)
	}
	if !eval[bool](a, `document.querySelector('#tray').hidden`) {
		t.Error("the tray is not empty after sending")
	}
	sum := sha256.Sum256(pic)
	id := hex.EncodeToString(sum[:])
	if href := eval[string](b, `document.querySelector('#log a.thumb').getAttribute('href')`); href != "/api/attachments/"+id {
		t.Errorf("thumbnail link %q", href)
	}
	a.screenshot("attachments-in-message")

	// Files only, no text: pasted into tab A, shown in tab B.
	eval[bool](a, jsPasteFiles(base64.StdEncoding.EncodeToString(testPNG(t, 24, 24)), 1))
	a.wait("the pasted image uploaded", jsTrayDone(1)+` && !document.querySelector('#send').disabled`)
	a.do(chromedp.Click(chromedp.CSS("#send")))
	b.wait("a message of one image", `(() => { const u = document.querySelectorAll('#log li.msg.user')[1];
		const img = u && u.querySelector('.attachments img');
		return img && img.complete && img.naturalWidth === 24 && u.querySelector('.text').hidden; })()`)
	b.wait("its reply done (nothing moves under the click)", jsReplies+` === 2 && `+jsIdle)

	// A click on the thumbnail opens the image in a new tab.
	opened := chromedp.WaitNewTarget(b.ctx, func(info *target.Info) bool {
		return strings.HasSuffix(info.URL, "/api/attachments/"+id)
	})
	b.do(chromedp.Click(chromedp.CSS("#log a.thumb")))
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("clicking the thumbnail opened no tab with the image")
	}
}

// Upload progress is shown while a file goes up: with uploads throttled to
// 256 KiB/s, a 768 KiB file is seen part-way (the bar between empty and
// full, the percentage in words), then done.
func TestBrowserAttachUploadProgress(t *testing.T) {
	srv := newAttachServer(t, "", 0)
	path := filepath.Join(t.TempDir(), "recording.bin")
	data := make([]byte, 768<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected)
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{{URLPattern: "*://*:*/api/attachments*", DownloadThroughput: -1, UploadThroughput: 256 << 10}}})
		return err
	}))
	p.do(chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{path}))
	p.wait("part-way", `(() => { const li = document.querySelector('#tray li'); const bar = li && li.querySelector('.tray-progress');
		return li && li.dataset.state === 'uploading' && !bar.hidden && bar.value > 0 && bar.value < bar.max &&
			/^uploading [1-9][0-9]? %$/.test(li.querySelector('.tray-status').textContent); })()`)
	p.screenshot("attach-progress")
	p.wait("done", jsTrayDone(1)+` && document.querySelector('#tray li .tray-progress').hidden`)
	if n := nStored(t, srv); n != 1 {
		t.Errorf("%d files stored", n)
	}
}
