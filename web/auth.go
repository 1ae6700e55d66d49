package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/internal/strictjson"
	"github.com/frontdesk-hq/frontdesk/people"
)

// authRoutes mounts the sign-in endpoints. They sit outside the guard's
// protect (they are how one gets a credential), behind checkHost; the
// POSTs are refused cross-site (a login or logout forced by another site).
func (g *guard) authRoutes(mux *http.ServeMux) {
	mux.Handle("GET /auth/link", http.HandlerFunc(g.link))
	mux.Handle("GET /auth/config", apiFunc(g.authConfig))
	mux.Handle("POST /auth/token", g.sameSite(apiFunc(g.exchangeToken)))
	mux.Handle("POST /auth/logout", g.sameSite(apiFunc(g.logout)))
}

// meRoutes mounts the signed-in person's own endpoints (behind protect).
func (g *guard) meRoutes(api *http.ServeMux) {
	api.Handle("GET /api/me", apiFunc(g.me))
	api.Handle("GET /api/people", apiFunc(g.people))
	api.Handle("GET /api/me/sessions", apiFunc(g.sessions))
	api.Handle("DELETE /api/me/sessions/{id}", apiFunc(g.revokeSession))
}

// sameSite refuses a request from another site: a foreign Origin, or
// what net/http.CrossOriginProtection calls cross-origin.
func (g *guard) sameSite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if (origin != "" && !g.originAllowed(origin, r.Host)) || g.cop.Check(r) != nil {
			refuse(w)
			httpjson.WriteError(w, httpjson.Errorf(http.StatusForbidden, "cross_origin", "sign-in requests must come from this site"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (g *guard) sessionTTL() time.Duration {
	days := g.o.Auth.SessionDays
	if days <= 0 {
		days = 30
	}
	return time.Duration(days) * 24 * time.Hour
}

// me is GET /api/me's body: you, and how this request signed in.
type me struct {
	event.You
	Via string `json:"via"`
	// Session is the id of the session this request used ("" unless via
	// is session): the one GET /api/me/sessions marks current.
	Session string `json:"session,omitempty"`
}

func meOf(who people.Who) me {
	m := me{You: who.Person.You(), Via: who.Via}
	if who.Via == viaSession {
		m.Session = who.Credential
	}
	return m
}

func whoOf(r *http.Request) (people.Who, error) {
	who, ok := people.FromContext(r.Context())
	if !ok || who.Person == nil {
		return people.Who{}, errUnauthorized
	}
	return who, nil
}

func (g *guard) me(w http.ResponseWriter, r *http.Request) error {
	who, err := whoOf(r)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, meOf(who))
	return nil
}

// personName is one entry of GET /api/people.
type personName struct {
	Person string `json:"person"`
	Name   string `json:"name"`
}

// people is GET /api/people: ids and names, for showing names on events
// (the read permission, which protect checked). Nothing else about
// anyone: no roles, no addresses.
func (g *guard) people(w http.ResponseWriter, r *http.Request) error {
	out := []personName{}
	for _, p := range g.dir.All() {
		out = append(out, personName{Person: p.ID, Name: p.Name})
	}
	httpjson.Write(w, http.StatusOK, out)
	return nil
}

// authConfig tells the sign-in screen what it may offer.
func (g *guard) authConfig(w http.ResponseWriter, r *http.Request) error {
	httpjson.Write(w, http.StatusOK, map[string]any{"oidc": g.o.Auth.OIDC.Issuer != "", "open": g.open()})
	return nil
}

// exchangeToken is POST /auth/token {token}: a token pasted once (or one
// an older page kept in localStorage) becomes the session cookie. The
// shared server.auth_token signs in as the first admin.
func (g *guard) exchangeToken(w http.ResponseWriter, r *http.Request) error {
	body, err := httpjson.ReadBody(w, r, 4096, "4 KiB")
	if err != nil {
		return err
	}
	var req struct {
		Token string `json:"token"`
	}
	if err := strictjson.Unmarshal(body, &req); err != nil {
		return httpjson.Errorf(http.StatusBadRequest, "bad_body", "the body must be {\"token\": \"…\"}: "+err.Error())
	}
	if req.Token == "" {
		return httpjson.Errorf(http.StatusBadRequest, "bad_token", "token is required")
	}
	addr, now := g.clientAddr(r), g.now()
	if err := g.limit.check(addr, now); err != nil {
		return err
	}
	p, c, _ := g.tokenPerson(req.Token)
	if p == nil {
		return g.limit.fail(addr, c.Person, now, httpjson.Errorf(http.StatusUnauthorized, "unauthorized", "the token was not accepted"))
	}
	if p.Kind == people.KindService {
		return httpjson.Errorf(http.StatusForbidden, "service", p.ID+" is a service: it sends its token with each request and has no web session")
	}
	if err := g.limit.signIn(p.ID, now); err != nil {
		return err
	}
	sc, err := signIn(w, r, g.creds, g.o.Audit, p.ID, "token", g.sessionTTL())
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, meOf(people.Who{Person: p, Credential: sc.ID, Via: viaSession}))
	return nil
}

// logout is POST /auth/logout: the cookie's session is revoked (its
// WebSockets close) and the cookie cleared. Without one, nothing to do.
func (g *guard) logout(w http.ResponseWriter, r *http.Request) error {
	if ck, err := r.Cookie(SessionCookie); err == nil {
		if c, ok := g.creds.Check(ck.Value, auth.KindSession); ok {
			if _, err := g.creds.Revoke(c.ID); err != nil && !errors.Is(err, auth.ErrNotFound) {
				return err
			}
			g.o.Audit.revoked(r.Context(), c, c.Person)
		}
	}
	clearSessionCookie(w, r)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
