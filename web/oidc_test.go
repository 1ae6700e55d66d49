package web_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/people"
	"github.com/frontdesk-hq/frontdesk/web"
)

// relyingParty is one frontdesk web server signing people in with the
// test provider. use swaps its configuration between cases; the
// provider (and its redirect URI, this server's callback) stay.
type relyingParty struct {
	t      *testing.T
	env    *env
	srv    *httptest.Server
	h      atomic.Pointer[http.Handler]
	issuer string
}

// oidcPeople is the people list most cases use: ann and bo by address,
// ci a service that has an address too.
var oidcPeople = []config.Person{
	{ID: "ann", Name: "Ann", Role: "admin", Emails: []string{"ann@example.com"}},
	{ID: "bo", Name: "Bo", Role: "member", Emails: []string{"bo@example.com"}},
	{ID: "ci", Kind: "service", Permissions: []string{"talk"}, Emails: []string{"ci@example.com"}},
}

func startRelyingParty(t *testing.T) *relyingParty {
	t.Helper()
	rp := &relyingParty{t: t, env: start(t, web.Options{}, &agent.Demo{})}
	rp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*rp.h.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(rp.srv.Close)
	rp.issuer = startOIDCOP(t, rp.srv.URL+"/auth/oidc/callback")
	return rp
}

// oidcCase is one configuration of the relying party.
type oidcCase struct {
	people    []config.Person
	clientID  string // default "frontdesk" (confidential)
	secret    string
	newPeople string
	store     *auth.Store // default a new, empty one
}

// use makes the relying party serve c and returns its credential store.
func (rp *relyingParty) use(c oidcCase) *auth.Store {
	rp.t.Helper()
	if c.store == nil {
		st, err := auth.New(auth.Memory{}, nil)
		if err != nil {
			rp.t.Fatal(err)
		}
		c.store = st
	}
	if c.clientID == "" {
		c.clientID, c.secret = "frontdesk", "s3cret"
	}
	dir := people.New(c.people)
	dir.GuestsFrom(c.store)
	h := web.Handler(rp.env.hub, web.Options{
		WS: http.NotFoundHandler(), People: dir, Credentials: c.store, OIDCClientSecret: c.secret,
		Auth: config.Auth{SessionDays: 30, OIDC: config.OIDC{Issuer: rp.issuer, ClientID: c.clientID,
			RedirectURL: rp.srv.URL + "/auth/oidc/callback", Scopes: []string{"email", "profile"}, NewPeople: c.newPeople}},
	})
	rp.h.Store(&h)
	return c.store
}

// session returns the session b's cookie opens in st.
func (rp *relyingParty) session(b *userAgent, st *auth.Store) (auth.Credential, bool) {
	u, _ := url.Parse(rp.srv.URL)
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == web.SessionCookie {
			return st.Check(c.Value, auth.KindSession)
		}
	}
	return auth.Credential{}, false
}

// atCallback stops a browser at the relying party's callback.
func (rp *relyingParty) atCallback(r *http.Request) bool {
	return r.URL.Host == strings.TrimPrefix(rp.srv.URL, "http://") && r.URL.Path == "/auth/oidc/callback"
}

// answer signs ann in with b up to the provider's redirect to the
// callback and returns that redirect's URL, unused.
func (rp *relyingParty) answer(t *testing.T, b *userAgent) *url.URL {
	t.Helper()
	b.stop = rp.atCallback
	resp, _ := b.signInAt(t, rp.srv.URL, "ann")
	loc, err := resp.Location()
	if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("provider answered %d %v %v, want a redirect to the callback with a code", resp.StatusCode, loc, err)
	}
	return loc
}

