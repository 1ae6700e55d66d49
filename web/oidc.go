package web

// Signing in with an OpenID Connect provider (auth.oidc): an
// authorization-code flow with PKCE (S256), a state and a nonce.
//
// The flow's state, nonce and PKCE verifier travel in one short-lived
// cookie (frontdesk_oidc: HttpOnly, SameSite=Lax, Path /auth/oidc/, ten
// minutes) rather than in a server-side map: any node of a cluster can
// finish a flow another node started, a restart in the middle of a
// sign-in loses nothing, and a client that only hits /auth/oidc/login
// makes the server keep nothing. The cookie needs no signature: its values
// are random, only compared with what the provider sends back, and
// cleared at the first callback whatever happens, so a replayed callback
// finds no flow.

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/people"
)

// oidcFlowCookie holds a started sign-in's state, nonce and verifier.
const oidcFlowCookie = "frontdesk_oidc"

// oidcFlowTTL is how long a started sign-in may take at the provider.
const oidcFlowTTL = 10 * time.Minute

// oidcLogin serves /auth/oidc/login and /auth/oidc/callback. It is safe
// for concurrent use: the provider's discovery document is fetched at the
// first sign-in (not at start, so a provider that is down does not stop
// the desk) and kept once fetched.
type oidcLogin struct {
	cfg    config.OIDC
	audit  Audit
	secret string // the client secret; "" for a public client
	people *people.Directory
	creds  *auth.Store
	ttl    time.Duration // of the web session
	client *http.Client  // for every request to the provider
	now    func() time.Time

	mu   sync.Mutex
	prov *oidcProvider
}

type oidcProvider struct {
	p        *oidc.Provider
	verifier *oidc.IDTokenVerifier
	oauth    oauth2.Config
}

// oidcFlow is the frontdesk_oidc cookie's content.
type oidcFlow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Expires  int64  `json:"e"` // Unix seconds
}

// newOIDCLogin returns the OIDC handlers for o, or nil when OIDC is off
// (no issuer) or the server keeps no credentials.
func newOIDCLogin(o Options) *oidcLogin {
	if o.Auth.OIDC.Issuer == "" || o.Credentials == nil || o.People == nil {
		return nil
	}
	days := o.Auth.SessionDays
	if days <= 0 {
		days = 30
	}
	return &oidcLogin{
		cfg: o.Auth.OIDC, audit: o.Audit, secret: o.OIDCClientSecret, people: o.People, creds: o.Credentials,
		ttl:    time.Duration(days) * 24 * time.Hour,
		client: &http.Client{Timeout: 15 * time.Second},
		now:    func() time.Time { return oidcNow() },
	}
}

// oidcNow is the OIDC sign-in's clock: the flow's age and the ID token's
// expiry. Only tests change it (oidc_export_test.go).
var oidcNow = time.Now

// routes mounts the handlers on mux, outside the guard: whoever arrives
// here is not signed in yet.
func (l *oidcLogin) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /auth/oidc/login", l.login)
	mux.HandleFunc("GET /auth/oidc/callback", l.callback)
}

// provider discovers the provider once; a failure is retried at the next
// sign-in.
func (l *oidcLogin) provider() (*oidcProvider, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prov != nil {
		return l.prov, nil
	}
	// Not the request's context: go-oidc keeps this one to fetch the
	// provider's keys later.
	ctx := oidc.ClientContext(context.Background(), l.client)
	p, err := oidc.NewProvider(ctx, l.cfg.Issuer)
	if err != nil {
		return nil, err
	}
	scopes := append([]string{oidc.ScopeOpenID}, l.cfg.Scopes...)
	l.prov = &oidcProvider{
		p:        p,
		verifier: p.Verifier(&oidc.Config{ClientID: l.cfg.ClientID, Now: l.now}),
		oauth: oauth2.Config{ClientID: l.cfg.ClientID, ClientSecret: l.secret, Endpoint: p.Endpoint(),
			RedirectURL: l.cfg.RedirectURL, Scopes: scopes},
	}
	return l.prov, nil
}

// login starts a flow: a fresh state, nonce and PKCE verifier in the
// flow cookie, and a redirect to the provider.
func (l *oidcLogin) login(w http.ResponseWriter, r *http.Request) {
	prov, err := l.provider()
	if err != nil {
		oidcPage(w, http.StatusBadGateway, "The sign-in provider did not answer",
			fmt.Sprintf("frontdesk could not read %s's OpenID configuration (%v). Try again later, or ask whoever runs this desk.", l.cfg.Issuer, err))
		return
	}
	f := oidcFlow{State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(),
		Expires: l.now().Add(oidcFlowTTL).Unix()}
	b, _ := json.Marshal(f)
	http.SetCookie(w, &http.Cookie{
		Name: oidcFlowCookie, Value: base64.RawURLEncoding.EncodeToString(b), Path: "/auth/oidc/",
		MaxAge: int(oidcFlowTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secureRequest(r),
	})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, prov.oauth.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), http.StatusFound)
}

