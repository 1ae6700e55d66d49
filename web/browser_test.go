package web_test

// Browser tests: the real server, wired as main.go wires it, runs in-process
// and Debian's chromium (headless, offline flags) drives the embedded UI
// through chromedp. They synchronise on DOM conditions, never on sleeps.
// Screenshots of the main view go to $TMPDIR/frontdesk-ui/ (paths are
// logged), and every tab of a failed test is captured there as well.

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/people"
	"github.com/frontdesk-hq/frontdesk/web"
)

// ── the server ──

// liveServer is the whole server on a fixed loopback address, so that it
// can be stopped and started again on the same port with the same data
// directory, as a restart of the process would.
type liveServer struct {
	t      *testing.T
	dir    string
	addr   string // host:port, fixed after the first start
	token  string
	agent  agent.Agent
	buffer int // session.buffer_events; 0: the default
	retain int // session.retain_exchanges; 0: the default
	// maxClients is server.max_clients; 0: the default.
	maxClients int
	// attachMax is attachments.max_bytes (the store's and the upload's
	// limit); 0: the default, 20 MiB.
	attachMax int64
	tools     func() []agent.Tool
	// people and creds, when set, are web.Options People (config's
	// people) and Credentials: the page must sign in.
	people []config.Person
	creds  *auth.Store
	cur    *serverRun // nil while stopped
}

type serverRun struct {
	hub     *hub.SessionManager
	stopHub context.CancelFunc
	hubDone chan struct{}
	http    *http.Server
	served  chan struct{}
	ws      *ws.Handler
	log     *history.Log
}

func newLiveServer(t *testing.T, token string, a agent.Agent) *liveServer {
	t.Helper()
	return newLiveServerBuffer(t, token, a, 0)
}

// newLiveServerBuffer is newLiveServer with session.buffer_events set: a
// small replay buffer makes the page start with only the recent part.
func newLiveServerBuffer(t *testing.T, token string, a agent.Agent, bufferEvents int) *liveServer {
	t.Helper()
	s := &liveServer{t: t, dir: t.TempDir(), token: token, agent: a, buffer: bufferEvents}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *liveServer) url() string { return "http://" + s.addr + "/" }

// start runs the hub (restoring seq and history from the chat log), the
// WebSocket and webhook channels and the web handler.
func (s *liveServer) start() {
	s.t.Helper()
	path := filepath.Join(s.dir, "chat_history.ndjson")
	buffer := s.buffer
	if buffer <= 0 {
		buffer = 5000
	}
	tail, _, err := history.ReadTail(path, buffer)
	if err != nil {
		s.t.Fatalf("read chat log: %v", err)
	}
	lg, err := history.Open(history.Options{Path: path, RotateMB: 5, Fsync: history.FsyncNever})
	if err != nil {
		s.t.Fatal(err)
	}
	var logSeq int64
	if len(tail) > 0 {
		logSeq = tail[len(tail)-1].Seq
	}
	ix, err := index.NewFollower(index.FollowerOptions{Path: filepath.Join(s.dir, index.FileName),
		Log: history.NewReader(path).Since, LogSeq: logSeq, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		s.t.Fatal(err)
	}
	files, err := attachments.Open(filepath.Join(s.dir, "attachments"), s.attachMax)
	if err != nil {
		s.t.Fatal(err)
	}
	cfg := hub.Config{DataDir: s.dir, Restore: tail, BufferEvents: buffer, RetainExchanges: s.retain,
		History: history.NewReader(path), Index: ix, Tools: s.tools, Attachments: files}
	var dir *people.Directory
	if s.people != nil {
		dir = people.New(s.people)
		cfg.Gate = dir // the hub decides with the same people as the guard
	}
	m := hub.New(cfg, lg, s.agent)
	ctx, stop := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	ixDone := make(chan struct{})
	go func() { defer close(ixDone); ix.Run(ctx) }()
	go func() { defer close(hubDone); m.Run(ctx); <-ixDone }()
	wsh := ws.New(m, ws.Options{MaxClients: s.maxClients})
	ln := s.listen()
	srv := &http.Server{
		Handler: web.Handler(m, web.Options{
			Addr: s.addr, Token: s.token, WS: wsh, Messages: webhook.New(m, webhook.Options{MaxBytes: 65536}),
			Attachments: files, AttachmentMaxBytes: files.MaxBytes(),
			People: dir, Credentials: s.creds,
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(ln) }()
	s.cur = &serverRun{hub: m, stopHub: stop, hubDone: hubDone, http: srv, served: served, ws: wsh, log: lg}
}

// listen binds 127.0.0.1:0 the first time and the same port afterwards;
// a port just released may refuse briefly, so that is retried.
func (s *liveServer) listen() net.Listener {
	s.t.Helper()
	if s.addr == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.t.Fatal(err)
		}
		s.addr = ln.Addr().String()
		return ln
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := net.Listen("tcp", s.addr)
		if err == nil {
			return ln
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("listen again on %s: %v", s.addr, err)
		}
		<-time.After(50 * time.Millisecond)
	}
}

// stop shuts down in main.go's order: the hub (the running turn ends
// interrupted, every WebSocket is closed with 1001), HTTP, then the log.
func (s *liveServer) stop() {
	r := s.cur
	if r == nil {
		return
	}
	s.cur = nil
	r.stopHub()
	<-r.hubDone
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.http.Shutdown(ctx); err != nil {
		r.http.Close()
	}
	<-r.served
	if err := r.ws.Wait(ctx); err != nil {
		s.t.Errorf("websocket connections did not end: %v", err)
	}
	if err := r.log.Close(); err != nil {
		s.t.Errorf("close chat log: %v", err)
	}
}

// post sends a webhook message as a script would.
func (s *liveServer) post(body string) {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.url()+"api/messages", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		s.t.Fatalf("POST /api/messages %s = %d, want 202", body, resp.StatusCode)
	}
}

