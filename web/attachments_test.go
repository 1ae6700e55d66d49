package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"io/fs"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/web"
)

// fileEnv is a server with an attachment store behind every door.
type fileEnv struct {
	hub   *hub.SessionManager
	srv   *httptest.Server
	store *attachments.Store
	dir   string // the store's directory
	token string
}

const fileMax = 1 << 20 // a small limit keeps the hostile uploads cheap

func startFiles(t testing.TB, a agent.Agent, token string) *fileEnv {
	return startFilesMax(t, a, token, fileMax)
}

func startFilesMax(t testing.TB, a agent.Agent, token string, max int64) *fileEnv {
	t.Helper()
	dir := t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := attachments.Open(filepath.Join(dir, "attachments"), max)
	if err != nil {
		t.Fatal(err)
	}
	m := hub.New(hub.Config{DataDir: dir, Attachments: store, MaxAttachments: 10}, lg, a)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	wsh := ws.New(m, ws.Options{AttachmentMaxBytes: max})
	srv := httptest.NewServer(web.Handler(m, web.Options{
		Token: token, WS: wsh, Messages: webhook.New(m, webhook.Options{MaxBytes: 65536}),
		Attachments: store, AttachmentMaxBytes: max,
	}))
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
		wsh.Wait(context.Background())
		lg.Close()
	})
	return &fileEnv{hub: m, srv: srv, store: store, dir: filepath.Join(dir, "attachments"), token: token}
}

func pngBytes(t testing.TB, w, h int) []byte {
	var b bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 31) // noise, so it does not compress away
	}
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// uploadRaw posts data as the raw body.
func (e *fileEnv) uploadRaw(t testing.TB, data io.Reader, ctype, name string) reply {
	req, err := http.NewRequest("POST", e.srv.URL+"/api/attachments?name="+name, data)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	e.auth(req)
	return doTB(t, req)
}

// uploadMultipart posts data as the multipart field "file".
func (e *fileEnv) uploadMultipart(t testing.TB, data []byte, name string) reply {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("note", "ignored")
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write(data)
	mw.Close()
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/attachments", &b)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	e.auth(req)
	return doTB(t, req)
}

func (e *fileEnv) auth(req *http.Request) {
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
}

func doTB(t testing.TB, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	_ = json.Unmarshal(b, &r.body)
	return r
}

// storedFiles lists what the store holds (files, sidecars and leftovers).
func storedFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	return out
}

func TestUploadAndDownload(t *testing.T) {
	e := startFiles(t, &agent.Demo{}, "s3cret-token-for-tests")
	img := pngBytes(t, 8, 8)
	raw := e.uploadRaw(t, bytes.NewReader(img), "application/octet-stream", "cat.png")
	if raw.status != http.StatusCreated || raw.body["type"] != "image/png" || raw.body["name"] != "cat.png" ||
		raw.body["size"] != float64(len(img)) || !attachments.ValidHash(fmt.Sprint(raw.body["sha256"])) {
		t.Fatalf("raw upload = %d %s", raw.status, raw.raw)
	}
	multi := e.uploadMultipart(t, img, "kitten.png")
	if multi.status != http.StatusCreated || multi.body["sha256"] != raw.body["sha256"] || multi.body["name"] != "kitten.png" {
		t.Fatalf("multipart upload = %d %s; want the same sha256 as the raw one", multi.status, multi.raw)
	}
	if got := storedFiles(t, e.dir); len(got) != 2 { // one file, one sidecar
		t.Errorf("store holds %v; want one file and its sidecar", got)
	}

	url := e.srv.URL + "/api/attachments/" + raw.body["sha256"].(string)
	if r := doTB(t, request(t, "GET", url, "")); r.status != http.StatusUnauthorized {
		t.Errorf("GET without the token = %d, want 401", r.status)
	}
	req := request(t, "GET", url, "")
	e.auth(req)
	r := doTB(t, req)
	if r.status != 200 || r.raw != string(img) {
		t.Fatalf("GET = %d, %d bytes; want 200 and the image", r.status, len(r.raw))
	}
	for h, want := range map[string]string{
		"Content-Type": "image/png", "X-Content-Type-Options": "nosniff",
		"Content-Disposition": `inline; filename=kitten.png`, "ETag": `"` + raw.body["sha256"].(string) + `"`,
	} {
		if got := r.header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP %q does not sandbox", csp)
	}
	req = request(t, "GET", url, "", "If-None-Match", r.header.Get("ETag"))
	e.auth(req)
	if r := doTB(t, req); r.status != http.StatusNotModified {
		t.Errorf("GET with If-None-Match = %d, want 304", r.status)
	}

	for _, tc := range []struct {
		path string
		want int
	}{
		{strings.Repeat("a", 64), 404},
		{"not-a-hash", 400},
		{strings.Repeat("A", 64), 400},
	} {
		req := request(t, "GET", e.srv.URL+"/api/attachments/"+tc.path, "")
		e.auth(req)
		if r := doTB(t, req); r.status != tc.want {
			t.Errorf("GET %s = %d %s, want %d", tc.path, r.status, r.raw, tc.want)
		}
	}
}

