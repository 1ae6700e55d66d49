package web_test

// Browser tests of the conversation itself: tabs sharing it, cancel, other
// doors' badges, restarts and offline sends, Markdown, the token, reset,
// screenshots. The harness is in browser_test.go.

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/frontdesk-hq/frontdesk/agent"
)

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
		// Whom the assistant answers, then the backend's progress text.
		who := map[*tab]string{a: "you", b: "web"}[p]
		p.wait("the status line", `!document.querySelector('#statusline').hidden &&
			document.querySelector('#status-text').textContent === 'Replying to `+who+` · reading your message…'`)
		// It sits in the footer's column, left-aligned with the composer, on one line.
		if off := eval[float64](p, `document.querySelector('#statusline').getBoundingClientRect().left - document.querySelector('#composer').getBoundingClientRect().left`); off < -1 || off > 1 {
			t.Errorf("%s: the status line starts %.0f px from the composer's left edge; want it in the column", p.name, off)
		}
		if h := eval[float64](p, `document.querySelector('#statusline').getBoundingClientRect().height`); h > 24 {
			t.Errorf("%s: the status line is %.0f px tall; want one short line", p.name, h)
		}
		p.wait("the busy title", `document.title === 'working… — frontdesk'`)
		p.wait("the Cancel button", `!document.querySelector('#cancel').hidden`)
	}
	if got := eval[string](a, `document.querySelector('#message').value`); got != "" {
		t.Errorf("composer after Enter = %q, want it cleared", got)
	}

	// Tab B may draft, but not send, while the assistant works; it says why.
	b.do(chromedp.Click(chromedp.CSS("#message")), chromedp.SendKeys(chromedp.CSS("#message"), "draft"), pressEnter(false))
	b.wait("Send off with its reason", `document.querySelector('#send').disabled && !document.querySelector('#composer-reason').hidden &&
		document.querySelector('#composer-reason').textContent === 'Send when it is done, or cancel it (Esc).'`)
	if n := eval[int](b, `document.querySelectorAll('#pending li').length`); n != 0 {
		t.Errorf("Enter while busy queued %d messages, want none", n)
	}

	if got := eval[string](a, `document.querySelector('#log li.msg.assistant time').textContent`); got != "…" {
		t.Errorf("a streaming reply is stamped %q; want … until it is complete", got)
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
	// The reply is stamped with one time, live and after a reload alike.
	const jsReplyTime = `document.querySelector('#log li.msg.assistant time').dateTime`
	live := eval[string](a, jsReplyTime)
	c := openTab(t, browser, "tab C", srv.url())
	c.wait("the reply replayed", jsConnected+` && `+jsReplies+` === 1`)
	if got := eval[string](c, jsReplyTime); live == "" || got != live {
		t.Errorf("the reply is stamped %q live and %q after a reload; want one time", live, got)
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
		p.wait("the caret gone and the reply marked cut short", `!document.querySelector('#log .caret') &&
			document.querySelector('#log li.msg.assistant').classList.contains('partial')`)
		p.wait("idle again", jsIdle+` && document.querySelector('#cancel').hidden`)
		checkOneCancelNote(t, p, 1)
	}
	ta := eval[string](a, `document.querySelector('#log li.msg.assistant .md').textContent`)
	tb := eval[string](b, `document.querySelector('#log li.msg.assistant .md').textContent`)
	if ta != tb || !strings.HasSuffix(ta, "on its") {
		t.Errorf("replies after cancel: A %q, B %q; want the same text, stopped before the held last word", ta, tb)
	}

	// Esc cancels too, from the composer where the focus is after sending.
	a.send("another long one")
	a.wait("streaming in A", jsStreaming+` && `+jsReplies+` === 2`)
	b.wait("streaming in B", jsStreaming+` && `+jsReplies+` === 2`)
	a.do(chromedp.KeyEvent(kb.Escape))
	for _, p := range []*tab{a, b} {
		p.wait("idle after Esc", `!document.querySelector('#log .caret') && `+jsIdle)
		checkOneCancelNote(t, p, 2)
	}
}

// cancelNotice is the hub's notice after a cancel from a web page.
var cancelNotice = regexp.MustCompile(`^notice: Cancelled from the web after \d+(\.\d)? s\.$`)

