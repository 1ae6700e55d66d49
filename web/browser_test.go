package web_test

// Browser tests: the real server, wired as main.go wires it, runs in-process
// and Debian's chromium (headless, offline flags) drives the embedded UI
// through chromedp. They synchronise on DOM conditions, never on sleeps.
// Screenshots of the main view go to $TMPDIR/frontdesk-ui/ (paths are
// logged), and every tab of a failed test is captured there as well.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/chromedp/chromedp/kb"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/webhook"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/index"
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
	tools  func() []agent.Tool
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
	m := hub.New(hub.Config{DataDir: s.dir, Restore: tail, BufferEvents: buffer, History: history.NewReader(path), Index: ix, Tools: s.tools}, lg, s.agent)
	ctx, stop := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	ixDone := make(chan struct{})
	go func() { defer close(ixDone); ix.Run(ctx) }()
	go func() { defer close(hubDone); m.Run(ctx); <-ixDone }()
	wsh := ws.New(m, ws.Options{})
	ln := s.listen()
	srv := &http.Server{
		Handler: web.Handler(m, web.Options{
			Addr: s.addr, Token: s.token, WS: wsh, Messages: webhook.New(m, webhook.Options{MaxBytes: 65536}),
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

// ── the tests ──

// Two tabs share one conversation: what one sends, both show, the reply
// streams into both with a caret and a status line, the title says
// "working…", and the other tab's composer is off with its reason until the
// reply is done. Shift+Enter makes a newline, Enter sends.
func TestBrowserTwoTabsShareConversation(t *testing.T) {
	hold := make(chan struct{})
	srv := newLiveServer(t, "", &scripted{delay: 5 * time.Millisecond, hold: hold,
		reply: func(in string) string {
			return "Noted: **" + strings.ReplaceAll(in, "\n", " / ") + "** — shared with every tab."
		}})
	browser := newBrowser(t, 1200, 800)
	a := openTab(t, browser, "tab A", srv.url())
	b := openTab(t, browser, "tab B", srv.url())
	a.wait("tab A connected", jsConnected)
	b.wait("tab B connected", jsConnected)

	a.do(chromedp.Click(chromedp.CSS("#message")), chromedp.SendKeys(chromedp.CSS("#message"), "hello from tab A"),
		pressEnter(true), chromedp.SendKeys(chromedp.CSS("#message"), "second line"), pressEnter(false))
	for _, p := range []*tab{a, b} {
		p.wait("the message in both tabs", jsUserText("hello from tab A\nsecond line"))
		p.wait("its web badge", `document.querySelector('#log li.msg.user .badge.ch-web').textContent === 'web'`)
		p.wait("the reply streaming with a caret", jsStreaming)
		p.wait("the status line", `!document.querySelector('#statusline').hidden && document.querySelector('#status-text').textContent === 'reading your message…'`)
		p.wait("the busy title", `document.title === 'working… — frontdesk'`)
		p.wait("the Cancel button", `!document.querySelector('#cancel').hidden`)
	}
	if got := eval[string](a, `document.querySelector('#message').value`); got != "" {
		t.Errorf("composer after Enter = %q, want it cleared", got)
	}

	// Tab B may draft, but not send, while the assistant works; it says why.
	b.do(chromedp.Click(chromedp.CSS("#message")), chromedp.SendKeys(chromedp.CSS("#message"), "draft"), pressEnter(false))
	b.wait("Send off with its reason", `document.querySelector('#send').disabled && !document.querySelector('#composer-reason').hidden &&
		/replying/.test(document.querySelector('#composer-reason').textContent)`)
	if n := eval[int](b, `document.querySelectorAll('#pending li').length`); n != 0 {
		t.Errorf("Enter while busy queued %d messages, want none", n)
	}

	hold <- struct{}{}
	want := "Noted: hello from tab A / second line — shared with every tab."
	for _, p := range []*tab{a, b} {
		p.wait("the final reply", `(() => { const m = document.querySelector('#log li.msg.assistant:not(.streaming) .md');
			return m && m.textContent === `+jsString(want)+` && !!m.querySelector('strong'); })()`)
		p.wait("idle again", jsIdle)
		if n := eval[int](p, jsUsers+` * 10 + `+jsReplies); n != 11 {
			t.Errorf("%s: %d user messages and %d replies, want 1 and 1", p.name, n/10, n%10)
		}
	}
	b.wait("Send back on for the draft", `!document.querySelector('#send').disabled && document.querySelector('#composer-reason').hidden &&
		document.querySelector('#message').value === 'draft'`)
}

// Cancel in one tab stops the streaming reply in both: the caret goes, the
// reply is marked cut short, and both show the cancellation.
func TestBrowserCancelStopsStreamingInBothTabs(t *testing.T) {
	hold := make(chan struct{}) // never released: only Cancel ends this turn
	srv := newLiveServer(t, "", &scripted{delay: 5 * time.Millisecond, hold: hold,
		reply: func(string) string { return "This reply goes on and on and would never end on its own." }})
	browser := newBrowser(t, 1200, 800)
	a := openTab(t, browser, "tab A", srv.url())
	b := openTab(t, browser, "tab B", srv.url())
	a.wait("tab A connected", jsConnected)
	b.wait("tab B connected", jsConnected)

	a.send("tell me a long story")
	a.wait("streaming in A", jsStreaming)
	b.wait("streaming in B", jsStreaming)
	b.do(chromedp.Click(chromedp.CSS("#cancel")))
	for _, p := range []*tab{a, b} {
		p.wait("the cancellation", `[...document.querySelectorAll('#log li.turn-end.cancelled')].some((e) => /^Cancelled/.test(e.textContent))`)
		p.wait("the caret gone and the reply marked cut short", `!document.querySelector('#log .caret') &&
			document.querySelector('#log li.msg.assistant').classList.contains('partial') &&
			/cut short/.test(document.querySelector('#log li.msg.assistant .flag').textContent)`)
		p.wait("the cancel notice", `[...document.querySelectorAll('#log li.notice')].some((e) => /cancel/i.test(e.textContent))`)
		p.wait("idle again", jsIdle+` && document.querySelector('#cancel').hidden`)
	}
	ta := eval[string](a, `document.querySelector('#log li.msg.assistant .md').textContent`)
	tb := eval[string](b, `document.querySelector('#log li.msg.assistant .md').textContent`)
	if ta != tb || !strings.HasSuffix(ta, "on its") {
		t.Errorf("replies after cancel: A %q, B %q; want the same text, stopped before the held last word", ta, tb)
	}
}

// Messages from other doors carry their badge: webhook with its sender,
// email with the address, and a custom webhook channel.
func TestBrowserWebhookMessageBadge(t *testing.T) {
	srv := newLiveServer(t, "", &agent.Demo{Delay: time.Millisecond})
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected)

	for i, tc := range []struct{ body, class, label string }{
		{`{"content":"build 1432 failed","from":"ci-bot"}`, "ch-webhook", "webhook · ci-bot"},
		{"", "ch-email", "email · ana@example.com"}, // from the email door
		{`{"content":"nightly report ready","channel":"cron"}`, "ch-custom", "cron"},
	} {
		if tc.body == "" {
			srv.submitEmail("ana@example.com", "Can we move the call?")
		} else {
			srv.post(tc.body)
		}
		p.wait(tc.label+" badge", fmt.Sprintf(`(() => { const b = document.querySelectorAll('#log li.msg.user .badge');
			return b.length === %d && b[%d].classList.contains(%s) && b[%d].textContent === %s; })()`,
			i+1, i, jsString(tc.class), i, jsString(tc.label)))
		p.wait("the reply", fmt.Sprintf(`document.querySelectorAll('#log li.msg.assistant:not(.streaming)').length === %d && `+jsIdle, i+1))
	}
}

// The server restarts: the page says so, reconnects by itself with since,
// shows nothing twice, and the conversation goes on (seq continues).
func TestBrowserServerRestartReconnectsWithoutDuplicates(t *testing.T) {
	srv := newLiveServer(t, "", &agent.Demo{Delay: time.Millisecond})
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected)
	p.send("before the restart")
	p.wait("the reply", jsReplies+` === 1 && `+jsIdle)

	srv.stop()
	p.wait("the reconnecting indicator", `document.querySelector('#conn').dataset.state !== 'connected' &&
		/reconnecting|offline/.test(document.querySelector('#conn-text').textContent)`)
	srv.start()
	p.wait("connected again", jsConnected)
	if got := eval[int](p, jsUsers+` * 10 + `+jsReplies); got != 11 {
		t.Fatalf("after the restart: %d user messages and %d replies, want 1 and 1\n%s", got/10, got%10, p.state())
	}

	p.send("after the restart")
	p.wait("the second reply", jsReplies+` === 2 && `+jsIdle+` && `+jsUserText("after the restart"))
	p.do(chromedp.Reload())
	p.wait("connected after reload", jsConnected+` && `+jsReplies+` === 2`)
	if got := eval[int](p, jsUsers+` * 10 + `+jsReplies); got != 22 {
		t.Fatalf("after a reload: %d user messages and %d replies, want 2 and 2\n%s", got/10, got%10, p.state())
	}
}

// A message sent while the server is down is kept on screen, and delivered
// exactly once (with its client_msg_id) when the server is back.
func TestBrowserMessageSentWhileServerDownDeliveredOnce(t *testing.T) {
	srv := newLiveServer(t, "", &agent.Demo{Delay: time.Millisecond})
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected)

	srv.stop()
	p.wait("disconnected", `document.querySelector('#conn').dataset.state !== 'connected'`)
	p.send("sent while the server was down")
	p.wait("the message kept as pending", `(() => { const li = document.querySelector('#pending li');
		return !!li && li.dataset.state === 'waiting' && /waiting for the connection/.test(li.textContent); })()`)
	p.wait("the offline reason", `/kept and delivered/.test(document.querySelector('#composer-reason').textContent)`)
	p.screenshot("offline-pending")

	srv.start()
	p.wait("delivered and answered", jsConnected+` && `+jsUserText("sent while the server was down")+` && `+
		`document.querySelectorAll('#pending li').length === 0 && `+jsReplies+` === 1 && `+jsIdle)
	if got := eval[int](p, jsUsers); got != 1 {
		t.Errorf("page shows %d user messages, want 1", got)
	}
	var n int
	for _, u := range srv.userEvents() {
		if u.Content == "sent while the server was down" {
			n++
			if !strings.HasPrefix(u.ClientMsgID, "c-") {
				t.Errorf("delivered without the page's client_msg_id: %+v", u)
			}
		}
	}
	if n != 1 {
		t.Errorf("the session holds the message %d times, want once", n)
	}
}

