package e2e

// The cluster as a person sees it: /api/session's nodes with their public
// URLs and whether they are up, and a web page whose node dies moving to a
// live node (three real processes, Chromium through chromedp).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/frontdesk-hq/frontdesk/event"
)

// nodesView is node i's cluster.nodes as "name=url,alive" words.
func (c *testCluster) nodesView(i int) string {
	s, err := c.session(i)
	if err != nil || s.Cluster == nil {
		return fmt.Sprintf("(no answer: %v)", err)
	}
	var words []string
	for _, n := range s.Cluster.Nodes {
		words = append(words, fmt.Sprintf("%s=%s,%v", n.Name, n.URL, n.Alive))
	}
	return strings.Join(words, " ")
}

// waitNodes waits until node i lists want (nodesView's form), failing
// after d; it returns how long that took.
func (c *testCluster) waitNodes(i int, want string, d time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	for {
		got := c.nodesView(i)
		if got == want {
			return time.Since(start)
		}
		if time.Since(start) > d {
			c.t.Fatalf("%s lists nodes %q after %v, want %q", c.nodes[i].name, got, d, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterNodesAlive: every node lists the three nodes with their
// public URLs, alive; a node killed with SIGKILL is listed not alive
// (its URL kept) by the others within a few seconds, and alive again once
// it is back.
func TestClusterNodesAlive(t *testing.T) {
	c := newTestCluster(t, clusterOpts{public: true})
	h := c.holder()
	view := func(dead int) string {
		var words []string
		for i, n := range c.nodes {
			words = append(words, fmt.Sprintf("%s=http://%s,%v", n.name, n.addr, i != dead))
		}
		return strings.Join(words, " ")
	}
	for i := range c.nodes {
		c.waitNodes(i, view(-1), 10*time.Second)
	}
	k := (h + 1) % 3
	c.kill(k)
	for _, i := range []int{h, (h + 2) % 3} {
		took := c.waitNodes(i, view(k), 6*time.Second)
		t.Logf("%s listed the killed %s not alive after %v", c.nodes[i].name, c.nodes[k].name, took.Round(10*time.Millisecond))
	}
	c.start(k)
	c.waitNodes(h, view(-1), 20*time.Second)
}

// TestClusterPageMovesToLiveNode: a tab opened at a node's public URL
// (with the access token an older page kept there, which it exchanges for
// its session cookie and deletes) whose node is killed moves by itself to
// a live node's URL: it signs in there without asking (the token went
// along in memory and the fragment), the address bar keeps no token,
// nothing keeps it in localStorage, and a message typed while the node
// was gone is answered once on the new node.
func TestClusterPageMovesToLiveNode(t *testing.T) {
	const token = "page-move-test-token-0123456789"
	t.Setenv("FRONTDESK_PAGE_TEST_TOKEN", token)
	c := newTestCluster(t, clusterOpts{public: true, extra: "server: {auth_token_env: FRONTDESK_PAGE_TEST_TOKEN}\n"})
	c.token = token
	h := c.holder()
	f := (h + 1) % 3 // the tab's node: a follower, so that the holder runs on
	tab := openPageTab(t)
	run, eval, wait := tab.run, tab.eval, tab.wait
	from := c.nodes[f]
	// The token as the page keeps it once entered: in localStorage of this
	// node's origin only (set from /healthz, where no page script runs).
	run("keep the token, open a follower's page", 10*time.Second, chromedp.Navigate("http://"+from.addr+"/healthz"),
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem('frontdesk.token', `+jsQuote(token)+`)`),
		chromedp.Navigate("http://"+from.addr+"/"))
	wait("connected, naming this node and the holder", `document.querySelector('#conn').dataset.state === 'connected' &&
		document.querySelector('#conn-text').textContent === `+jsQuote("connected · node "+from.name+" · holder "+c.nodes[h].name), 30*time.Second)

	c.kill(f)
	killed := time.Now()
	run("type while the node is gone", 10*time.Second, chromedp.SendKeys(chromedp.CSS("#message"), "are you still there\n"))
	wait("moved to a live node", `location.origin !== `+jsQuote("http://"+from.addr), 20*time.Second)
	t.Logf("the tab moved %v after the kill", time.Since(killed).Round(10*time.Millisecond))
	wait("connected there", `document.querySelector('#conn').dataset.state === 'connected'`, 20*time.Second)
	t.Logf("and connected there %v after the kill", time.Since(killed).Round(10*time.Millisecond))
	// Killing the node that leads the log stream's Raft group stalls
	// appends for 4-11 s (README); on this branch an append that times out
	// is answered storage_error, which the page does not send again by
	// itself — issue 26 §2b (another branch) makes it no_answer, which it
	// does. Until then the test clicks Retry as a person would: the same
	// client_msg_id either way.
	for retries := 0; ; retries++ {
		wait("the carried message answered or refused on the new node", `document.querySelectorAll('#pending li').length === 0 ||
			document.querySelector('#pending li').dataset.state === 'failed'`, 30*time.Second)
		failed := eval(`document.querySelector('#pending li[data-state=failed] .flag')?.textContent ?? ''`)
		if failed == "" {
			break
		}
		if !strings.Contains(failed, "could not write to its disk") || retries == 5 {
			t.Fatalf("the carried message was refused (%d Retry clicks): %s", retries, failed)
		}
		t.Logf("the new node answered storage_error (issue 26 §2b, another branch): clicking Retry")
		run("retry", 5*time.Second, chromedp.Click(chromedp.CSS("#pending [data-action=retry]")))
	}
	wait("the message answered once, told why it moved", `[...document.querySelectorAll('#log li.msg.user .text')].filter((e) => e.textContent === 'are you still there').length === 1 &&
		[...document.querySelectorAll('#log li.msg.assistant .md')].filter((e) => e.textContent.includes('“are you still there”')).length === 1 &&
		document.querySelectorAll('#pending li').length === 0 &&
		window.notes.includes(`+jsQuote("Node "+from.name+" stopped answering: this tab moved here.")+`)`, 20*time.Second)
	type page struct {
		Href   string `json:"href"`
		Stored string `json:"stored"`
		Auth   bool   `json:"auth"`
	}
	where, err := chromedp.Run(tab.ctx, chromedp.Evaluate[page](`({href: location.href, stored: localStorage.getItem('frontdesk.token'), auth: !document.querySelector('#auth').hidden})`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(where.Href, "#") || strings.Contains(where.Href, "move=") {
		t.Errorf("the address keeps the fragment: %s", where.Href)
	}
	if where.Stored != "" || where.Auth {
		t.Errorf("on the new node: token stored %q, sign-in shown %v; want no token in localStorage and no sign-in", where.Stored, where.Auth)
	}
	to := -1
	for i, n := range c.nodes {
		if strings.HasPrefix(where.Href, "http://"+n.addr+"/") {
			to = i
		}
	}
	if to < 0 || to == f {
		t.Fatalf("the tab is at %s, want a live node's public URL", where.Href)
	}
	if users, ends := inputRan(t, c.nodes[to].data, "are you still there"); users != 1 || ends != 1 {
		t.Errorf("%s's chat log holds the message %d times and %d turn ends for it, want once and one", c.nodes[to].name, users, ends)
	}
}

// inputRan counts the user events with content in the chat log under dir
// and the turn ends of the last one's turn, waiting up to 10 s for that
// turn end (it is written after the echo).
func inputRan(t *testing.T, dir, content string) (users, ends int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for ends == 0 && time.Now().Before(deadline) {
		users, ends = 0, 0
		turn := ""
		for _, e := range readChatLog(t, dir) {
			switch {
			case e.Type == event.User && strings.Contains(string(e.Data), content):
				users++
				turn = e.Turn
			case e.Type == event.TurnEnd && e.Turn == turn:
				ends++
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return users, ends
}

// pageTab is one Chromium tab that follows the page across navigations
// (a move loads another node's page).
type pageTab struct {
	t   *testing.T
	ctx context.Context
}

// openPageTab opens a tab that records in window.notes every note the
// composer shows, on every page it loads: the "moved here" note may soon
// be replaced by "waiting for the desk".
func openPageTab(t *testing.T) *pageTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(pageBrowser(t))
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // opens the tab; a first call with a timeout would close it at the timeout
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `window.notes = []; new MutationObserver(() => {
			const n = document.getElementById('composer-note');
			if (n && n.textContent && notes[notes.length - 1] !== n.textContent) notes.push(n.textContent);
		}).observe(document, {childList: true, subtree: true, characterData: true});`})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	return &pageTab{t: t, ctx: ctx}
}

func (p *pageTab) run(what string, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		state, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`JSON.stringify({href: location.href, conn: document.querySelector('#conn-text').textContent,
			note: document.querySelector('#composer-note').textContent, log: document.querySelector('#log').innerText.slice(-600),
			pending: document.querySelector('#pending').innerText})`))
		p.t.Fatalf("%s: %v\npage: %s", what, err, state)
	}
}

func (p *pageTab) eval(expr string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		p.t.Fatalf("eval %s: %v", expr, err)
	}
	return v
}

// wait evaluates cond until it is true; an evaluation cut by the page
// navigating away (the move) is tried again.
func (p *pageTab) wait(what, cond string, d time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			p.run(what+" (timed out; last error "+fmt.Sprint(err)+")", time.Second, chromedp.Poll[chromedp.Void]("false", chromedp.WithPollingTimeout(time.Millisecond)))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jsQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// pageBrowser starts a headless Chromium (as web's browser tests do); it
// fails in CI when chromium is missing and skips elsewhere.
func pageBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is required in CI for the browser tests (.ci/run installs it)")
		}
		t.Skip("chromium is not installed")
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(path), chromedp.Headless,
		chromedp.NoSandbox, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-extensions", true))
	t.Cleanup(cancelAlloc)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}
