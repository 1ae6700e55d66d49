package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/embed"
	"github.com/frontdesk-hq/frontdesk/embed/embedtest"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/memory"
	"github.com/frontdesk-hq/frontdesk/web"
)

// save makes an item through the API, as another door would.
func memSave(t *testing.T, e *env, text string) string {
	t.Helper()
	r := do(t, request(t, "POST", e.srv.URL+"/api/memory", `{"text":`+jsString(text)+`}`, "Content-Type", "application/json"))
	if r.status != http.StatusCreated {
		t.Fatalf("save %q: %d %s", text, r.status, r.raw)
	}
	return r.body["id"].(string)
}

// texts is every item's text on the server, oldest first.
func memTexts(t *testing.T, e *env) []string {
	t.Helper()
	items, err := e.hub.MemoryList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, it := range items {
		s = append(s, it.Text)
	}
	return s
}

// JavaScript for the panel.
const (
	jsMemTexts = `[...document.querySelectorAll('#memory-list li .mem-text')].map((n) => n.textContent).join('|')`
	jsMemError = `document.querySelector('#memory-error').textContent`
)

func jsMemItem(text string) string {
	return `[...document.querySelectorAll('#memory-list li')].find((li) => li.querySelector('.mem-text').textContent === ` + jsString(text) + `)`
}

// memButton is the selector of an item's button (edit, save, discard,
// forget), found by the item's text.
func memButton(p *tab, text, action string) chromedp.Action[chromedp.Void] {
	id := eval[string](p, `(() => { const li = `+jsMemItem(text)+`; return li ? li.dataset.id : ''; })()`)
	if id == "" {
		p.t.Fatalf("%s: no item %q in the panel: %s", p.name, text, eval[string](p, jsMemTexts))
	}
	return chromedp.Click(chromedp.CSS(`#memory-list li[data-id="` + id + `"] button[data-action="` + action + `"]`))
}