// An assistant reply in Markdown renders as formatting, hostile parts as
// text; a user message is shown exactly as typed. Nothing runs.
func TestBrowserMarkdownRendersSafely(t *testing.T) {
	srv := newLiveServer(t, "", &scripted{reply: func(string) string { return markdownReply }})
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected)

	typed := `<script>window.__pwned=1</script> <img src=x onerror="window.__pwned=2"> **stays as typed**`
	p.send(typed)
	p.wait("the user message as typed", jsUserText(typed))
	p.wait("the reply", jsReplies+` === 1 && `+jsIdle)

	checks := []struct{ what, cond string }{
		{"a heading (### is h5: replies sit below the page's h1)", `md.querySelector('h5').textContent === 'Deploy plan'`},
		{"bold and italic", `md.querySelector('strong').textContent === 'Friday' && md.querySelector('em em, em').textContent === 'after'`},
		{"inline code", `[...md.querySelectorAll('p code')].some((c) => c.textContent === 'make deploy')`},
		{"a fenced code block with its language", `md.querySelector('pre[data-lang="sh"] code').textContent === 'make test\nmake deploy ENV=prod'`},
		{"a bullet list", `md.querySelectorAll('ul > li').length === 2`},
		{"a numbered list", `md.querySelectorAll('ol > li').length === 2`},
		{"a blockquote", `/ship it/.test(md.querySelector('blockquote').textContent)`},
		{"links open safely in a new tab", `[...md.querySelectorAll('a')].length === 2 && [...md.querySelectorAll('a')].every((a) =>
			/^https:/.test(a.getAttribute('href')) && a.rel === 'noopener noreferrer' && a.target === '_blank')`},
		{"the javascript: link is text", `md.textContent.includes('[click me](javascript:window.__pwned=3)')`},
		{"raw HTML is text", `md.textContent.includes('<script>window.__pwned=4</script>') && md.textContent.includes('<img src=x onerror=window.__pwned=5>')`},
		{"no script, image, iframe or handler anywhere", `!document.querySelector('#log script, #log img, #log iframe, #log object, #log svg') &&
			![...document.querySelectorAll('#log *')].some((e) => [...e.attributes].some((a) => /^on/i.test(a.name)))`},
		{"the user's asterisks are not bold", `!document.querySelector('#log li.msg.user strong')`},
		{"nothing ran", `window.__pwned === undefined`},
	}
	for _, c := range checks {
		if !eval[bool](p, `(() => { const md = document.querySelector('#log li.msg.assistant .md'); return !!(`+c.cond+`); })()`) {
			t.Errorf("markdown: want %s\n%s", c.what, p.state())
		}
	}
	p.screenshot("markdown")
}