// submitEmail puts a message into the session as the email door does (a
// webhook may not use the email channel).
func (s *liveServer) submitEmail(from, content string) {
	s.t.Helper()
	res, err := s.cur.hub.Submit(context.Background(), hub.Input{Channel: event.ChannelEmail, From: from, Content: content, Patient: true})
	if err != nil || (res.Outcome != hub.Started && res.Outcome != hub.Queued) {
		s.t.Fatalf("submit email: outcome %v, err %v", res.Outcome, err)
	}
}

// seed runs n turns through the hub, one after the other, as if they came
// in by webhook before anyone opened the page.
func (s *liveServer) seed(n int, content func(i int) string) {
	s.t.Helper()
	for i := range n {
		done := make(chan hub.TurnOutcome, 1)
		res, err := s.cur.hub.Submit(context.Background(), hub.Input{Channel: event.ChannelWebhook, Content: content(i), Done: done})
		if err != nil || res.Outcome != hub.Started {
			s.t.Fatalf("seed turn %d: outcome %v, err %v", i, res.Outcome, err)
		}
		select {
		case o := <-done:
			if o.Status != event.StatusCompleted {
				s.t.Fatalf("seed turn %d ended %s: %s", i, o.Status, o.Error)
			}
		case <-time.After(10 * time.Second):
			s.t.Fatalf("seed turn %d did not end", i)
		}
	}
}

// userEvents returns the content of every user event the session holds.
func (s *liveServer) userEvents() []event.UserData {
	s.t.Helper()
	sub, snap, err := s.cur.hub.Subscribe(context.Background(), 0)
	if err != nil {
		s.t.Fatal(err)
	}
	defer sub.Close()
	var out []event.UserData
	for _, f := range snap.Replay {
		if f.Event.Type != event.User {
			continue
		}
		var d event.UserData
		if err := f.Event.Decode(&d); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// scripted is an agent whose turns the test steers: it reports a status,
// optionally a tool call and its result, then streams reply(input) word by
// word. With hold set the last word waits until hold yields a value (or the
// turn is cancelled), so "while it streams" lasts as long as the test needs.
type scripted struct {
	delay time.Duration
	tool  bool
	hold  chan struct{}
	reply func(input string) string
}

func (a *scripted) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	emit(event.Status, event.TextData{Text: "reading your message…"})
	if a.tool {
		args, _ := json.Marshal(map[string]any{"query": "deploy", "limit": 5})
		emit(event.ToolCall, event.ToolCallData{ID: "call-1", Name: "history_search", Args: args})
		emit(event.Status, event.TextData{Text: "searching the history…"})
		emit(event.ToolResult, event.ToolResultData{ID: "call-1", Name: "history_search",
			Output: "2 matches\n#3 user (web): can you deploy on friday?\n#9 user (email): deploy postponed"})
	}
	text := "You said: " + req.Content
	if a.reply != nil {
		text = a.reply(req.Content)
	}
	words := strings.SplitAfter(text, " ")
	for i, w := range words {
		var wait <-chan time.Time
		if i == len(words)-1 && a.hold != nil {
			select {
			case <-a.hold:
			case <-ctx.Done():
				return agent.Reply{}, ctx.Err()
			}
		} else if i > 0 && a.delay > 0 {
			wait = time.After(a.delay)
			select {
			case <-wait:
			case <-ctx.Done():
				return agent.Reply{}, ctx.Err()
			}
		}
		emit(event.Delta, event.TextData{Text: w})
	}
	return agent.Reply{Content: text}, nil
}

// ── the browser ──

// newBrowser starts a headless Chromium for the test. It fails in CI when
// chromium is missing (.ci/run installs it) and skips elsewhere.
func newBrowser(t *testing.T, width, height int) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is required in CI for the browser tests (.ci/run installs it)")
		}
		t.Skip("chromium is not installed: skipping the browser tests")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in CI, where Chromium's sandbox refuses to start
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		// Two tabs share a conversation: the one behind must keep running.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Do(bctx); err != nil { // starts the browser; no timeout on this first call
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// tab is one browser tab on the UI.
type tab struct {
	t    *testing.T
	ctx  context.Context
	name string
}