// setFlow rewrites the flow cookie in b's jar with edit.
func setFlow(t *testing.T, rp *relyingParty, b *userAgent, edit func(map[string]any)) {
	t.Helper()
	u, _ := url.Parse(rp.srv.URL + "/auth/oidc/")
	var flow map[string]any
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == "frontdesk_oidc" {
			raw, _ := base64.RawURLEncoding.DecodeString(c.Value)
			_ = json.Unmarshal(raw, &flow)
		}
	}
	if flow == nil {
		t.Fatal("no flow cookie in the browser")
	}
	edit(flow)
	raw, _ := json.Marshal(flow)
	b.Jar.SetCookies(u, []*http.Cookie{{Name: "frontdesk_oidc", Value: base64.RawURLEncoding.EncodeToString(raw), Path: "/auth/oidc/"}})
}

// wantRefused checks a sign-in ended on a page with status and words,
// with no session and nothing stored (st holds exactly keep).
func wantRefused(t *testing.T, rp *relyingParty, b *userAgent, st *auth.Store, resp *http.Response, body string, status int, words string, keep int) {
	t.Helper()
	if resp.StatusCode != status || !strings.Contains(body, words) {
		t.Errorf("got %d %.300q, want %d with %q", resp.StatusCode, body, status, words)
	}
	if !strings.Contains(body, "Nothing was stored") {
		t.Errorf("the page does not say nothing was stored: %.300q", body)
	}
	if c, ok := rp.session(b, st); ok {
		t.Errorf("refused, yet signed in as %s", c.Person)
	}
	if got := st.List(""); len(got) != keep {
		t.Errorf("store holds %d credentials after a refusal, want %d: %+v", len(got), keep, got)
	}
}

func TestOIDCSignIn(t *testing.T) {
	rp := startRelyingParty(t)

	t.Run("a known person signs in, matched by verified email, then bound", func(t *testing.T) {
		st := rp.use(oidcCase{people: oidcPeople})
		b := newUserAgent(t)
		resp, _ := b.signInAt(t, rp.srv.URL, "ann")
		if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/" {
			t.Fatalf("sign-in ended at %d %s, want 200 at /", resp.StatusCode, resp.Request.URL)
		}
		s1, ok := rp.session(b, st)
		if !ok || s1.Person != "ann" || s1.Via != "oidc" {
			t.Fatalf("session %+v (ok %v), want ann's via oidc", s1, ok)
		}
		if c, ok := st.Bound(auth.OIDCKey(rp.issuer, "sub-ann")); !ok || c.Person != "ann" {
			t.Fatalf("no binding of issuer+subject to ann: %+v", c)
		}
		// A second sign-in is a new session with a new id.
		b.signInAt(t, rp.srv.URL, "ann")
		s2, ok := rp.session(b, st)
		if !ok || s2.Person != "ann" || s2.ID == s1.ID {
			t.Fatalf("second sign-in: %+v (ok %v), want a new session for ann (first %s)", s2, ok, s1.ID)
		}
	})

	t.Run("the session cookie is HttpOnly and SameSite=Lax", func(t *testing.T) {
		rp.use(oidcCase{people: oidcPeople})
		b := newUserAgent(t)
		b.stop = func(r *http.Request) bool { return r.URL.Path == "/" }
		resp, _ := b.signInAt(t, rp.srv.URL, "ann")
		set := strings.Join(resp.Header.Values("Set-Cookie"), "\n")
		if resp.StatusCode != http.StatusSeeOther || !strings.Contains(set, web.SessionCookie+"=") ||
			!strings.Contains(set, "HttpOnly") || !strings.Contains(set, "SameSite=Lax") {
			t.Fatalf("callback answered %d with Set-Cookie:\n%s", resp.StatusCode, set)
		}
		if !strings.Contains(set, "frontdesk_oidc=; Path=/auth/oidc/; Max-Age=0") {
			t.Errorf("the flow cookie is not cleared:\n%s", set)
		}
	})

	t.Run("a public client signs in with PKCE alone", func(t *testing.T) {
		st := rp.use(oidcCase{people: oidcPeople, clientID: "frontdesk-public"})
		b := newUserAgent(t)
		b.signInAt(t, rp.srv.URL, "ann")
		if c, ok := rp.session(b, st); !ok || c.Person != "ann" {
			t.Fatalf("session %+v (ok %v), want ann's", c, ok)
		}
	})

}