const markdownReply = "### Deploy plan\n\n" +
	"We ship on **Friday**, *after* the checks; run `make deploy` from the repo root:\n\n" +
	"```sh\nmake test\nmake deploy ENV=prod\n```\n\n" +
	"- keep the [runbook](https://example.com/runbook) open\n- watch https://status.example.com\n\n" +
	"1. announce\n2. deploy\n\n" +
	"> ship it\n\n" +
	"Not links: [click me](javascript:window.__pwned=3) and not HTML: <script>window.__pwned=4</script> <img src=x onerror=window.__pwned=5>"

// With a token set, the page asks for it once, says plainly when it is
// wrong, keeps the right one in localStorage and does not ask again.
func TestBrowserTokenPrompt(t *testing.T) {
	srv := newLiveServer(t, "s3cret", &agent.Demo{Delay: time.Millisecond})
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("the token prompt", `!document.querySelector('#auth').hidden && document.activeElement === document.querySelector('#auth-token') &&
		/token needed/.test(document.querySelector('#conn-text').textContent)`)

	p.do(chromedp.SendKeys(chromedp.CSS("#auth-token"), "wrong"), pressEnter(false))
	p.wait("the wrong-token message", `!document.querySelector('#auth').hidden && !document.querySelector('#auth-error').hidden &&
		/^Wrong token/.test(document.querySelector('#auth-error').textContent)`)
	p.screenshot("token-prompt")
	if got := eval[string](p, `localStorage.getItem('frontdesk.token') || ''`); got != "" {
		t.Errorf("a refused token was kept: %q", got)
	}

	p.do(chromedp.SendKeys(chromedp.CSS("#auth-token"), "s3cret"), pressEnter(false))
	p.wait("connected with the token", jsConnected+` && document.querySelector('#auth').hidden`)
	if got := eval[string](p, `localStorage.getItem('frontdesk.token')`); got != "s3cret" {
		t.Errorf("stored token = %q, want s3cret", got)
	}
	p.send("hello with a token")
	p.wait("the reply", jsReplies+` === 1 && `+jsIdle)

	p.do(chromedp.Reload())
	p.wait("connected after a reload, without asking", jsConnected+` && document.querySelector('#auth').hidden && `+jsReplies+` === 1`)
}