// oidcRefusal is a sign-in that ends on a page instead of a session.
type oidcRefusal struct {
	status       int
	title, words string
}

func (e *oidcRefusal) Error() string { return e.title + ": " + e.words }

func refusal(status int, title, format string, args ...any) *oidcRefusal {
	return &oidcRefusal{status: status, title: title, words: fmt.Sprintf(format, args...)}
}

// callback finishes a flow. The flow cookie is cleared first, whatever
// follows: a callback is used once.
func (l *oidcLogin) callback(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer") // the URL holds the code
	f, had := l.flow(r)
	http.SetCookie(w, &http.Cookie{Name: oidcFlowCookie, Path: "/auth/oidc/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secureRequest(r)})
	p, err := l.finish(r, f, had)
	if err == nil {
		if _, err = signIn(w, r, l.creds, l.audit, p.ID, "oidc", l.ttl); err != nil {
			err = refusal(http.StatusInternalServerError, "Could not sign you in", "frontdesk could not store the session: %v", err)
		}
	}
	if err != nil {
		var re *oidcRefusal
		if !errors.As(err, &re) {
			re = refusal(http.StatusBadGateway, "Sign-in failed", "%v", err)
		}
		oidcPage(w, re.status, re.title, re.words+" Nothing was stored.")
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// flow reads the flow cookie; had is false when there is none or it is
// not ours.
func (l *oidcLogin) flow(r *http.Request) (f oidcFlow, had bool) {
	c, err := r.Cookie(oidcFlowCookie)
	if err != nil {
		return f, false
	}
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || json.Unmarshal(b, &f) != nil || f.State == "" || f.Nonce == "" || f.Verifier == "" {
		return oidcFlow{}, false
	}
	return f, true
}

// finish checks the provider's answer against the flow, redeems the code
// and returns the person it signs in.
func (l *oidcLogin) finish(r *http.Request, f oidcFlow, had bool) (*people.Person, error) {
	q := r.URL.Query()
	switch {
	case !had:
		return nil, refusal(http.StatusBadRequest, "This sign-in was not started here",
			"The sign-in has no flow in this browser: it was finished already, started in another browser, or its cookie was lost. Start again.")
	case l.now().Unix() >= f.Expires:
		return nil, refusal(http.StatusBadRequest, "This sign-in has expired",
			"A sign-in must be finished within %v of starting it. Start again.", oidcFlowTTL)
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1:
		return nil, refusal(http.StatusBadRequest, "This sign-in does not match",
			"The provider's answer carries a state this browser did not start (a forged or stale link). Start again.")
	case q.Get("error") != "":
		return nil, refusal(http.StatusForbidden, "The provider did not sign you in",
			"The provider answered %q%s.", q.Get("error"), describe(q.Get("error_description")))
	case q.Get("code") == "":
		return nil, refusal(http.StatusBadRequest, "The provider sent no code", "The provider's answer has neither a code nor an error. Start again.")
	}
	prov, err := l.provider()
	if err != nil {
		return nil, refusal(http.StatusBadGateway, "The sign-in provider did not answer", "%v.", err)
	}
	ctx := oidc.ClientContext(r.Context(), l.client)
	tok, err := prov.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return nil, refusal(http.StatusBadGateway, "The provider did not accept the sign-in",
			"Exchanging the code failed (a code works once and briefly): %v.", err)
	}
	id, err := l.verify(ctx, prov, tok, f.Nonce)
	if err != nil {
		return nil, err
	}
	return l.match(id)
}

// oidcIdentity is what the provider vouched for.
type oidcIdentity struct {
	Issuer, Subject string
	Email           string
	EmailVerified   bool
}

// verify checks the ID token (signature, issuer, audience, expiry) and its
// nonce, and reads the email from UserInfo, or else from the ID token.
func (l *oidcLogin) verify(ctx context.Context, prov *oidcProvider, tok *oauth2.Token, nonce string) (oidcIdentity, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return oidcIdentity{}, refusal(http.StatusBadGateway, "The provider sent no ID token", "The token response has no id_token: is the openid scope allowed for this client?")
	}
	idt, err := prov.verifier.Verify(ctx, raw)
	if err != nil {
		return oidcIdentity{}, refusal(http.StatusForbidden, "The provider's ID token did not check out", "%v.", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return oidcIdentity{}, refusal(http.StatusForbidden, "The provider's ID token did not check out",
			"Its nonce is not the one this sign-in sent (a replayed token).")
	}
	id := oidcIdentity{Issuer: idt.Issuer, Subject: idt.Subject}
	var claims struct {
		Email         string          `json:"email"`
		EmailVerified json.RawMessage `json:"email_verified"`
	}
	if idt.Claims(&claims) == nil {
		id.Email, id.EmailVerified = claims.Email, verifiedClaim(claims.EmailVerified)
	}
	// UserInfo is the fuller answer when the provider has one; it counts
	// only for the same subject (OIDC Core 5.3.2).
	if prov.p.UserInfoEndpoint() != "" {
		ui, err := prov.p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err == nil && ui.Subject == idt.Subject && ui.Email != "" {
			id.Email, id.EmailVerified = ui.Email, ui.EmailVerified
		}
	}
	return id, nil
}

// verifiedClaim reads email_verified, a boolean that some providers send
// as the string "true".
func verifiedClaim(raw json.RawMessage) bool {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == "true"
}

// match finds the person id signs in: the one its issuer and subject are
// bound to, or else the one whose people[].emails hold its verified
// email — and then binds them, so a later change of address at the
// provider does not move the account.
func (l *oidcLogin) match(id oidcIdentity) (*people.Person, error) {
	key := auth.OIDCKey(id.Issuer, id.Subject)
	if c, ok := l.creds.Bound(key); ok {
		p := l.people.Get(c.Person)
		if p == nil {
			return nil, refusal(http.StatusForbidden, "Your account is not in people any more",
				"This provider account is bound to %q, who is no longer listed in people. An admin can list them again, or revoke the binding (credential %s).", c.Person, c.ID)
		}
		return p, notService(p)
	}
	var p *people.Person
	if id.Email != "" {
		p = l.people.ByEmail(id.Email)
	}
	switch {
	case p != nil && !id.EmailVerified:
		return nil, refusal(http.StatusForbidden, "Your email address is not verified",
			"The provider says %s but has not verified it, so frontdesk cannot tell it is yours. Verify it at the provider, then sign in again.", id.Email)
	case p == nil && l.cfg.NewPeople != "" && id.Email != "" && id.EmailVerified:
		return l.guest(id, key)
	case p == nil:
		return nil, l.stranger(id)
	}
	if err := notService(p); err != nil {
		return nil, err
	}
	c, err := l.creds.Bind(p.ID, key)
	if err != nil && !errors.Is(err, auth.ErrExists) {
		return nil, refusal(http.StatusInternalServerError, "Could not sign you in", "Storing the binding failed: %v.", err)
	}
	if err == nil {
		l.audit.record(context.Background(), event.PersonChangedData{Action: event.AccountLinked, Person: p.ID, By: p.ID, Credential: c.ID, Via: "oidc"})
	}
	return p, nil
}

// guest lets in someone the provider vouches for (a verified email) whom
// no people entry lists, under auth.oidc.new_people: a person made at run
// time, "oidc-" and 8 hex digits of their binding, with that role, kept in
// the credential store (people.Directory.GuestsFrom finds them). An admin
// who lists them in people later (same id) gives them any role.
func (l *oidcLogin) guest(id oidcIdentity, key string) (*people.Person, error) {
	pid := "oidc-" + auth.Hash(key)[:8]
	c, err := l.creds.BindGuest(pid, l.cfg.NewPeople, id.Email, key)
	if err != nil && !errors.Is(err, auth.ErrExists) {
		return nil, refusal(http.StatusInternalServerError, "Could not sign you in", "Storing the binding failed: %v.", err)
	}
	if err == nil {
		l.audit.record(context.Background(), event.PersonChangedData{Action: event.PersonCreatedByIdP, Person: pid, By: "oidc",
			Role: l.cfg.NewPeople, Credential: c.ID, Via: "oidc"})
	}
	return people.Guest(pid, id.Email, l.cfg.NewPeople), nil
}

// stranger refuses someone the provider vouches for but nobody here
// knows (auth.oidc.new_people unset, or no verified email to name them).
func (l *oidcLogin) stranger(id oidcIdentity) error {
	who := "This provider account"
	if id.Email != "" {
		who = "The account " + id.Email
	}
	return refusal(http.StatusForbidden, "You are not on this desk's list of people",
		"%s is not listed in people, and no earlier sign-in bound it to anyone. "+
			"Ask whoever runs this desk to add your address to people in config.yaml.", who)
}

// notService refuses a kind: service person: a script signs in with
// tokens, never through a browser.
func notService(p *people.Person) error {
	if p.Kind == people.KindService {
		return refusal(http.StatusForbidden, "A service does not sign in on the web",
			"%q is a service (kind: service): it uses tokens, not OIDC.", p.ID)
	}
	return nil
}

func describe(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

func secureRequest(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

var oidcPageTmpl = template.Must(template.New("oidc").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · frontdesk</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 4rem auto; padding: 0 1rem">
<h1>{{.Title}}</h1><p>{{.Words}}</p><p><a href="/auth/oidc/login">Sign in again</a> · <a href="/">frontdesk</a></p>
</body></html>
`))

// oidcPage writes a sign-in outcome for a person in a browser.
func oidcPage(w http.ResponseWriter, status int, title, words string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = oidcPageTmpl.Execute(w, struct{ Title, Words string }{title, words})
}
