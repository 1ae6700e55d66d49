package web_test

// Browser tests of attachments in the UI: the attach button (a real file
// input), paste and drop of images, upload errors, the limits checked
// before a byte is sent. Until the attachment store is on this branch the
// server side of POST/GET /api/attachments is fakeAttachments below, which
// answers as docs/protocol.md says (201 {sha256, name, type, size}, 413
// {code: "too_large", message}); sending a message with attachments and a
// second tab seeing it need the real hub, and are tested when it lands.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// fakeAttachments is an in-memory POST/GET /api/attachments with the
// token check of /api/*.
type fakeAttachments struct {
	token string
	max   int64
	mu    sync.Mutex
	files map[string]fakeFile
	posts int
}

type fakeFile struct {
	name, typ string
	data      []byte
}

func (f *fakeAttachments) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/attachments") {
			next.ServeHTTP(w, r)
			return
		}
		if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token && r.URL.Query().Get("token") != f.token {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"code": "unauthorized", "message": "a valid token is required"})
			return
		}
		if r.Method == http.MethodPost && r.URL.Path == "/api/attachments" {
			f.post(w, r)
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/api/attachments/")
		f.mu.Lock()
		file, ok := f.files[id]
		f.mu.Unlock()
		if r.Method != http.MethodGet || !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"code": "not_found", "message": "no attachment " + id})
			return
		}
		w.Header().Set("Content-Type", file.typ)
		w.Write(file.data)
	})
}

func (f *fakeAttachments) post(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.posts++
	f.mu.Unlock()
	data, err := io.ReadAll(io.LimitReader(r.Body, f.max+1))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"code": "bad_body", "message": err.Error()})
		return
	}
	if int64(len(data)) > f.max {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"code": "too_large",
			"message": fmt.Sprintf("the file is larger than %d B (attachments.max_bytes)", f.max)})
		return
	}
	sum := sha256.Sum256(data)
	id := hex.EncodeToString(sum[:])
	file := fakeFile{name: r.URL.Query().Get("name"), typ: http.DetectContentType(data), data: data}
	f.mu.Lock()
	f.files[id] = file
	f.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"sha256": id, "name": file.name, "type": file.typ, "size": len(data)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (f *fakeAttachments) count() (posts, files int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posts, len(f.files)
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

func newAttachServer(t *testing.T, token string, max int64) (*liveServer, *fakeAttachments) {
	fake := &fakeAttachments{token: token, max: max, files: map[string]fakeFile{}}
	srv := &liveServer{t: t, dir: t.TempDir(), token: token, agent: &agent.Demo{Delay: time.Millisecond}, front: fake.wrap}
	srv.start()
	t.Cleanup(srv.stop)
	return srv, fake
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
		for (let i = 0; i < %d; i++) dt.items.add(new File([bytes], 'screenshot-' + i + '.png', { type: 'image/png' }));
		const e = new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true });
		document.querySelector('#message').dispatchEvent(e);
		return e.defaultPrevented; })()`, b64, n)
}

// Through the attach button's file input (a real file from disk), with the
// token in use: the upload carries it, the tray shows the thumbnail from
// GET /api/attachments/{sha256}?token=, and the stored bytes are the file's.
func TestBrowserAttachThroughFileInput(t *testing.T) {
	srv, fake := newAttachServer(t, "s3cret", 20<<20)
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
	if src := eval[string](p, `document.querySelector('#tray li .tray-thumb img').getAttribute('src')`); src != "/api/attachments/"+id+"?token=s3cret" {
		t.Errorf("thumbnail src %q", src)
	}
	if got := eval[string](p, `document.querySelector('#tray li .chip-name').textContent`); got != "diagram.png" {
		t.Errorf("tray name %q", got)
	}
	if posts, files := fake.count(); posts != 1 || files != 1 {
		t.Errorf("%d uploads, %d files stored; want 1 and 1", posts, files)
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
	srv, fake := newAttachServer(t, "", 20<<20)
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

	before, _ := fake.count()
	p.do(chromedp.Evaluate[chromedp.Void](jsPasteFiles(b64, 8))) // 3 + 8 > 10
	p.wait("the refusal", `document.querySelector('#tray-error').textContent === 'A message may carry at most 10 files (3 already attached).'`)
	if after, _ := fake.count(); after != before {
		t.Errorf("%d uploads of a refused batch", after-before)
	}
	if n := eval[int](p, `document.querySelectorAll('#tray li').length`); n != 3 {
		t.Errorf("tray holds %d files after a refused batch, want the 3 before", n)
	}
}

// The server refuses a file (413, its attachments.max_bytes is lower than
// the UI's default): the tray says why, Send stays off with the reason,
// the composer keeps its text, and removing the file frees Send again.
func TestBrowserAttachTooLargeForServer(t *testing.T) {
	srv, _ := newAttachServer(t, "", 1000)
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

// A message with files (put in by a door, as email does) shows in every
// tab: an image as a thumbnail loaded from GET /api/attachments/{sha256},
// anything else as a chip with name and size; a click opens it in a new tab.
func TestBrowserAttachmentsShownInEveryTab(t *testing.T) {
	srv, fake := newAttachServer(t, "", 20<<20)
	store := func(name string, data []byte) event.Attachment {
		resp, err := http.Post(srv.url()+"api/attachments?name="+name, "application/octet-stream", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a event.Attachment
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("store %s: %d %v", name, resp.StatusCode, err)
		}
		return a
	}
	pic := store("photo.png", testPNG(t, 40, 30))
	notes := store("notes.txt", []byte("ten bytes!"))
	if _, files := fake.count(); files != 2 {
		t.Fatalf("%d files stored", files)
	}
	browser := newBrowser(t, 1200, 800)
	a := openTab(t, browser, "tab A", srv.url())
	b := openTab(t, browser, "tab B", srv.url())
	a.wait("connected", jsConnected)
	b.wait("connected", jsConnected)

	done := make(chan hub.TurnOutcome, 1)
	if _, err := srv.cur.hub.Submit(context.Background(), hub.Input{Channel: event.ChannelEmail, From: "ana@example.com",
		Content: "the photo and my notes", Attachments: []event.Attachment{pic, notes}, Done: done}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*tab{a, b} {
		p.wait("the thumbnail and the chip", `(() => {
			const u = document.querySelector('#log li.msg.user');
			const img = u && u.querySelector('.attachments a.thumb img');
			const chip = u && u.querySelector('.attachments a.chip');
			return img && img.complete && img.naturalWidth === 40 && img.getAttribute('loading') === 'lazy' && img.alt === 'photo.png' &&
				chip && chip.textContent === 'notes.txt10 B' && chip.hasAttribute('download') && chip.target === '_blank'; })()`)
		if href := eval[string](p, `document.querySelector('#log a.thumb').getAttribute('href')`); href != "/api/attachments/"+pic.SHA256 {
			t.Errorf("%s: thumbnail link %q", p.name, href)
		}
	}
	a.screenshot("attachments-in-message")

	// A click on the thumbnail opens the image in a new tab.
	opened := chromedp.WaitNewTarget(a.ctx, func(info *target.Info) bool {
		return strings.HasSuffix(info.URL, "/api/attachments/"+pic.SHA256)
	})
	a.do(chromedp.Click(chromedp.CSS("#log a.thumb")))
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("clicking the thumbnail opened no tab with the image")
	}
}