// TestOIDCRefusals: whom the provider vouches for but frontdesk does not
// know is refused on a page, and nothing is stored.
func TestOIDCRefusals(t *testing.T) {
	rp := startRelyingParty(t)

	for _, tc := range []struct{ name, user, want string }{
		{"a stranger is refused", "zed", "zed@elsewhere.example is not listed in people"},
		{"an unverified email matches nobody", "mallory", "has not verified it"}, // says bo@example.com, unverified
		{"a service never signs in by OIDC", "svc", "is a service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := rp.use(oidcCase{people: oidcPeople})
			b := newUserAgent(t)
			resp, body := b.signInAt(t, rp.srv.URL, tc.user)
			wantRefused(t, rp, b, st, resp, body, http.StatusForbidden, tc.want, 0)
		})
	}

	t.Run("new_people lets a stranger in as a guest with that role", func(t *testing.T) {
		st := rp.use(oidcCase{people: oidcPeople, newPeople: "viewer"})
		b := newUserAgent(t)
		resp, _ := b.signInAt(t, rp.srv.URL, "zed")
		resp.Body.Close()
		sess, ok := rp.session(b, st)
		if !ok || !strings.HasPrefix(sess.Person, "oidc-") {
			t.Fatalf("session = %+v %v, want a guest oidc-… signed in", sess, ok)
		}
		g, ok := st.Guest(sess.Person)
		if !ok || g.Role != "viewer" || g.Name != "zed@elsewhere.example" {
			t.Fatalf("guest binding = %+v %v, want role viewer named by the verified address", g, ok)
		}
		d := people.New(oidcPeople)
		d.GuestsFrom(st)
		if p := d.Get(sess.Person); p == nil || p.Can("talk") || !p.Can("read") {
			t.Fatalf("the directory's guest = %+v, want a viewer", p)
		}
		// A second sign-in finds the binding: the same guest, no second one.
		b2 := newUserAgent(t)
		resp, _ = b2.signInAt(t, rp.srv.URL, "zed")
		resp.Body.Close()
		if again, ok := rp.session(b2, st); !ok || again.Person != sess.Person {
			t.Fatalf("second sign-in = %+v %v, want %s again", again, ok, sess.Person)
		}
	})

}

// TestOIDCBinding: once matched, issuer+subject decide, not the address.
func TestOIDCBinding(t *testing.T) {
	rp := startRelyingParty(t)

	t.Run("the binding outlives the address", func(t *testing.T) {
		st := rp.use(oidcCase{people: oidcPeople})
		b := newUserAgent(t)
		b.signInAt(t, rp.srv.URL, "ann")
		// Now ann@example.com is Bo's, and Ann lists no address: the
		// subject alone still signs Ann in.
		moved := []config.Person{
			{ID: "ann", Name: "Ann", Role: "admin"},
			{ID: "bo", Name: "Bo", Role: "member", Emails: []string{"bo@example.com", "ann@example.com"}},
		}
		rp.use(oidcCase{people: moved, store: st})
		b2 := newUserAgent(t)
		b2.signInAt(t, rp.srv.URL, "ann")
		if c, ok := rp.session(b2, st); !ok || c.Person != "ann" {
			t.Fatalf("session %+v (ok %v), want ann's by the binding", c, ok)
		}
	})

	t.Run("bound to someone no longer in people", func(t *testing.T) {
		st := rp.use(oidcCase{people: oidcPeople})
		if _, err := st.Bind("gone", auth.OIDCKey(rp.issuer, "sub-ann")); err != nil {
			t.Fatal(err)
		}
		b := newUserAgent(t)
		resp, body := b.signInAt(t, rp.srv.URL, "ann")
		wantRefused(t, rp, b, st, resp, body, http.StatusForbidden, "no longer listed in people", 1)
	})
}