// checkOneCancelNote checks that each of the n cancelled replies is followed
// by exactly one line, the hub's notice: no turn-end line or "cut short"
// flag of the UI's own says the same again.
func checkOneCancelNote(t *testing.T, p *tab, n int) {
	t.Helper()
	p.wait("the cancel notice", `document.querySelectorAll('#log li.notice').length === `+fmt.Sprint(n))
	after := eval[[]string](p, `[...document.querySelectorAll('#log li.msg.assistant')].map((li) => {
		const next = li.nextElementSibling;
		return next ? next.className + ': ' + next.textContent : '(none)'; })`)
	if len(after) != n {
		t.Fatalf("%s: %d replies, want %d", p.name, len(after), n)
	}
	for _, line := range after {
		if !cancelNotice.MatchString(line) {
			t.Errorf("%s: after a cancelled reply comes %q; want the hub's one cancel notice", p.name, line)
		}
	}
	if extra := eval[int](p, `document.querySelectorAll('#log li.turn-end, #log li.msg.assistant .flag').length`); extra != 0 {
		t.Errorf("%s: %d lines of the UI's own repeat the cancellation", p.name, extra)
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

// With a token set, the page asks to sign in, says plainly when a pasted
// token is wrong, exchanges the right one for the HttpOnly session cookie
// (no token in localStorage, none in document.cookie) and does not ask
// again after a reload.
func TestBrowserTokenPrompt(t *testing.T) {
	srv := newLiveServer(t, "s3cret", &agent.Demo{Delay: time.Millisecond})
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("the token prompt", `!document.querySelector('#auth').hidden && document.activeElement === document.querySelector('#auth-token') &&
		/not signed in/.test(document.querySelector('#conn-text').textContent)`)

	p.do(chromedp.SendKeys(chromedp.CSS("#auth-token"), "wrong"), pressEnter(false))
	p.wait("the wrong-token message", `!document.querySelector('#auth').hidden && !document.querySelector('#auth-error').hidden &&
		/^Wrong token/.test(document.querySelector('#auth-error').textContent)`)
	p.screenshot("token-prompt")
	if got := eval[string](p, `localStorage.getItem('frontdesk.token') || ''`); got != "" {
		t.Errorf("a refused token was kept: %q", got)
	}

	p.do(chromedp.SendKeys(chromedp.CSS("#auth-token"), "s3cret"), pressEnter(false))
	p.wait("connected with the token", jsConnected+` && document.querySelector('#auth').hidden`)
	if got := eval[string](p, `JSON.stringify(localStorage) + ' ' + document.cookie`); strings.Contains(got, "s3cret") || strings.Contains(got, "frontdesk_session") {
		t.Errorf("localStorage and document.cookie = %q: want neither the token nor the session cookie", got)
	}
	p.send("hello with a token")
	p.wait("the reply", jsReplies+` === 1 && `+jsIdle)

	p.do(chromedp.Reload())
	p.wait("connected after a reload, without asking", jsConnected+` && document.querySelector('#auth').hidden && `+jsReplies+` === 1`)
}

// Reset asks first (keyboard only: Enter opens, Escape backs out), then
// every tab keeps in view what the assistant keeps, says so under it, and a
// tab opened afterwards shows the same.
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
		const items = [...document.querySelectorAll('#log > li')].map((li) => li.className + ': ' + li.textContent);
		return items.length === 3 && items[0].startsWith('msg user') && items[1].startsWith('msg assistant') &&
			items[2] === 'divider reset: Conversation reset. The assistant keeps the last exchange above as context.' ? 'reset' : '';
	})()`
	check := func(p *tab) {
		p.wait("the reset", outcome)
		if eval[string](p, outcome) == "unsupported" {
			t.Fatalf("%s: the server does not accept {\"type\":\"command\",\"action\":\"reset\"} yet", p.name)
		}
		if got := eval[string](p, `document.querySelector('#log li.msg.user .text').textContent`); got != "something to forget" {
			t.Errorf("%s: the kept exchange shows %q", p.name, got)
		}
	}
	check(a)
	check(b)
	check(openTab(t, browser, "tab C", srv.url())) // after the reset: the same view, from the replay
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

// An email that arrives while a reply runs is recorded and shown at once,
// marked "queued"; it does not take over the status line. When its turn
// starts the mark goes and the status names it; its reply follows.
func TestBrowserQueuedInputBadge(t *testing.T) {
	hold := make(chan struct{})
	srv := newLiveServer(t, "", &scripted{delay: 5 * time.Millisecond, hold: hold,
		reply: func(in string) string { return "About " + in + ": done." }})
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("connected", jsConnected)
	p.send("first job")
	p.wait("streaming", jsStreaming)

	srv.submitEmail("ann@example.com", "Lunch at noon?")
	const jsEmail = `[...document.querySelectorAll('#log li.msg.user')].find((li) => li.querySelector('.text').textContent === 'Lunch at noon?')`
	p.wait("the email shown as queued", `(() => { const li = `+jsEmail+`;
		return li && li.dataset.queue === 'waiting' && !li.querySelector('.queue-badge').hidden &&
			li.querySelector('.queue-badge').textContent === 'queued'; })()`)
	if got := eval[string](p, `document.querySelector('#status-text').textContent`); !strings.HasPrefix(got, "Replying to you") {
		t.Errorf("status while the email waits: %q; want the running turn's", got)
	}
	p.screenshot("queued-badge")

	hold <- struct{}{} // the first reply ends; the email's turn starts
	p.wait("the email running, its mark gone", `(() => { const li = `+jsEmail+`;
		return li && li.dataset.queue === '' && li.querySelector('.queue-badge').hidden; })() &&
		/^Replying to email · ann@example.com/.test(document.querySelector('#status-text').textContent)`)
	hold <- struct{}{}
	p.wait("both answered", jsReplies+` === 2 && `+jsIdle)
	last := eval[string](p, `[...document.querySelectorAll('#log li.msg.assistant .md')].at(-1).textContent`)
	if last != "About Lunch at noon?: done." {
		t.Errorf("the last reply is %q; want the email's", last)
	}
}
