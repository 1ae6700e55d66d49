package web_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// newTeamServer is a live server with people (team: ann admin, vi
// viewer, …) and a credential store: the page must sign in.
func newTeamServer(t *testing.T, a agent.Agent, tools func() []agent.Tool) *liveServer {
	t.Helper()
	creds, err := auth.New(auth.Memory{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &liveServer{t: t, dir: t.TempDir(), agent: a, tools: tools, people: team, creds: creds}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// linkFor issues a login link for person, as frontdesk login-link does.
func (s *liveServer) linkFor(person string) string {
	s.t.Helper()
	code, _, err := s.creds.Issue(auth.KindLink, person, "", "", auth.LinkTTL)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.url() + "auth/link?code=" + code
}

// jsNoTokenKept: the page is signed in by a cookie no script can read,
// and keeps no token of its own.
const jsNoTokenKept = `(localStorage.getItem('frontdesk.token') === null && !document.cookie.includes('frontdesk_session'))`

// Signing in by a login link: the page first shows the sign-in screen (no
// credential), the link signs the browser in — the header names you, the
// cookie is HttpOnly (document.cookie does not show it), localStorage
// holds no token — the link does not work twice, and Sign out ends the
// session.
func TestBrowserSignInByLink(t *testing.T) {
	srv := newTeamServer(t, &agent.Demo{Delay: time.Millisecond}, nil)
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("the sign-in screen", `!document.querySelector('#auth').hidden && /login-link/.test(document.querySelector('#auth').textContent) &&
		document.querySelector('#auth-oidc').hidden && document.querySelector('#you').hidden`)
	p.screenshot("sign-in")

	link := srv.linkFor("ann")
	p.do(chromedp.Navigate(link))
	p.wait("signed in as Ann", jsConnected+` && document.querySelector('#auth').hidden && location.pathname === '/' &&
		document.querySelector('#you').textContent === 'Ann' && !document.querySelector('#sign-out').hidden && `+jsNoTokenKept)
	if n := len(srv.creds.List("ann")); n != 1 {
		t.Fatalf("ann has %d credentials after the link, want 1 session (the link used up)", n)
	}
	p.send("hello from Ann")
	p.wait("the reply", jsReplies+` === 1 && `+jsIdle)

	p.do(chromedp.Reload())
	p.wait("still signed in after a reload", jsConnected+` && document.querySelector('#auth').hidden && document.querySelector('#you').textContent === 'Ann'`)

	// The link again: a page that says it does not work; still signed in.
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("the used link: %d, want 400", resp.StatusCode)
	}

	p.do(chromedp.Click(chromedp.CSS("#sign-out")))
	p.wait("signed out", `!document.querySelector('#auth').hidden && !document.querySelector('#auth-gone').hidden &&
		document.querySelector('#conn').dataset.state !== 'connected'`)
	for _, c := range srv.creds.List("ann") {
		t.Errorf("ann's credential %s (%s) is still there after Sign out", c.ID, c.Kind)
	}
	p.do(chromedp.Reload())
	p.wait("the sign-in screen after a reload", `!document.querySelector('#auth').hidden && `+jsNoTokenKept)
}

// A token an older version of the page kept in localStorage is exchanged
// once for the session cookie and deleted.
func TestBrowserOldStoredTokenExchanged(t *testing.T) {
	srv := newTeamServer(t, &agent.Demo{Delay: time.Millisecond}, nil)
	token, _, err := srv.creds.Issue(auth.KindToken, "ann", "laptop", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", srv.url())
	p.wait("the sign-in screen", `!document.querySelector('#auth').hidden`)
	p.do(chromedp.Evaluate[chromedp.Void](`localStorage.setItem('frontdesk.token', `+jsString(token)+`)`), chromedp.Reload())
	p.wait("signed in by the old token, which is gone", jsConnected+` && document.querySelector('#auth').hidden &&
		document.querySelector('#you').textContent === 'Ann' && `+jsNoTokenKept)
}

// A viewer reads but is offered nothing they may not do: no Reset, no
// composer (a line says why), no Approve/Deny on an approval card.
func TestBrowserViewerSeesNoControls(t *testing.T) {
	var runs atomic.Int32
	srv := newTeamServer(t, testagent.CallTool{Name: "files__delete", Args: `{"path":"/tmp/old-notes.txt"}`},
		testagent.Confirmed("files__delete", &runs))
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "viewer", srv.linkFor("vi"))
	p.wait("signed in as Vi", jsConnected+` && document.querySelector('#you').textContent === 'Vi'`)

	ann, _, err := srv.creds.Issue(auth.KindToken, "ann", "script", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", srv.url()+"api/messages", strings.NewReader(`{"content":"clean up my old notes","from":"script"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+ann)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("ann's message: %d", resp.StatusCode)
	}
	visible := func(sel string) string {
		return `((n) => !!n && n.getClientRects().length > 0)(document.querySelector('` + sel + `'))`
	}
	p.wait("the approval card without buttons, no reset, no composer", `(() => {
		const li = document.querySelector('#log li.approval');
		return li && li.querySelector('.approval-state').textContent === 'waiting for an answer' &&
			!`+visible("#log li.approval .approval-buttons")+` && !`+visible("#reset")+` && !`+visible("#composer")+` &&
			`+visible("#read-only")+` && `+visible("#search-open")+`;
	})()`)
	p.screenshot("viewer")
	if n := runs.Load(); n != 0 {
		t.Errorf("the call ran %d times with nobody approving", n)
	}
}

// Names on approvals: Bo (a member) asks, his tab shows no buttons (he may
// not approve); Ann approves in hers; both tabs say "by Ann · web", and
// Bo's message is labelled with his name.
func TestBrowserApprovalNames(t *testing.T) {
	var runs atomic.Int32
	srv := newTeamServer(t, testagent.CallTool{Name: "files__delete", Args: `{"path":"/tmp/old-notes.txt"}`},
		testagent.Confirmed("files__delete", &runs))
	browser := newBrowser(t, 1200, 800)
	bo := openTab(t, browser, "Bo", srv.linkFor("bo"))
	bo.wait("signed in as Bo", jsConnected+` && document.querySelector('#you').textContent === 'Bo'`)
	ann := openTab(t, browser, "Ann", srv.linkFor("ann"))
	ann.wait("signed in as Ann", jsConnected+` && document.querySelector('#you').textContent === 'Ann'`)

	bo.send("clean up my old notes")
	visible := func(sel string) string {
		return `((n) => !!n && n.getClientRects().length > 0)(document.querySelector('` + sel + `'))`
	}
	bo.wait("the card without buttons for Bo", `(() => {
		const li = document.querySelector('#log li.approval');
		return li && li.querySelector('.approval-state').textContent === 'waiting for an answer' && !`+visible("#log li.approval .approval-buttons")+`;
	})()`)
	ann.wait("Bo's message by name, the card with buttons for Ann", `(() => {
		const li = document.querySelector('#log li.approval');
		const msg = [...document.querySelectorAll('#log li.msg.user')].find((e) => e.textContent.includes('clean up my old notes'));
		return li && msg && msg.textContent.includes('Bo') && `+visible("#log li.approval .approval-buttons")+`;
	})()`)
	ann.do(chromedp.Click(chromedp.CSS("#log li.approval button.approve")))
	for _, p := range []*tab{ann, bo} {
		p.wait("approved by Ann · web", `(() => {
			const li = document.querySelector('#log li.approval');
			return li.classList.contains('decided') && li.querySelector('.approval-label').textContent === 'approved' &&
				li.querySelector('.approval-state').textContent === 'by Ann · web';
		})()`)
	}
	ann.screenshot("approval-names")
	if n := runs.Load(); n != 1 {
		t.Errorf("the approved call ran %d times", n)
	}
}
