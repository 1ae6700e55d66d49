package web_test

// Browser tests of history in the page: scroll-back, search and jumps, the
// archive window, resets in older history. The harness is in
// browser_test.go.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/hub"
)

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

// After a reset the page shows the exchanges the assistant kept (2 here)
// above the reset line; "Load earlier messages" (keyboard: Tab to it, Enter)
// brings back what came before, with the reset as a divider where it
// happened.
func TestBrowserHistoryAcrossReset(t *testing.T) {
	srv := &liveServer{t: t, dir: t.TempDir(), agent: &agent.Demo{}, retain: 2}
	srv.start()
	t.Cleanup(srv.stop)
	srv.seed(4, standupNote)
	if _, err := srv.cur.hub.Reset(context.Background(), hub.ResetManual, hub.Actor{}); err != nil {
		t.Fatal(err)
	}
	srv.seed(1, func(int) string { return "first thing after the reset" })
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("the kept exchanges, the reset line and the message after it", jsConnected+` && `+jsUserText("first thing after the reset")+` && (() => {
		const items = [...document.querySelectorAll('#log > li')].filter((li) => !li.classList.contains('day'));
		return items.length === 7 && items[4].classList.contains('reset') &&
			items[4].textContent === 'Conversation reset. The assistant keeps the last 2 exchanges above as context.'; })()`)
	if n := eval[int](p, jsUsers); n != 3 {
		t.Fatalf("after a reset the page shows %d user messages, want the 2 kept and the one after it", n)
	}
	checkUserSequence(t, eval[[]string](p, jsUserTexts)[:2], 2, standupNote)
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