// openTab opens url in a new tab and waits for the page to load.
func openTab(t *testing.T, browser context.Context, name, url string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	b := &tab{t: t, ctx: ctx, name: name}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("%s: open tab: %v", name, err)
	}
	// Registered after cancel, so it runs before the tab closes.
	t.Cleanup(func() {
		if t.Failed() {
			b.screenshot("failed-" + t.Name() + "-" + name)
		}
	})
	b.do(chromedp.Navigate(url))
	return b
}

func (b *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\n%s", b.name, err, b.state())
	}
}

// wait polls the JavaScript condition until it is truthy.
func (b *tab) wait(what, cond string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 12*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		b.t.Fatalf("%s: waiting for %s: %v\n%s", b.name, what, err, b.state())
	}
}

func eval[T any](b *tab, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: eval %s: %v\n%s", b.name, expr, err, b.state())
	}
	return v
}

// state describes the page for failure messages.
func (b *tab) state() string {
	ctx, cancel := context.WithTimeout(b.ctx, 3*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({
		title: document.title,
		conn: document.querySelector('#conn') && document.querySelector('#conn').innerText,
		note: document.querySelector('#composer-note') && document.querySelector('#composer-note').innerText,
		log: document.querySelector('#log') && document.querySelector('#log').innerText.slice(-1500),
		pending: document.querySelector('#pending') && document.querySelector('#pending').innerText,
	}, null, 1)`))
	if err != nil {
		return "(page state unavailable: " + err.Error() + ")"
	}
	return b.name + " page: " + s
}

// send types text into the composer and presses Enter, as a person would.
func (b *tab) send(text string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS("#message")), chromedp.SendKeys(chromedp.CSS("#message"), text), pressEnter(false))
}

// pressEnter presses Enter (with Shift if asked) the way a keyboard does: one
// keyDown that carries the text, so a page that calls preventDefault on it
// gets no newline. (chromedp.KeyEvent sends the text as a separate "char"
// event, which inserts the newline whatever the page did with the keydown.)
func pressEnter(shift bool) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		var mod int64
		if shift {
			mod = int64(chromedp.ModifierShift)
		}
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: "Enter", Code: "Enter", Text: "\r", UnmodifiedText: "\r",
			WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13, Modifiers: mod}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := down
		up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, up)
		return err
	})
}

// pressKey presses one key the way a keyboard does (see pressEnter): a
// keyDown carrying its text, so a page that handles the keydown (a "/"
// shortcut) gets no stray character, then the keyUp.
func pressKey(key, code, text string, vk int64, mod int64) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: key, Code: code, Text: text, UnmodifiedText: text,
			WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk, Modifiers: mod}
		if text == "" {
			down.Type = input.DispatchKeyEventTypeRawKeyDown
		}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := down
		up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, up)
		return err
	})
}

// screenshot saves the viewport as $TMPDIR/frontdesk-ui/<name>.png.
func (b *tab) screenshot(name string) string {
	dir := filepath.Join(os.TempDir(), "frontdesk-ui")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Logf("screenshot: %v", err)
		return ""
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(name)+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Logf("screenshot: %v", err)
		return ""
	}
	b.t.Logf("screenshot: %s", path)
	return path
}

// emulate sets the viewport and the colour scheme the page sees.
func (b *tab) emulate(width, height int64, mobile bool, scheme string) {
	b.t.Helper()
	var opts []chromedp.EmulateViewportOption
	if mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
	}
	b.do(chromedp.EmulateViewport(width, height, opts...), chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	}))
}

// JavaScript conditions shared by the tests.
const (
	jsConnected = `document.querySelector('#conn').dataset.state === 'connected'`
	jsIdle      = `document.title === 'frontdesk' && document.querySelector('#statusline').hidden`
	jsUsers     = `document.querySelectorAll('#log li.msg.user').length`
	jsReplies   = `document.querySelectorAll('#log li.msg.assistant').length`
	jsStreaming = `!!document.querySelector('#log li.msg.assistant.streaming .caret')`
)

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// jsUserText is true when the last user message reads text.
func jsUserText(text string) string {
	return `(() => { const u = [...document.querySelectorAll('#log li.msg.user .text')]; return u.length > 0 && u[u.length-1].textContent === ` + jsString(text) + `; })()`
}