// Reset asks first (keyboard only: Enter opens, Escape backs out), then
// clears every tab's view and says how many exchanges the assistant kept.
func TestBrowserResetAfterConfirm(t *testing.T) {
	srv := newLiveServer(t, "", &agent.Demo{Delay: time.Millisecond})
	browser := newBrowser(t, 1200, 800)
	a := openTab(t, browser, "tab A", srv.url())
	b := openTab(t, browser, "tab B", srv.url())
	a.wait("connected", jsConnected)
	b.wait("connected", jsConnected)
	a.send("something to forget")
	a.wait("the reply", jsReplies+` === 1 && `+jsIdle)

	a.do(chromedp.Focus(chromedp.CSS("#reset")), pressEnter(false))
	a.wait("the confirmation", `document.querySelector('#reset-dialog').open && document.activeElement === document.querySelector('#reset-keep')`)
	a.do(chromedp.KeyEvent(kb.Escape))
	a.wait("backed out", `!document.querySelector('#reset-dialog').open && document.activeElement === document.querySelector('#message')`)
	if n := eval[int](a, jsUsers); n != 1 {
		t.Fatalf("escape reset the conversation anyway: %d user messages", n)
	}

	a.do(chromedp.Click(chromedp.CSS("#reset")))
	a.wait("the confirmation", `document.querySelector('#reset-dialog').open`)
	a.screenshot("reset-confirm")
	a.do(chromedp.Click(chromedp.CSS("#reset-confirm")))
	outcome := `(() => {
		if (/unknown command action/.test(document.querySelector('#composer-note').textContent)) return 'unsupported';
		const items = document.querySelectorAll('#log > li');
		return items.length === 1 && /^Conversation reset \(manual\) — kept \d+ exchanges?$/.test(items[0].textContent) ? 'reset' : '';
	})()`
	for _, p := range []*tab{a, b} {
		p.wait("the reset", outcome)
		if eval[string](p, outcome) == "unsupported" {
			t.Fatalf("%s: the server does not accept {\"type\":\"command\",\"action\":\"reset\"} yet", p.name)
		}
	}
}

