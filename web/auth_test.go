package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/people"
	"github.com/frontdesk-hq/frontdesk/web"
)

// team is the people of the sign-in tests: an admin, a member, a viewer
// and a service that may only talk.
var team = []config.Person{
	{ID: "ann", Name: "Ann", Role: "admin", Emails: []string{"ann@example.com"}},
	{ID: "bo", Name: "Bo", Role: "member", Emails: []string{"bo@example.com"}},
	{ID: "vi", Name: "Vi", Role: "viewer"},
	{ID: "ci", Kind: "service", Permissions: []string{"talk"}},
}

type authEnv struct {
	*env
	creds *auth.Store
}

func startTeam(t *testing.T, o web.Options) authEnv {
	t.Helper()
	creds, err := auth.New(auth.Memory{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.People = people.New(team)
	o.Credentials = creds
	return authEnv{env: start(t, o, &agent.Demo{}), creds: creds}
}

// issue stores a credential of kind for person and returns its secret.
func (a authEnv) issue(t *testing.T, k auth.Kind, person string) (string, auth.Credential) {
	t.Helper()
	secret, c, err := a.creds.Issue(k, person, "t"+strconv.Itoa(len(a.creds.List(""))), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return secret, c
}

// state is what a refused request must not change: the session's
// generation and last seq.
func (a authEnv) state(t *testing.T) [2]int64 {
	t.Helper()
	info, err := a.hub.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return [2]int64{info.Generation, info.LastSeq}
}

func bearerHdr(secret string) []string { return []string{"Authorization", "Bearer " + secret} }
func cookieHdr(secret string) []string { return []string{"Cookie", web.SessionCookie + "=" + secret} }

// exchange signs in with a token (POST /auth/token) and returns the
// session cookie's value.
func (a authEnv) exchange(t *testing.T, token string) string {
	t.Helper()
	r := do(t, request(t, "POST", a.srv.URL+"/auth/token", `{"token":"`+token+`"}`, "Content-Type", "application/json"))
	if r.status != 200 {
		t.Fatalf("POST /auth/token: %d %s", r.status, r.raw)
	}
	return sessionCookie(t, r.header)
}

func sessionCookie(t *testing.T, h http.Header) string {
	t.Helper()
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == web.SessionCookie {
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
				t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Lax, Path=/", c)
			}
			return c.Value
		}
	}
	t.Fatalf("no %s cookie in %v", web.SessionCookie, h)
	return ""
}

// TestSignInWays: each way of signing in finds its person (GET /api/me),
// and what does not sign in is a 401 that changes nothing.
func TestSignInWays(t *testing.T) {
	a := startTeam(t, web.Options{Token: "shared-s3cret"})
	bo, _ := a.issue(t, auth.KindToken, "bo")
	revoked, rc := a.issue(t, auth.KindToken, "bo")
	if _, err := a.creds.Revoke(rc.ID); err != nil {
		t.Fatal(err)
	}
	viCookie := a.exchange(t, func() string { s, _ := a.issue(t, auth.KindToken, "vi"); return s }())
	sessionSecret, _ := a.issue(t, auth.KindSession, "ann")
	tests := []struct {
		name        string
		url         string
		hdr         []string
		person, via string
	}{
		{"stored token", "/api/me", bearerHdr(bo), "bo", "token"},
		{"stored token in the query", "/api/me?token=" + bo, nil, "bo", "token"},
		{"shared token is the first admin", "/api/me", bearerHdr("shared-s3cret"), "ann", "shared"},
		{"cookie from a token exchange", "/api/me", cookieHdr(viCookie), "vi", "session"},
		{"cookie of a stored session", "/api/me", cookieHdr(sessionSecret), "ann", "session"},
		{"revoked token", "/api/me", bearerHdr(revoked), "", ""},
		{"unknown token", "/api/me", bearerHdr("fd_nope"), "", ""},
		{"a session secret is no Bearer token", "/api/me", bearerHdr(sessionSecret), "", ""},
		{"a token is no cookie", "/api/me", cookieHdr(bo), "", ""},
		{"nothing", "/api/me", nil, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, request(t, "GET", a.srv.URL+tc.url, "", tc.hdr...))
			if tc.person == "" {
				if r.status != 401 || r.body["code"] != "unauthorized" {
					t.Fatalf("got %d %s, want 401 unauthorized", r.status, r.raw)
				}
				before := a.state(t)
				if r := do(t, request(t, "POST", a.srv.URL+"/api/reset", "", tc.hdr...)); r.status != 401 {
					t.Fatalf("POST /api/reset: got %d %s, want 401", r.status, r.raw)
				}
				if after := a.state(t); after != before {
					t.Fatalf("a refused reset changed the session: %v → %v", before, after)
				}
				return
			}
			if r.status != 200 || r.body["person"] != tc.person || r.body["via"] != tc.via {
				t.Fatalf("got %d %s, want %s via %s", r.status, r.raw, tc.person, tc.via)
			}
		})
	}
}