// Hostile uploads each get a clear error or a safe result, and leave
// nothing partial on disk.
func TestUploadHostile(t *testing.T) {
	e := startFiles(t, &agent.Demo{}, "")
	get := func(sha string) reply {
		return doTB(t, request(t, "GET", e.srv.URL+"/api/attachments/"+sha, ""))
	}

	// Over the limit, raw and multipart, with and without a length.
	big := bytes.Repeat([]byte("x"), fileMax+1)
	if r := e.uploadRaw(t, bytes.NewReader(big), "text/plain", "big.txt"); r.status != 413 || r.body["code"] != "too_large" {
		t.Errorf("raw over the limit = %d %s", r.status, r.raw)
	}
	if r := e.uploadRaw(t, io.MultiReader(bytes.NewReader(big)), "text/plain", "big.txt"); r.status != 413 {
		t.Errorf("chunked over the limit = %d %s", r.status, r.raw)
	}
	if r := e.uploadMultipart(t, big, "big.txt"); r.status != 413 || r.body["code"] != "too_large" {
		t.Errorf("multipart over the limit = %d %s", r.status, r.raw)
	}
	if r := e.uploadRaw(t, bytes.NewReader(big[:fileMax]), "text/plain", "exact.txt"); r.status != 201 {
		t.Errorf("exactly the limit = %d %s", r.status, r.raw)
	}

	// 21 MiB against the default limit of 20 MiB, with a length and without.
	def := startFilesMax(t, &agent.Demo{}, "", attachments.DefaultMaxBytes)
	huge := func() io.Reader { return io.LimitReader(zeros{}, 21<<20) }
	req, _ := http.NewRequest("POST", def.srv.URL+"/api/attachments?name=huge.bin", huge())
	req.ContentLength = 21 << 20
	req.Header.Set("Content-Type", "application/octet-stream")
	if r := doTB(t, req); r.status != 413 || r.body["code"] != "too_large" {
		t.Errorf("21 MiB with Content-Length = %d %s", r.status, r.raw)
	}
	if r := def.uploadRaw(t, io.MultiReader(huge()), "application/octet-stream", "huge.bin"); r.status != 413 {
		t.Errorf("21 MiB chunked = %d %s", r.status, r.raw)
	}
	if got := storedFiles(t, def.dir); len(got) != 0 {
		t.Errorf("refused uploads left %v", got)
	}

	// HTML named .png: sniffed as HTML, served as a plain-text download.
	html := e.uploadRaw(t, strings.NewReader("<!DOCTYPE html><html><body><script>alert(document.cookie)</script></body></html>"), "image/png", "x.png")
	if html.status != 201 || html.body["type"] != "text/html; charset=utf-8" {
		t.Fatalf("HTML named .png = %d %s", html.status, html.raw)
	}
	r := get(html.body["sha256"].(string))
	if ct, cd := r.header.Get("Content-Type"), r.header.Get("Content-Disposition"); ct != "text/plain; charset=utf-8" || !strings.HasPrefix(cd, "attachment") {
		t.Errorf("HTML served as %q, %q; want text/plain as an attachment", ct, cd)
	}

	// SVG with script: never image/svg+xml, never inline, sandboxed.
	svg := `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>`
	s := e.uploadMultipart(t, []byte(svg), "logo.svg")
	if s.status != 201 || strings.Contains(fmt.Sprint(s.body["type"]), "svg") {
		t.Fatalf("SVG upload = %d %s", s.status, s.raw)
	}
	r = get(s.body["sha256"].(string))
	if ct, cd, csp := r.header.Get("Content-Type"), r.header.Get("Content-Disposition"), r.header.Get("Content-Security-Policy"); strings.Contains(ct, "svg") ||
		!strings.HasPrefix(cd, "attachment") || !strings.Contains(csp, "sandbox") || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("SVG served as %q, %q, CSP %q", ct, cd, csp)
	}

	// A path in the name keeps only the last element.
	if r := e.uploadRaw(t, strings.NewReader("hello"), "text/plain", "..%2F..%2Fx"); r.status != 201 || r.body["name"] != "x" {
		t.Errorf("name ../../x = %d %s", r.status, r.raw)
	}
	if r := e.uploadMultipart(t, []byte("hello"), "../../etc/passwd"); r.status != 201 || r.body["name"] != "passwd" {
		t.Errorf("multipart name ../../etc/passwd = %d %s", r.status, r.raw)
	}

	// A truncated multipart body: the connection ends mid-file.
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("file", "cut.bin")
	fw.Write(bytes.Repeat([]byte{1, 2, 3}, 10000))
	mw.Close()
	cut := b.Bytes()[:b.Len()/2]
	status := rawExchange(t, e.srv.Listener.Addr().String(), "POST /api/attachments HTTP/1.1\r\nHost: 127.0.0.1\r\n"+
		"Content-Type: "+mw.FormDataContentType()+"\r\nConnection: close\r\n"+
		fmt.Sprintf("Transfer-Encoding: chunked\r\n\r\n%x\r\n", len(cut))+string(cut)+"\r\n0\r\n\r\n")
	if !strings.Contains(status, " 400 ") {
		t.Errorf("truncated multipart = %q, want 400", status)
	}

	// No body type, no file field.
	if r := e.uploadRaw(t, strings.NewReader("x"), "", "x.txt"); r.status != 415 {
		t.Errorf("no Content-Type = %d %s", r.status, r.raw)
	}
	var nb bytes.Buffer
	nw := multipart.NewWriter(&nb)
	nw.WriteField("other", "x")
	nw.Close()
	req, _ = http.NewRequest("POST", e.srv.URL+"/api/attachments", &nb)
	req.Header.Set("Content-Type", nw.FormDataContentType())
	if r := doTB(t, req); r.status != 400 || r.body["code"] != "no_file" {
		t.Errorf("multipart without file = %d %s", r.status, r.raw)
	}

	for _, p := range storedFiles(t, e.dir) {
		if strings.Contains(p, ".put-") {
			t.Errorf("temporary file left behind: %s", p)
		}
	}
	// Stored: exact.txt, the HTML, the SVG, "hello" — each with a sidecar.
	if got := storedFiles(t, e.dir); len(got) != 8 {
		t.Errorf("store holds %v; want 4 files and 4 sidecars", got)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// rawExchange sends req on a fresh connection and returns the status line.
func rawExchange(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	line, _, _ := strings.Cut(string(b), "\r\n")
	return line
}

// Messages refer to uploads by id from the WebSocket and the webhook;
// unknown ids, malformed ids and too many are refused before anything is
// recorded, and the user event carries the records.
// connected tells a client the limits, so the page can refuse a file
// before uploading it.
func TestConnectedTellsAttachmentLimits(t *testing.T) {
	e := startFilesMax(t, &agent.Demo{}, "", 12345)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var first struct {
		Type event.Type
		Data event.ConnectedData
	}
	if err := json.Unmarshal(b, &first); err != nil || first.Type != event.Connected ||
		first.Data.AttachmentsMaxBytes != 12345 || first.Data.AttachmentsMaxPerMessage != 10 {
		t.Fatalf("first frame %s (%v); want connected with attachments_max_bytes 12345, attachments_max_per_message 10", b, err)
	}
}

func TestMessagesWithAttachments(t *testing.T) {
	e := startFiles(t, &agent.Demo{}, "")
	up := e.uploadRaw(t, bytes.NewReader(pngBytes(t, 4, 4)), "image/png", "chart.png")
	sha := up.body["sha256"].(string)
	p := peer(t, e.srv.URL)

	p.send(map[string]any{"type": "message", "content": "", "client_msg_id": "c1", "attachments": []string{sha}})
	u := p.until(event.User)
	var d event.UserData
	u.Decode(&d)
	want := event.Attachment{SHA256: sha, Name: "chart.png", Type: "image/png", Size: int64(up.body["size"].(float64))}
	if len(d.Attachments) != 1 || d.Attachments[0] != want {
		t.Fatalf("user event attachments %+v, want [%+v]", d.Attachments, want)
	}
	end := p.until(event.Assistant)
	var ad event.AssistantData
	end.Decode(&ad)
	if !strings.Contains(ad.Content, `You sent 1 file and no text: "chart.png" (image/png, `) {
		t.Errorf("demo reply %q does not describe the attachment", ad.Content)
	}
	p.until(event.TurnEnd)
	before, _ := e.hub.Info(context.Background())

	unknown := strings.Repeat("0", 64)
	eleven := make([]string, 11)
	for i := range eleven {
		r := e.uploadRaw(t, strings.NewReader(fmt.Sprintf("file %d", i)), "text/plain", fmt.Sprintf("f%d.txt", i))
		eleven[i] = r.body["sha256"].(string)
	}
	for _, tc := range []struct {
		name string
		ids  []string
		code string
	}{
		{"unknown", []string{sha, unknown}, "unknown_attachment"},
		{"malformed", []string{"../../etc/passwd"}, "bad_attachment"},
		{"eleven", eleven, "too_many_attachments"},
	} {
		p.send(map[string]any{"type": "message", "content": "look", "client_msg_id": "ws-" + tc.name, "attachments": tc.ids})
		ev := p.until(event.Error)
		var ed event.ErrorData
		ev.Decode(&ed)
		if ed.Code != tc.code || ed.ClientMsgID != "ws-"+tc.name {
			t.Errorf("ws %s: error %+v, want code %s", tc.name, ed, tc.code)
		}
		body, _ := json.Marshal(map[string]any{"content": "look", "attachments": tc.ids})
		r := doTB(t, request(t, "POST", e.srv.URL+"/api/messages", string(body), "Content-Type", "application/json"))
		if r.status != 400 || r.body["code"] != tc.code {
			t.Errorf("webhook %s = %d %s, want 400 %s", tc.name, r.status, r.raw, tc.code)
		}
	}
	after, _ := e.hub.Info(context.Background())
	if after.LastSeq != before.LastSeq {
		t.Errorf("refused messages were recorded: last_seq %d → %d", before.LastSeq, after.LastSeq)
	}

	body, _ := json.Marshal(map[string]any{"content": "ten files", "attachments": eleven[:10]})
	r := doTB(t, request(t, "POST", e.srv.URL+"/api/messages?wait=1", string(body), "Content-Type", "application/json"))
	if r.status != 200 || !strings.Contains(fmt.Sprint(r.body["reply"]), "You attached 10 files") {
		t.Errorf("webhook with ten files = %d %s", r.status, r.raw)
	}
	evs, _ := e.hub.Recent(context.Background(), 10)
	for _, ev := range evs {
		if m, ok := ev.Message(); ok && ev.Type == event.User && m.Content == "ten files" && len(m.Attachments) != 10 {
			t.Errorf("webhook user event has %d attachments, want 10", len(m.Attachments))
		}
	}
}

// BenchmarkUpload measures upload throughput through a real HTTP client
// and server into the store (raw body, 5 MiB, new content each time, so
// every upload is written and fsynced).
func BenchmarkUpload(b *testing.B) {
	e := startFilesMax(b, &agent.Demo{}, "", 20<<20)
	data := make([]byte, 5<<20)
	for i := range data {
		data[i] = byte(i * 13)
	}
	b.SetBytes(int64(len(data)))
	for i := 0; b.Loop(); i++ {
		data[0], data[1], data[2] = byte(i), byte(i>>8), byte(i>>16)
		r := e.uploadRaw(b, bytes.NewReader(data), "application/octet-stream", "f.bin")
		if r.status != http.StatusCreated {
			b.Fatalf("upload = %d %s", r.status, r.raw)
		}
	}
}