// The main view at desktop and phone widths, light and dark, with every
// kind of item: a webhook and an email message, a tool call, a Markdown
// reply, a cancelled turn and a reply still streaming.
func TestBrowserScreenshots(t *testing.T) {
	hold := make(chan struct{}, 1)
	ag := &scripted{tool: true, reply: func(in string) string {
		if strings.Contains(in, "plan") {
			return markdownReply[:strings.Index(markdownReply, "Not links")] + "Anything else?"
		}
		return "Looking into **" + in + "** now — this takes a moment while I check the logs and the calendar."
	}}
	srv := newLiveServer(t, "", ag)
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected)

	srv.submitEmail("ana@example.com", "Deploy window moved to Friday 10:00.")
	p.wait("the email answered", jsReplies+` === 1 && `+jsIdle)
	p.send("What's the plan for the deploy?")
	p.wait("the plan", jsReplies+` === 2 && `+jsIdle)
	ag.hold = hold
	srv.post(`{"content":"build 1432 failed on main","from":"ci-bot"}`)
	p.wait("streaming", jsStreaming)
	p.do(chromedp.Click(chromedp.CSS("#cancel")))
	p.wait("cancelled", jsIdle)
	p.send("Summarise the failing build")
	p.wait("streaming", jsStreaming+` && `+jsReplies+` === 4`)
	p.do(chromedp.SendKeys(chromedp.CSS("#message"), "and tell the team"))

	for _, v := range []struct {
		name   string
		w, h   int64
		mobile bool
		scheme string
	}{
		{"desktop-light", 1200, 800, false, "light"},
		{"desktop-dark", 1200, 800, false, "dark"},
		{"phone-light", 375, 740, true, "light"},
		{"phone-dark", 375, 740, true, "dark"},
	} {
		p.emulate(v.w, v.h, v.mobile, v.scheme)
		p.do(chromedp.Evaluate[chromedp.Void](`(() => { const m = document.querySelector('#conversation'); m.scrollTop = m.scrollHeight; })()`))
		// The page must never be wider than the screen.
		if over := eval[bool](p, `document.documentElement.scrollWidth > window.innerWidth`); over {
			t.Errorf("%s: the page scrolls sideways (%d px wide)", v.name, eval[int](p, `document.documentElement.scrollWidth`))
		}
		p.screenshot(v.name)
	}
	hold <- struct{}{}
	p.wait("done", jsIdle)
}

// ── history: scroll-back, search, jump ──

// JavaScript for the history tests.
const (
	// jsUserTexts is the text of every user message shown, in order.
	jsUserTexts = `[...document.querySelectorAll('#log li.msg.user .text')].map((e) => e.textContent)`
	// jsToTop scrolls the conversation to its top, as a reader would.
	jsToTop = `(() => { const m = document.querySelector('#conversation'); m.scrollTop = 0; return true; })()`
)

// jsHitInView is true when the opened search hit is the user message with
// text, outlined, with the word marked, and wholly inside the viewport.
func jsHitInView(text, word string) string {
	return `(() => {
		const li = document.querySelector('#log li.hit');
		if (!li || !li.classList.contains('user') || li.querySelector('.text').textContent !== ` + jsString(text) + `) return false;
		const mark = li.querySelector('mark.find');
		if (!mark || mark.textContent.toLowerCase() !== ` + jsString(word) + `) return false;
		const v = document.querySelector('#conversation').getBoundingClientRect(), r = li.getBoundingClientRect();
		return r.top >= v.top && r.bottom <= v.bottom;
	})()`
}

func standupNote(i int) string { return fmt.Sprintf("stand-up note %03d: all systems nominal", i+1) }

// checkUserSequence fails unless texts are want(from), want(from+1), … each once.
func checkUserSequence(t *testing.T, texts []string, from int, want func(int) string) {
	t.Helper()
	for i, got := range texts {
		if w := want(from + i); got != w {
			t.Fatalf("user message %d of %d is %q, want %q (duplicates, gaps or disorder)", i, len(texts), got, w)
		}
	}
}