// TestBrowserMemoryPanel: the Memory panel lists what the assistant
// remembers; adds an item, edits one in place (Enter saves), finds by a
// word typed in its own search box, forgets one and brings it back with
// Undo (saved again, as a new item) — each change reaching the server —
// and says what went wrong without losing the text typed.
func TestBrowserMemoryPanel(t *testing.T) {
	e := startMemory(t, web.Options{})
	memSave(t, e, "my cat is called Miso")
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", e.srv.URL+"/")
	p.wait("connected", jsConnected)
	p.do(chromedp.Click(chromedp.CSS("#memory-open")))
	p.wait("the item listed", `!document.querySelector('#memory').hidden && `+jsMemTexts+` === 'my cat is called Miso' &&
		/^added in the API · /.test(document.querySelector('#memory-list .mem-meta').textContent)`)
	if got := eval[string](p, `document.querySelector('#memory-open').textContent`); got != "Memory · 1" {
		t.Errorf("button %q, want the count", got)
	}

	// Add.
	p.do(chromedp.SendKeys(chromedp.CSS("#memory-new"), "I take my coffee black"), chromedp.Click(chromedp.CSS(`#memory-add button[type="submit"]`)))
	p.wait("the new item listed by web, the box emptied", jsMemTexts+` === 'my cat is called Miso|I take my coffee black' && document.querySelector('#memory-new').value === '' &&
		/^added in the web page · /.test(`+jsMemItem("I take my coffee black")+`.querySelector('.mem-meta').textContent)`)
	if got := strings.Join(memTexts(t, e), "|"); got != "my cat is called Miso|I take my coffee black" {
		t.Fatalf("server after add: %q", got)
	}

	// Edit in place: the text becomes a box; Enter saves.
	p.do(memButton(p, "my cat is called Miso", "edit"))
	p.wait("the editor open with the text", `(() => { const b = document.activeElement; return b && b.classList.contains('mem-edit') && b.value === 'my cat is called Miso'; })()`)
	p.do(chromedp.Evaluate[chromedp.Void](`document.activeElement.select()`), chromedp.SendKeys(chromedp.CSS(`#memory-list li.editing .mem-edit`), "my cat is called Mochi"), pressEnter(false))
	p.wait("the edited text shown", `(() => { const li = `+jsMemItem("my cat is called Mochi")+`; return li && !li.classList.contains('editing') &&
		/^added in the API · edited in the web page /.test(li.querySelector('.mem-meta').textContent); })()`)
	if got := strings.Join(memTexts(t, e), "|"); got != "my cat is called Mochi|I take my coffee black" {
		t.Fatalf("server after edit: %q", got)
	}

	// Search within.
	p.do(chromedp.SendKeys(chromedp.CSS("#memory-filter"), "COFFEE"))
	p.wait("only the match", jsMemTexts+` === 'I take my coffee black' && document.querySelector('#memory-status').textContent === '1 of 2 match.'`)
	// As search does: no item has both words, so the ones with some.
	p.do(chromedp.SendKeys(chromedp.CSS("#memory-filter"), " zebra"))
	p.wait("partial matches said", jsMemTexts+` === 'I take my coffee black' && /^1 of 2 match. \(no item has every word/.test(document.querySelector('#memory-status').textContent)`)
	p.do(chromedp.Evaluate[chromedp.Void](`(() => { const f = document.querySelector('#memory-filter'); f.value = 'zebra pelican'; f.dispatchEvent(new Event('input')); })()`))
	p.wait("no match said", jsMemTexts+` === '' && /Nothing in memory matches “zebra pelican”/.test(document.querySelector('#memory-status').textContent)`)
	p.do(chromedp.Evaluate[chromedp.Void](`(() => { const f = document.querySelector('#memory-filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()`))
	p.wait("both again", jsMemTexts+` === 'my cat is called Mochi|I take my coffee black' || `+jsMemTexts+` === 'I take my coffee black|my cat is called Mochi'`)

	// Forget, then Undo: the text is saved again.
	p.do(memButton(p, "I take my coffee black", "forget"))
	p.wait("gone, with an undo", jsMemTexts+` === 'my cat is called Mochi' && !document.querySelector('#memory-undo').hidden &&
		/Forgotten: “I take my coffee black”. Undo saves it again as a new item./.test(document.querySelector('#memory-undo').textContent)`)
	if got := strings.Join(memTexts(t, e), "|"); got != "my cat is called Mochi" {
		t.Fatalf("server after forget: %q", got)
	}
	p.do(chromedp.Click(chromedp.CSS("#memory-undo-btn")))
	p.wait("back after undo", jsMemTexts+` === 'my cat is called Mochi|I take my coffee black' && document.querySelector('#memory-undo').hidden`)
	if got := strings.Join(memTexts(t, e), "|"); got != "my cat is called Mochi|I take my coffee black" {
		t.Fatalf("server after undo: %q", got)
	}
	p.screenshot("memory-panel")

	// Errors: an empty edit is refused here, a text the server refuses is
	// said and stays in the box; nothing changes.
	p.do(memButton(p, "my cat is called Mochi", "edit"))
	p.do(chromedp.Evaluate[chromedp.Void](`document.activeElement.select()`), chromedp.SendKeys(chromedp.CSS(`#memory-list li.editing .mem-edit`), " "), pressEnter(false))
	p.wait("an empty edit refused", jsMemError+` === 'A memory cannot be empty: use Forget to remove it.' && !!document.querySelector('#memory-list li.editing')`)
	p.do(chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), memButton(p, "my cat is called Mochi", "discard"))
	long := strings.Repeat("x", memory.MaxItemChars+1)
	p.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#memory-new').value = `+jsString(long)), chromedp.Click(chromedp.CSS(`#memory-add button[type="submit"]`)))
	p.wait("the server's refusal said", `/^Could not remember it: text is too long: a memory item holds at most \d+ characters. Your text is still in the box.$/.test(`+jsMemError+`) &&
		document.querySelector('#memory-new').value.length === `+jsString(long)+`.length`)
	if n := len(memTexts(t, e)); n != 2 {
		t.Fatalf("%d items after the refusals, want 2", n)
	}
}