// TestOIDCCallbackRefusals tampers with the provider's answer: each is
// refused on a page, and nothing is stored.
func TestOIDCCallbackRefusals(t *testing.T) {
	rp := startRelyingParty(t)

	t.Run("a tampered state", func(t *testing.T) {
		st := rp.use(oidcCase{people: oidcPeople})
		b := newUserAgent(t)
		loc := rp.answer(t, b)
		q := loc.Query()
		q.Set("state", q.Get("state")+"x")
		loc.RawQuery = q.Encode()
		resp, body := b.get(t, loc.String())
		wantRefused(t, rp, b, st, resp, body, http.StatusBadRequest, "does not match", 0)
	})

	t.Run("a replayed callback", func(t *testing.T) {
		st := rp.use(oidcCase{people: oidcPeople})
		b := newUserAgent(t)
		loc := rp.answer(t, b)
		b.stop = nil
		if resp, body := b.get(t, loc.String()); resp.StatusCode != http.StatusOK {
			t.Fatalf("first use: %d %s", resp.StatusCode, body)
		}
		before := len(st.List(""))
		resp, body := b.get(t, loc.String())
		if before != 2 { // the binding and one session
			t.Fatalf("after one sign-in the store holds %d credentials, want 2", before)
		}
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "not started here") {
			t.Errorf("replay: %d %q", resp.StatusCode, body)
		}
		if got := len(st.List("")); got != before {
			t.Errorf("replay changed the store: %d credentials, want %d", got, before)
		}
	})

	t.Run("a stolen code in another browser's flow", func(t *testing.T) {
		st := rp.use(oidcCase{people: oidcPeople})
		loc := rp.answer(t, newUserAgent(t)) // the victim's code, never used
		// The thief starts a flow of their own, then presents the
		// victim's code under the thief's own state: PKCE refuses it.
		thief := newUserAgent(t)
		thief.stop = func(*http.Request) bool { return true }
		resp, _ := thief.get(t, rp.srv.URL+"/auth/oidc/login")
		authz, _ := resp.Location()
		q := loc.Query()
		q.Set("state", authz.Query().Get("state"))
		loc.RawQuery = q.Encode()
		resp, body := thief.get(t, loc.String())
		wantRefused(t, rp, thief, st, resp, body, http.StatusBadGateway, "did not accept the sign-in", 0)
	})

}

// TestOIDCProviderAnswers: an error from the provider, an ID token for
// another flow, a flow too old — each a page, nothing stored.
func TestOIDCProviderAnswers(t *testing.T) {
	rp := startRelyingParty(t)

	t.Run("the provider says access_denied", func(t *testing.T) {
		st := rp.use(oidcCase{people: oidcPeople})
		b := newUserAgent(t)
		b.stop = func(*http.Request) bool { return true }
		resp, _ := b.get(t, rp.srv.URL+"/auth/oidc/login")
		authz, _ := resp.Location()
		resp, body := b.get(t, rp.srv.URL+"/auth/oidc/callback?"+url.Values{"error": {"access_denied"},
			"error_description": {"<b>no</b>"}, "state": {authz.Query().Get("state")}}.Encode())
		wantRefused(t, rp, b, st, resp, body, http.StatusForbidden, `answered &#34;access_denied&#34;: &lt;b&gt;no&lt;/b&gt;`, 0)
	})

	t.Run("an ID token for another nonce", func(t *testing.T) {
		st := rp.use(oidcCase{people: oidcPeople})
		b := newUserAgent(t)
		loc := rp.answer(t, b)
		// The flow in the browser expects another nonce than the one the
		// provider put in the ID token: what a replayed token looks like.
		setFlow(t, rp, b, func(f map[string]any) { f["n"] = "another-nonce" })
		resp, body := b.get(t, loc.String())
		wantRefused(t, rp, b, st, resp, body, http.StatusForbidden, "nonce is not the one", 0)
	})

	t.Run("an expired ID token", func(t *testing.T) {
		st := rp.use(oidcCase{people: oidcPeople})
		b := newUserAgent(t)
		loc := rp.answer(t, b)
		// Two hours on, the provider's ID token (one hour) has expired;
		// the flow cookie is made to last, so only the token is stale.
		web.SetOIDCClock(t, 2*time.Hour)
		setFlow(t, rp, b, func(f map[string]any) { f["e"] = time.Now().Add(3 * time.Hour).Unix() })
		resp, body := b.get(t, loc.String())
		wantRefused(t, rp, b, st, resp, body, http.StatusForbidden, "token is expired", 0)
	})

	t.Run("an expired flow", func(t *testing.T) {
		st := rp.use(oidcCase{people: oidcPeople})
		b := newUserAgent(t)
		loc := rp.answer(t, b)
		// The browser still holds the flow, but it ended ten minutes
		// after it began (here: long ago).
		flow, _ := json.Marshal(map[string]any{"s": loc.Query().Get("state"), "n": "n", "v": "v", "e": 1})
		u, _ := url.Parse(rp.srv.URL + "/auth/oidc/")
		b.Jar.SetCookies(u, []*http.Cookie{{Name: "frontdesk_oidc", Value: base64.RawURLEncoding.EncodeToString(flow), Path: "/auth/oidc/"}})
		resp, body := b.get(t, loc.String())
		wantRefused(t, rp, b, st, resp, body, http.StatusBadRequest, "has expired", 0)
	})
}