// The page opens on the recent part of a long conversation (the replay
// buffer holds 100 events); scrolling up pages the rest in from
// /api/history/range without moving what is being read, until "Beginning of
// the conversation", with every message exactly once and in order.
func TestBrowserHistoryScrollBack(t *testing.T) {
	const turns = 80
	srv := newLiveServerBuffer(t, "", &agent.Demo{}, 100)
	srv.seed(turns, standupNote)
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected with the recent part", jsConnected+` && `+jsUsers+` > 0 && !document.querySelector('#older-load').hidden`)
	shown := eval[int](p, jsUsers)
	if shown >= turns {
		t.Fatalf("the page shows %d of %d user messages at first; want only the recent part (buffer_events 100)", shown, turns)
	}
	checkUserSequence(t, eval[[]string](p, jsUserTexts), turns-shown, standupNote)

	// One page: what was at the top stays exactly where it was.
	p.do(chromedp.Evaluate[chromedp.Void](`(() => {
		const m = document.querySelector('#conversation');
		m.scrollTop = 0;
		window.__anchor = document.querySelector('#log > li');
		window.__anchorY = window.__anchor.getBoundingClientRect().top;
	})()`))
	p.wait("the first older page", jsUsers+` > `+fmt.Sprint(shown)+` && document.querySelector('#older').dataset.state !== 'loading'`)
	if dy := eval[float64](p, `window.__anchor.getBoundingClientRect().top - window.__anchorY`); dy < -1 || dy > 1 {
		t.Errorf("prepending older messages moved the message being read by %.1f px", dy)
	}

	p.wait("the beginning of the conversation, scrolling up", jsToTop+` && document.querySelector('#older').dataset.state === 'start' &&
		document.querySelector('#older-text').textContent === 'Beginning of the conversation' && document.querySelector('#older-load').hidden`)
	texts := eval[[]string](p, jsUserTexts)
	if len(texts) != turns {
		t.Fatalf("after scrolling back: %d user messages, want %d", len(texts), turns)
	}
	checkUserSequence(t, texts, 0, standupNote)
	if n := eval[int](p, jsReplies+` * 1000 + document.querySelectorAll('#log li.msg.assistant.streaming').length`); n != turns*1000 {
		t.Errorf("older replies: %d (%d streaming), want %d finished ones", n/1000, n%1000, turns)
	}
	p.screenshot("history-beginning")

	// Still live: a new message lands at the bottom, once.
	srv.post(`{"content":"after the scroll-back","from":"ci-bot"}`)
	p.wait("the new message and its reply", jsUserText("after the scroll-back")+` && `+jsReplies+` === `+fmt.Sprint(turns+1)+` && `+jsIdle)
	if n := eval[int](p, jsUsers); n != turns+1 {
		t.Errorf("%d user messages after one more, want %d", n, turns+1)
	}
}

// A word said only early on: "/" opens the search, the results show who said
// it and when with the word marked, and clicking one brings that message
// into view, outlined, even though it had not been loaded. Esc closes.
func TestBrowserHistorySearchJump(t *testing.T) {
	const turns = 80
	const early = "Remember the pelican crossing on Elm Street needs fresh paint"
	srv := newLiveServerBuffer(t, "", &agent.Demo{}, 100)
	srv.seed(turns, func(i int) string {
		if i == 2 {
			return early
		}
		return standupNote(i)
	})
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected+` && `+jsUsers+` > 0`)
	if eval[bool](p, `document.querySelector('#log').textContent.includes('pelican')`) {
		t.Fatal("the early message is shown already; the test needs it out of the replay")
	}

	p.do(chromedp.Click(chromedp.CSS("#conversation")), pressKey("/", "Slash", "/", 191, 0))
	p.wait("the search field focused", `!document.querySelector('#search').hidden && document.activeElement === document.querySelector('#search-input') &&
		document.querySelector('#search-input').value === ''`)
	p.do(chromedp.SendKeys(chromedp.CSS("#search-input"), "Pelican"))
	// The user's message and the demo's reply quoting it; best first (the
	// short message before the long reply that quotes it).
	p.wait("the results", `(() => {
		const r = [...document.querySelectorAll('#search-results li[role=option]')];
		return r.length === 2 && !document.querySelector('#search-panel').hidden &&
			r.every((li) => li.querySelector('mark').textContent === 'pelican') &&
			r[1].querySelector('.who').textContent === 'assistant' && r[0].querySelector('.badge.ch-webhook').textContent === 'webhook' &&
			/^Today, /.test(r[0].querySelector('time').textContent) &&
			document.querySelector('#search-input').getAttribute('aria-expanded') === 'true';
	})()`)
	for _, v := range screenVariants {
		p.emulate(v.w, v.h, v.mobile, v.scheme)
		if over := eval[bool](p, `document.documentElement.scrollWidth > window.innerWidth`); over {
			t.Errorf("%s: the page scrolls sideways with the search open", v.name)
		}
		p.screenshot("search-results-" + v.name)
	}
	p.emulate(1200, 800, false, "light")

	p.do(chromedp.Click(chromedp.CSS("#search-result-0")))
	p.wait("the early message in view and outlined", jsHitInView(early, "pelican")+` &&
		document.activeElement === document.querySelector('#log li.hit') && document.querySelector('#search-panel').hidden &&
		document.querySelector('#archive-bar').hidden`)
	p.screenshot("search-jump")
	// It joined the live view: everything from a little before it to now, once each.
	texts := eval[[]string](p, jsUserTexts)
	first := turns - len(texts)
	if first > 2 {
		t.Fatalf("the jump loaded %d messages, not back to the early one", len(texts))
	}
	checkUserSequence(t, texts, first, func(i int) string {
		if i == 2 {
			return early
		}
		return standupNote(i)
	})

	p.do(chromedp.KeyEvent(kb.Escape))
	p.wait("search closed, outline and marks gone", `document.querySelector('#search').hidden && !document.querySelector('#log li.hit') &&
		!document.querySelector('#log mark') && document.activeElement === document.querySelector('#message')`)
}