// TestOpenWithoutCredentials: no shared token and no people is today's
// loopback desk: the implicit owner, no sign-in. People without a token
// need a credential.
func TestOpenWithoutCredentials(t *testing.T) {
	e := start(t, web.Options{}, &agent.Demo{})
	r := do(t, request(t, "GET", e.srv.URL+"/api/me", ""))
	if r.status != 200 || r.body["person"] != people.Owner || r.body["via"] != "open" {
		t.Fatalf("open desk /api/me: %d %s, want owner via open", r.status, r.raw)
	}
	a := startTeam(t, web.Options{})
	if r := do(t, request(t, "GET", a.srv.URL+"/api/me", "")); r.status != 401 || r.body["oidc"] != false {
		t.Fatalf("people, no credential: %d %s, want 401 with oidc false", r.status, r.raw)
	}
	o := startTeam(t, web.Options{Auth: config.Auth{OIDC: config.OIDC{Issuer: "https://id.example.com"}}})
	if r := do(t, request(t, "GET", o.srv.URL+"/api/me", "")); r.status != 401 || r.body["oidc"] != true {
		t.Fatalf("with auth.oidc: %d %s, want 401 with oidc true (the page shows the OIDC button)", r.status, r.raw)
	}
}

// TestTrustedProxy: the header is believed only from auth.trusted_proxy.from;
// the same header from any other address is ignored.
func TestTrustedProxy(t *testing.T) {
	a := startTeam(t, web.Options{Auth: config.Auth{TrustedProxy: config.TrustedProxy{
		From: []string{"10.0.0.0/8"}, UserHeader: "Remote-User", EmailHeader: "Tailscale-User-Login"}}})
	serve := func(method, path, peer string, hdr ...string) *httptest.ResponseRecorder {
		req := request(t, method, "http://127.0.0.1"+path, "", hdr...)
		req.RemoteAddr = peer
		rec := httptest.NewRecorder()
		a.srv.Config.Handler.ServeHTTP(rec, req)
		return rec
	}
	tests := []struct {
		name, peer string
		hdr        []string
		status     int
		person     string
	}{
		{"user header from the proxy", "10.1.2.3:5000", []string{"Remote-User", "bo"}, 200, `"person":"bo"`},
		{"email header from the proxy", "10.1.2.3:5000", []string{"Tailscale-User-Login", "ANN@example.com"}, 200, `"person":"ann"`},
		{"user header from elsewhere", "192.0.2.7:5000", []string{"Remote-User", "ann"}, 401, ""},
		{"email header from elsewhere", "192.0.2.7:5000", []string{"Tailscale-User-Login", "ann@example.com"}, 401, ""},
		{"proxy names nobody", "10.1.2.3:5000", []string{"Remote-User", "mallory"}, 401, ""},
		{"proxy names a service", "10.1.2.3:5000", []string{"Remote-User", "ci"}, 401, ""},
		{"proxy without its header", "10.1.2.3:5000", nil, 401, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve("GET", "/api/me", tc.peer, tc.hdr...)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.person) {
				t.Fatalf("got %d %s, want %d %s", rec.Code, rec.Body, tc.status, tc.person)
			}
			if tc.status == 200 {
				return
			}
			before := a.state(t)
			if rec := serve("POST", "/api/reset", tc.peer, tc.hdr...); rec.Code != 401 {
				t.Fatalf("POST /api/reset: %d %s, want 401", rec.Code, rec.Body)
			}
			if after := a.state(t); after != before {
				t.Fatalf("a refused reset changed the session: %v → %v", before, after)
			}
		})
	}
}