// TestOIDCLoginRedirect checks what /auth/oidc/login asks the provider
// for: a code, PKCE S256, a state and a nonce, and the flow cookie.
func TestOIDCLoginRedirect(t *testing.T) {
	rp := startRelyingParty(t)
	rp.use(oidcCase{people: oidcPeople})
	b := newUserAgent(t)
	b.stop = func(*http.Request) bool { return true }
	resp, _ := b.get(t, rp.srv.URL+"/auth/oidc/login")
	authz, err := resp.Location()
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("login: %d %v", resp.StatusCode, err)
	}
	q := authz.Query()
	for k, want := range map[string]string{"response_type": "code", "client_id": "frontdesk",
		"code_challenge_method": "S256", "scope": "openid email profile", "redirect_uri": rp.srv.URL + "/auth/oidc/callback"} {
		if q.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, q.Get(k), want)
		}
	}
	for _, k := range []string{"state", "nonce", "code_challenge"} {
		if len(q.Get(k)) < 20 {
			t.Errorf("%s = %q, want a random value", k, q.Get(k))
		}
	}
	set := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"frontdesk_oidc=", "Path=/auth/oidc/", "Max-Age=600", "HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(set, want) {
			t.Errorf("flow cookie %q lacks %q", set, want)
		}
	}
}

// TestOIDCProviderDown: a provider that does not answer is a page at
// sign-in, not a failure to start; nothing is stored.
func TestOIDCProviderDown(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	issuer := gone.URL
	gone.Close()
	e := start(t, web.Options{}, &agent.Demo{})
	st, err := auth.New(auth.Memory{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.Handler(e.hub, web.Options{
		WS: http.NotFoundHandler(), People: people.New(oidcPeople), Credentials: st,
		Auth: config.Auth{SessionDays: 30, OIDC: config.OIDC{Issuer: issuer, ClientID: "frontdesk",
			RedirectURL: "http://127.0.0.1/auth/oidc/callback"}},
	}))
	defer srv.Close()
	b := newUserAgent(t)
	resp, body := b.get(t, srv.URL+"/auth/oidc/login")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "did not answer") || !strings.Contains(body, issuer) {
		t.Errorf("got %d %.300q, want 502 naming %s", resp.StatusCode, body, issuer)
	}
	if got := st.List(""); len(got) != 0 {
		t.Errorf("store holds %+v", got)
	}
}

// TestOIDCOff: without auth.oidc.issuer there is no /auth/oidc/*.
func TestOIDCOff(t *testing.T) {
	e := start(t, web.Options{}, &agent.Demo{})
	st, err := auth.New(auth.Memory{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.Handler(e.hub, web.Options{WS: http.NotFoundHandler(),
		People: people.New(oidcPeople), Credentials: st, Auth: config.Auth{SessionDays: 30}}))
	defer srv.Close()
	for _, path := range []string{"/auth/oidc/login", "/auth/oidc/callback?code=c&state=s"} {
		resp, _ := newUserAgent(t).get(t, srv.URL+path)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}