// A hit too far back to join the live view opens it in a separate window
// (keyboard only: Ctrl+K, ↓, Enter): "Back to live" is always there and the
// live conversation goes on meanwhile; scrolling down pages the gap in
// until the window joins the live view, with nothing twice.
func TestBrowserHistoryFarJumpAndBackToLive(t *testing.T) {
	const turns = 400 // 1200 events: more than one /api/history/range answer between the hit and the live view
	const early = "The zeppelin hangar lease renews in March"
	text := func(i int) string {
		if i == 1 {
			return early
		}
		return standupNote(i)
	}
	srv := newLiveServerBuffer(t, "", &agent.Demo{}, 100)
	srv.seed(turns, text)
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected+` && `+jsUsers+` > 0 && `+jsIdle)
	live := eval[int](p, jsUsers)

	p.do(chromedp.Click(chromedp.CSS("#message")), pressKey("k", "KeyK", "", 75, int64(chromedp.ModifierCtrl)))
	p.wait("the search field", `document.activeElement === document.querySelector('#search-input')`)
	p.do(chromedp.SendKeys(chromedp.CSS("#search-input"), "zeppelin"))
	p.wait("two results", `document.querySelectorAll('#search-results li[role=option]').length === 2`)
	// Best first: the early message, then the demo's longer reply quoting it.
	p.do(pressKey("ArrowDown", "ArrowDown", "", 40, 0), pressKey("ArrowDown", "ArrowDown", "", 40, 0), pressKey("ArrowUp", "ArrowUp", "", 38, 0))
	p.wait("the first result chosen", `document.querySelector('#search-input').getAttribute('aria-activedescendant') === 'search-result-0' &&
		document.querySelector('#search-result-0').getAttribute('aria-selected') === 'true'`)
	p.do(pressEnter(false))
	p.wait("the early message in the history window", jsHitInView(early, "zeppelin")+` &&
		!document.querySelector('#archive-bar').hidden && !document.querySelector('#newer').hidden`)
	p.screenshot("history-window")

	// The live conversation goes on; the bar says so.
	srv.post(`{"content":"while you were reading history","from":"ci-bot"}`)
	p.wait("the bar counts what is new", `/ · 2 new$/.test(document.querySelector('#archive-text').textContent)`)
	p.do(chromedp.Click(chromedp.CSS("#archive-back")))
	p.wait("back to live, at the bottom", `document.querySelector('#archive-bar').hidden && `+jsUserText("while you were reading history")+` && (() => {
		const m = document.querySelector('#conversation'); return m.scrollHeight - m.scrollTop - m.clientHeight < 80; })()`)
	if n := eval[int](p, jsUsers); n != live+1 {
		t.Errorf("back to live: %d user messages, want the %d shown before plus the new one", n, live)
	}
	p.wait("idle", jsIdle)

	// Again (the search stayed open, its results a click away), and this
	// time read on down until the window meets the live view.
	p.do(chromedp.Click(chromedp.CSS("#search-input")))
	p.wait("the search with its results", `document.activeElement === document.querySelector('#search-input') &&
		!document.querySelector('#search-panel').hidden && document.querySelectorAll('#search-results li[role=option]').length === 2`)
	p.do(chromedp.Click(chromedp.CSS("#search-result-0")))
	p.wait("the history window", jsHitInView(early, "zeppelin")+` && !document.querySelector('#archive-bar').hidden`)
	p.wait("the window joined the live view, scrolling down", `(() => {
		const m = document.querySelector('#conversation'); m.scrollTop = m.scrollHeight;
		return document.querySelector('#archive-bar').hidden; })()`)
	texts := eval[[]string](p, jsUserTexts)
	if len(texts) < turns-2 || texts[len(texts)-1] != "while you were reading history" {
		t.Fatalf("after joining: %d user messages ending %q", len(texts), texts[len(texts)-1])
	}
	first := turns - (len(texts) - 1)
	checkUserSequence(t, texts[:len(texts)-1], first, text)
}