// TestCrossOriginCookieRefused: a cookie request from another site is
// refused (CrossOriginProtection) and changes nothing; a Bearer request
// with the same Sec-Fetch-Site passes.
func TestCrossOriginCookieRefused(t *testing.T) {
	a := startTeam(t, web.Options{})
	ann, _ := a.issue(t, auth.KindToken, "ann")
	cookie := a.exchange(t, ann)
	crossSite := []string{"Sec-Fetch-Site", "cross-site"}

	before := a.state(t)
	r := do(t, request(t, "POST", a.srv.URL+"/api/reset", "", append(cookieHdr(cookie), crossSite...)...))
	if r.status != 403 || r.body["code"] != "cross_origin" {
		t.Fatalf("cross-site cookie POST: %d %s, want 403 cross_origin", r.status, r.raw)
	}
	if after := a.state(t); after != before {
		t.Fatalf("a refused cross-site reset changed the session: %v → %v", before, after)
	}
	sessions := len(a.creds.List(""))
	r = do(t, request(t, "POST", a.srv.URL+"/auth/token", `{"token":"`+ann+`"}`, crossSite...))
	if r.status != 403 || len(a.creds.List("")) != sessions {
		t.Fatalf("cross-site token exchange: %d %s (%d credentials, had %d), want 403 and no new session", r.status, r.raw, len(a.creds.List("")), sessions)
	}
	// A cross-site GET goes through (CrossOriginProtection lets safe methods by).
	if r := do(t, request(t, "GET", a.srv.URL+"/api/me", "", append(cookieHdr(cookie), crossSite...)...)); r.status != 200 {
		t.Fatalf("cross-site cookie GET: %d %s, want 200", r.status, r.raw)
	}
	if r := do(t, request(t, "POST", a.srv.URL+"/api/reset", "", append(bearerHdr(ann), crossSite...)...)); r.status != 200 {
		t.Fatalf("cross-site Bearer POST: %d %s, want 200", r.status, r.raw)
	}
	if after := a.state(t); after == before {
		t.Fatal("the Bearer reset did not reset")
	}
	if r := do(t, request(t, "POST", a.srv.URL+"/api/cancel", "", append(cookieHdr(cookie), "Sec-Fetch-Site", "same-origin")...)); r.status != 200 {
		t.Fatalf("same-origin cookie POST: %d %s, want 200", r.status, r.raw)
	}
}