// TestBrowserMemoryPanelFollowsEveryDoor: with the panel open in two tabs,
// a save, an edit and a forget made through the API (another door) show
// in both at once, with no turn in between; an item forgotten elsewhere
// while a tab edits it hands the unsaved text to the Add box. On a phone
// the panel fits the screen.
func TestBrowserMemoryPanelFollowsEveryDoor(t *testing.T) {
	e := startMemory(t, web.Options{})
	browser := newBrowser(t, 1200, 800)
	a := openTab(t, browser, "tab A", e.srv.URL+"/")
	b := openTab(t, browser, "tab B", e.srv.URL+"/")
	for _, p := range []*tab{a, b} {
		p.wait("connected", jsConnected)
		p.do(chromedp.Click(chromedp.CSS("#memory-open")))
		p.wait("empty said", `/remembers nothing yet/.test(document.querySelector('#memory-status').textContent)`)
	}
	id := memSave(t, e, "the wifi password is on the fridge")
	for _, p := range []*tab{a, b} {
		p.wait("the API's item listed live", jsMemTexts+` === 'the wifi password is on the fridge' && document.querySelector('#memory-open').textContent === 'Memory · 1'`)
	}
	if r := do(t, request(t, "PUT", e.srv.URL+"/api/memory/"+id, `{"text":"the wifi password is in the drawer"}`, "Content-Type", "application/json")); r.status != http.StatusOK {
		t.Fatalf("edit: %d %s", r.status, r.raw)
	}
	for _, p := range []*tab{a, b} {
		p.wait("the API's edit shown live", jsMemTexts+` === 'the wifi password is in the drawer'`)
	}

	// Tab A edits; the item is forgotten elsewhere: the draft is kept.
	a.do(memButton(a, "the wifi password is in the drawer", "edit"))
	a.do(chromedp.Evaluate[chromedp.Void](`document.activeElement.select()`), chromedp.SendKeys(chromedp.CSS(`#memory-list li.editing .mem-edit`), "the wifi password is taped under the router"))
	if r := do(t, request(t, "DELETE", e.srv.URL+"/api/memory/"+id, "")); r.status != http.StatusNoContent && r.status != http.StatusOK {
		t.Fatalf("forget: %d %s", r.status, r.raw)
	}
	b.wait("tab B empty after the API's forget", jsMemTexts+` === '' && document.querySelector('#memory-open').textContent === 'Memory'`)
	a.wait("tab A's draft in the Add box", jsMemTexts+` === '' && document.querySelector('#memory-new').value === 'the wifi password is taped under the router' &&
		/forgotten from another door; your text is in the box above/.test(`+jsMemError+`)`)
	a.do(chromedp.Click(chromedp.CSS(`#memory-add button[type="submit"]`)))
	b.wait("tab A's text saved again, in tab B", jsMemTexts+` === 'the wifi password is taped under the router' &&
		/^added in the web page · /.test(document.querySelector('#memory-list .mem-meta').textContent)`)

	// A phone: the panel and its buttons fit the width.
	b.emulate(360, 740, true, "light")
	b.wait("no sideways scrolling", `document.documentElement.scrollWidth <= window.innerWidth &&
		[...document.querySelectorAll('#memory button, #memory input')].every((n) => { const r = n.getBoundingClientRect(); return r.left >= 0 && r.right <= window.innerWidth; })`)
	b.screenshot("memory-panel-phone")
}

// TestBrowserMemoryFromTheDemo: offline, with no model, telling the demo
// assistant "remember that …" saves an item through its memory_save tool
// (the open panel shows it at once, by agent), and "what do you remember
// about me?" lists it from the turn's context; "forget <id>" removes it.
func TestBrowserMemoryFromTheDemo(t *testing.T) {
	e := startMemory(t, web.Options{})
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", e.srv.URL+"/")
	p.wait("connected", jsConnected)
	p.do(chromedp.Click(chromedp.CSS("#memory-open")))
	p.wait("empty said", `/remembers nothing yet/.test(document.querySelector('#memory-status').textContent)`)
	p.send("remember that my cat is called Miso")
	p.wait("the agent's item in the panel", jsMemTexts+` === 'my cat is called Miso' && /^saved by the assistant, asked in the web page · /.test(document.querySelector('#memory-list .mem-meta').textContent)`)
	id := eval[string](p, `document.querySelector('#memory-list li').dataset.id`)
	p.wait("the reply", `[...document.querySelectorAll('#log li.msg.assistant .md')].some((m) => m.textContent.includes('I will remember: “my cat is called Miso” (memory `+id+`)'))`)
	p.wait("idle", jsIdle)
	p.send("what do you remember about me?")
	p.wait("the item listed in the reply", `[...document.querySelectorAll('#log li.msg.assistant .md')].some((m) => m.textContent.includes('I remember 1 thing: “my cat is called Miso” (`+id+`)'))`)
	p.wait("idle", jsIdle)
	p.send("forget " + id)
	p.wait("gone from the panel", jsMemTexts+` === '' && /remembers nothing yet/.test(document.querySelector('#memory-status').textContent)`)
	if n := len(memTexts(t, e)); n != 0 {
		t.Fatalf("%d items after the demo's forget", n)
	}
}