// After a reset the page shows only the reset line; "Load earlier
// messages" (keyboard: Tab to it, Enter) brings back what came before, with
// the reset as a divider where it happened.
func TestBrowserHistoryAcrossReset(t *testing.T) {
	srv := newLiveServer(t, "", &agent.Demo{})
	srv.seed(4, standupNote)
	if _, err := srv.cur.hub.Reset(context.Background(), hub.ResetManual); err != nil {
		t.Fatal(err)
	}
	srv.seed(1, func(int) string { return "first thing after the reset" })
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("the reset line and the message after it", jsConnected+` && `+jsUserText("first thing after the reset")+` && (() => {
		const items = document.querySelectorAll('#log > li');
		return items[0].classList.contains('reset') && /^Conversation reset \(manual\) — kept 4 exchanges$/.test(items[0].textContent); })()`)
	if n := eval[int](p, jsUsers); n != 1 {
		t.Fatalf("after a reset the page shows %d user messages, want only the one after it", n)
	}
	p.do(chromedp.Focus(chromedp.CSS("#older-load")), pressEnter(false))
	p.wait("what came before the reset", `document.querySelector('#older').dataset.state === 'start' && `+jsUsers+` === 5`)
	order := eval[[]string](p, `[...document.querySelectorAll('#log > li')].map((li) => li.classList.contains('reset') ? 'reset' : li.classList.contains('user') ? 'user' : '')
		.filter(Boolean)`)
	if got := strings.Join(order, " "); got != "user user user user reset user" {
		t.Errorf("order after loading the earlier messages: %s", got)
	}
	checkUserSequence(t, eval[[]string](p, jsUserTexts)[:4], 0, standupNote)
	for _, v := range screenVariants[2:] {
		p.emulate(v.w, v.h, v.mobile, v.scheme)
		p.do(chromedp.Evaluate[chromedp.Void](`(() => { const m = document.querySelector('#conversation'); m.scrollTop = m.scrollHeight; })()`))
		p.screenshot("history-reset-" + v.name)
	}
}

var screenVariants = []struct {
	name   string
	w, h   int64
	mobile bool
	scheme string
}{
	{"desktop-light", 1200, 800, false, "light"},
	{"desktop-dark", 1200, 800, false, "dark"},
	{"phone-light", 375, 740, true, "light"},
	{"phone-dark", 375, 740, true, "dark"},
}

// TestUIMarkdownRenderer runs the renderer's node tests (web/uitest), which
// include the XSS cases, as part of go test.
func TestUIMarkdownRenderer(t *testing.T) { runNodeTest(t, "uitest/markdown.test.mjs") }

// TestUIHistoryCore runs the node tests of the reducer's history part
// (web/uitest/history.test.mjs; TestUICore in web_test.go runs the protocol
// ones): older pages prepended and deduplicated, jumps into loaded and
// unloaded ranges, the archive window, reset dividers, search, highlighting.
func TestUIHistoryCore(t *testing.T) { runNodeTest(t, "uitest/history.test.mjs") }

func runNodeTest(t *testing.T, file string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is required in CI to test the UI core")
		}
		t.Skip("node not installed")
	}
	var out bytes.Buffer
	cmd := exec.Command(node, "--test", file)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("node --test %s failed:\n%s", file, out.String())
		}
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "# pass 1") || !strings.Contains(out.String(), "# fail 0") {
		t.Fatalf("unexpected node test output for %s:\n%s", file, out.String())
	}
}