// TestLoginLink: a link signs in once (an HttpOnly cookie, then /), a
// used or unknown link is 400, an expired one 410, and neither signs in.
func TestLoginLink(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	creds, err := auth.New(auth.Memory{}, clock)
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, web.Options{People: people.New(team), Credentials: creds}, &agent.Demo{})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(url string) *http.Response {
		resp, err := noRedirect.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	code, _, _ := creds.Issue(auth.KindLink, "bo", "", "", auth.LinkTTL)
	resp := get(e.srv.URL + "/auth/link?code=" + code)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("link: %d to %q, want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookie := sessionCookie(t, resp.Header)
	if r := do(t, request(t, "GET", e.srv.URL+"/api/me", "", cookieHdr(cookie)...)); r.body["person"] != "bo" || r.body["session"] == "" {
		t.Fatalf("after the link /api/me = %s, want bo with a session", r.raw)
	}
	sessions := len(creds.List(""))
	if resp := get(e.srv.URL + "/auth/link?code=" + code); resp.StatusCode != 400 || len(resp.Cookies()) != 0 {
		t.Fatalf("the link again: %d %v, want 400 and no cookie", resp.StatusCode, resp.Cookies())
	}
	late, _, _ := creds.Issue(auth.KindLink, "bo", "", "", auth.LinkTTL)
	now = now.Add(auth.LinkTTL + time.Second)
	if resp := get(e.srv.URL + "/auth/link?code=" + late); resp.StatusCode != 410 || len(resp.Cookies()) != 0 {
		t.Fatalf("an expired link: %d %v, want 410 and no cookie", resp.StatusCode, resp.Cookies())
	}
	if got := len(creds.List("")); got != sessions {
		t.Fatalf("%d credentials after refused links, want %d (the expired link used up, no session)", got, sessions)
	}
}

// TestSignInRateLimit: failures from one address are 429 with
// Retry-After after 20, and then even a good token from there is refused;
// another address is not. Sign-ins per person are limited too.
func TestSignInRateLimit(t *testing.T) {
	a := startTeam(t, web.Options{})
	good, _ := a.issue(t, auth.KindToken, "bo")
	serve := func(peer string, hdr ...string) *httptest.ResponseRecorder {
		req := request(t, "GET", "http://127.0.0.1/api/me", "", hdr...)
		req.RemoteAddr = peer
		rec := httptest.NewRecorder()
		a.srv.Config.Handler.ServeHTTP(rec, req)
		return rec
	}
	var last *httptest.ResponseRecorder
	for i := range 21 {
		last = serve("192.0.2.1:4000", bearerHdr("fd_guess"+strconv.Itoa(i))...)
		if i < 20 && last.Code != 401 {
			t.Fatalf("failure %d: %d, want 401", i+1, last.Code)
		}
	}
	if last.Code != 429 || last.Header().Get("Retry-After") == "" {
		t.Fatalf("failure 21: %d Retry-After %q, want 429 with Retry-After", last.Code, last.Header().Get("Retry-After"))
	}
	if rec := serve("192.0.2.1:4001", bearerHdr(good)...); rec.Code != 429 {
		t.Fatalf("a good token from the limited address: %d, want 429", rec.Code)
	}
	if rec := serve("192.0.2.2:4000", bearerHdr(good)...); rec.Code != 200 {
		t.Fatalf("a good token from another address: %d %s, want 200", rec.Code, rec.Body)
	}

	// Per person: ten sign-ins of bo, then 429 — ann still signs in.
	exchange := func(token string) *httptest.ResponseRecorder {
		req := request(t, "POST", "http://127.0.0.1/auth/token", `{"token":"`+token+`"}`)
		req.RemoteAddr = "192.0.2.3:4000"
		rec := httptest.NewRecorder()
		a.srv.Config.Handler.ServeHTTP(rec, req)
		return rec
	}
	for i := range 10 {
		if rec := exchange(good); rec.Code != 200 {
			t.Fatalf("sign-in %d of bo: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	sessions := len(a.creds.List("bo"))
	if rec := exchange(good); rec.Code != 429 || rec.Header().Get("Retry-After") == "" || len(a.creds.List("bo")) != sessions {
		t.Fatalf("sign-in 11 of bo: %d %q, %d credentials (had %d); want 429 with Retry-After and no new session",
			rec.Code, rec.Header().Get("Retry-After"), len(a.creds.List("bo")), sessions)
	}
	ann, _ := a.issue(t, auth.KindToken, "ann")
	if rec := exchange(ann); rec.Code != 200 {
		t.Fatalf("ann's sign-in: %d %s, want 200", rec.Code, rec.Body)
	}
}

// TestReadPermission: /ws and reads of /api/* need read; /api/me does not.
func TestReadPermission(t *testing.T) {
	a := startTeam(t, web.Options{})
	ci, _ := a.issue(t, auth.KindToken, "ci")
	vi, _ := a.issue(t, auth.KindToken, "vi")
	for _, tc := range []struct {
		name, token, path string
		status            int
	}{
		{"service reads its own /api/me", ci, "/api/me", 200},
		{"service may not read the session", ci, "/api/session", 403},
		{"service may not read people", ci, "/api/people", 403},
		{"viewer reads the session", vi, "/api/session", 200},
		{"viewer reads people", vi, "/api/people", 200},
	} {
		if r := do(t, request(t, "GET", a.srv.URL+tc.path, "", bearerHdr(tc.token)...)); r.status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, r.status, r.raw, tc.status)
		}
	}
	r := do(t, request(t, "GET", a.srv.URL+"/api/people", "", bearerHdr(vi)...))
	if !strings.Contains(r.raw, `{"person":"ann","name":"Ann"}`) || strings.Contains(r.raw, "example.com") {
		t.Errorf("/api/people = %s, want ids and names only", r.raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(a.srv.URL, "http") + "/ws?token="
	if _, resp, err := websocket.Dial(ctx, wsURL+ci, nil); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("service /ws: %v %v, want 403", err, resp)
	}
	c, _, err := websocket.Dial(ctx, wsURL+vi, nil)
	if err != nil {
		t.Fatalf("viewer /ws: %v", err)
	}
	defer c.CloseNow()
	if _, b, err := c.Read(ctx); err != nil || !strings.Contains(string(b), `"you":{"person":"vi","name":"Vi","role":"viewer","permissions":["read"]}`) {
		t.Fatalf("viewer's connected = %s, %v; want you: vi", b, err)
	}
}

// TestRevocationClosesWebSockets: revoking a token or a session closes
// every WebSocket opened with it (1008) within 2 s; others stay open.
func TestRevocationClosesWebSockets(t *testing.T) {
	a := startTeam(t, web.Options{})
	tok, tc := a.issue(t, auth.KindToken, "bo")
	other, _ := a.issue(t, auth.KindToken, "bo")
	cookie := a.exchange(t, other)
	wsURL := "ws" + strings.TrimPrefix(a.srv.URL, "http") + "/ws"
	dial := func(opts *websocket.DialOptions, q string) *websocket.Conn {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, wsURL+q, opts)
		if err != nil {
			t.Fatal(err)
		}
		for { // up to synced: the connection is served
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `"type":"synced"`) {
				return c
			}
		}
	}
	byToken := dial(nil, "?token="+tok)
	defer byToken.CloseNow()
	byCookie := dial(&websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {web.SessionCookie + "=" + cookie}}}, "")
	defer byCookie.CloseNow()
	byOther := dial(nil, "?token="+other)
	defer byOther.CloseNow()

	closedWith := func(c *websocket.Conn) websocket.StatusCode {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for {
			if _, _, err := c.Read(ctx); err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					return -2
				}
				return websocket.CloseStatus(err)
			}
		}
	}
	if _, err := a.creds.Revoke(tc.ID); err != nil {
		t.Fatal(err)
	}
	if got := closedWith(byToken); got != websocket.StatusPolicyViolation {
		t.Fatalf("WebSocket of the revoked token: close %d, want 1008 within 2 s", got)
	}
	// The session is revoked through the API, by its owner.
	me := do(t, request(t, "GET", a.srv.URL+"/api/me", "", cookieHdr(cookie)...))
	id, _ := me.body["session"].(string)
	if r := do(t, request(t, "DELETE", a.srv.URL+"/api/me/sessions/"+id, "", bearerHdr(other)...)); r.status != 204 {
		t.Fatalf("DELETE own session: %d %s", r.status, r.raw)
	}
	if got := closedWith(byCookie); got != websocket.StatusPolicyViolation {
		t.Fatalf("WebSocket of the revoked session: close %d, want 1008 within 2 s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	byOther.CloseRead(ctx) // a reader, for the pong
	if err := byOther.Ping(ctx); err != nil {
		t.Fatalf("a WebSocket of a token still valid: %v", err)
	}
}

// TestSessionsListAndRevoke: your own sessions; another's is 404 to a
// member (and stays), an admin may list and end anyone's; logout ends
// the cookie's session.
func TestSessionsListAndRevoke(t *testing.T) {
	a := startTeam(t, web.Options{})
	annTok, _ := a.issue(t, auth.KindToken, "ann")
	boTok, _ := a.issue(t, auth.KindToken, "bo")
	annCookie, boCookie := a.exchange(t, annTok), a.exchange(t, boTok)
	annMe := do(t, request(t, "GET", a.srv.URL+"/api/me", "", cookieHdr(annCookie)...))
	annSession, _ := annMe.body["session"].(string)

	r := do(t, request(t, "GET", a.srv.URL+"/api/me/sessions", "", cookieHdr(annCookie)...))
	if r.status != 200 || !strings.Contains(r.raw, `"id":"`+annSession+`"`) || !strings.Contains(r.raw, `"current":true`) || strings.Contains(r.raw, `"person":"bo"`) {
		t.Fatalf("ann's sessions: %d %s", r.status, r.raw)
	}
	if r := do(t, request(t, "GET", a.srv.URL+"/api/me/sessions?person=ann", "", cookieHdr(boCookie)...)); r.status != 403 {
		t.Fatalf("bo lists ann's: %d %s, want 403", r.status, r.raw)
	}
	if r := do(t, request(t, "DELETE", a.srv.URL+"/api/me/sessions/"+annSession, "", cookieHdr(boCookie)...)); r.status != 404 {
		t.Fatalf("bo ends ann's session: %d %s, want 404", r.status, r.raw)
	}
	if !a.creds.Valid(annSession) {
		t.Fatal("bo's refused DELETE ended ann's session")
	}
	if r := do(t, request(t, "GET", a.srv.URL+"/api/me/sessions?person=*", "", cookieHdr(annCookie)...)); !strings.Contains(r.raw, `"person":"bo"`) {
		t.Fatalf("admin lists everyone's: %s", r.raw)
	}
	// Logout: the cookie's session ends.
	if r := do(t, request(t, "POST", a.srv.URL+"/auth/logout", "", cookieHdr(boCookie)...)); r.status != 204 {
		t.Fatalf("logout: %d %s", r.status, r.raw)
	}
	if r := do(t, request(t, "GET", a.srv.URL+"/api/me", "", cookieHdr(boCookie)...)); r.status != 401 {
		t.Fatalf("after logout: %d %s, want 401", r.status, r.raw)
	}
	if r := do(t, request(t, "POST", a.srv.URL+"/auth/token", `{"token":"x","more":1}`)); r.status != 400 {
		t.Fatalf("a body with an unknown key: %d %s, want 400", r.status, r.raw)
	}
}