// TestBrowserMemoryIDsOrderAndFilter: the panel shows each item's id (the
// one /forget takes), lists the items in GET /api/memory's order (by id,
// as /memory in the terminal), and its filter finds what type:memory
// search finds: "facts" finds the three items about a fact (stemmed), as
// the search does, not nothing (the panel once matched the letters).
func TestBrowserMemoryIDsOrderAndFilter(t *testing.T) {
	e := startMemory(t, web.Options{})
	for _, text := range []string{"one fact about Ann: she runs the launch", "my cat is called Miso",
		"a fact about Bob: he is on leave", "the last fact: the office closes at six"} {
		memSave(t, e, text)
	}
	if _, err := e.hub.MemoryEdit(context.Background(), "m2", "my cat is called Mochi", hub.Actor{Door: "web"}); err != nil {
		t.Fatal(err) // the newest change: it still lists second
	}
	r := do(t, request(t, "GET", e.srv.URL+"/api/history/search?q="+url.QueryEscape("facts type:memory"), ""))
	hits, _ := r.body["hits"].([]any)
	if r.status != http.StatusOK || len(hits) != 3 {
		t.Fatalf("search facts type:memory: %d %s; want 3 hits", r.status, r.raw)
	}

	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", e.srv.URL+"/")
	p.wait("connected", jsConnected)
	p.do(chromedp.Click(chromedp.CSS("#memory-open")))
	const jsIDs = `[...document.querySelectorAll('#memory-list li')].map((li) => li.querySelector('.mem-id').textContent + '=' + li.dataset.id).join(' ')`
	p.wait("the ids shown, in id order", jsIDs+` === 'm1=m1 m2=m2 m3=m3 m4=m4' && `+jsMemTexts+`.startsWith('one fact about Ann')`)
	var api []string
	for _, it := range memoryItems(t, e) {
		api = append(api, it.ID+"="+it.ID)
	}
	if got := eval[string](p, jsIDs); got != strings.Join(api, " ") {
		t.Errorf("the panel lists %q, GET /api/memory %q", got, api)
	}
	if !eval[bool](p, `(() => { const r = document.querySelector('#memory-list li .mem-id').getBoundingClientRect(); return r.width > 0 && r.height > 0; })()`) {
		t.Error("the id is not visible")
	}

	p.do(chromedp.SendKeys(chromedp.CSS("#memory-filter"), "facts"))
	p.wait("the three items search finds", jsIDs+` === 'm1=m1 m3=m3 m4=m4' && document.querySelector('#memory-status').textContent === '3 of 4 match.'`)
}

// TestBrowserSearchSaysByMeaning: with search by meaning on, a hit found
// by what it means (none of the words typed is in it) says "found by
// meaning"; with the embeddings server gone, the results say search by
// meaning is unavailable and the hits are by words only.
func TestBrowserSearchSaysByMeaning(t *testing.T) {
	emb := embedtest.NewServer()
	defer emb.Close()
	c, err := embed.New(embed.Options{BaseURL: emb.BaseURL(), Model: "fake", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e := startMemoryEmbed(t, web.Options{}, &agent.Demo{}, c)
	memSave(t, e, "I bought a new automobile last weekend, a blue hatchback.")
	memSave(t, e, "The dentist moved my appointment to Tuesday.")
	// Until the items have vectors, the paraphrase finds nothing by meaning.
	deadline := time.Now().Add(30 * time.Second)
	for {
		served := emb.Served()
		r := do(t, request(t, "GET", e.srv.URL+"/api/history/search?q="+url.QueryEscape("which car did I purchase"), ""))
		if strings.Contains(r.raw, `"found":"meaning"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never found by meaning: %s", r.raw)
		}
		select {
		case <-served:
		case <-time.After(100 * time.Millisecond):
		}
	}

	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", e.srv.URL+"/")
	p.wait("connected", jsConnected)
	p.do(chromedp.Click(chromedp.CSS("#search-open")), chromedp.SendKeys(chromedp.CSS("#search-input"), "which car did I purchase"))
	p.wait("the hit found by meaning", `(() => {
		const r = [...document.querySelectorAll('#search-results li[role=option]')];
		return r.length >= 1 && r[0].textContent.includes('automobile') && r[0].querySelector('.found-meaning') &&
			r[0].querySelector('.found-meaning').textContent === 'found by meaning' && !/unavailable/.test(document.querySelector('#search-status').textContent);
	})()`)

	emb.CloseClientConnections()
	emb.Listener.Close()
	p.do(chromedp.Evaluate[chromedp.Void](`(() => { const f = document.querySelector('#search-input'); f.value = 'dentist'; f.dispatchEvent(new Event('input')); })()`))
	p.wait("unavailable said", `(() => {
		const r = [...document.querySelectorAll('#search-results li[role=option]')];
		return r.length === 1 && r[0].textContent.includes('dentist') && !r[0].querySelector('.found-meaning') &&
			/Search by meaning is unavailable now: matching words only\./.test(document.querySelector('#search-status').textContent);
	})()`)
}
