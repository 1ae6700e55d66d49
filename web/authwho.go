package web

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/people"
)

// How a request signed in (people.Who.Via).
const (
	viaBearer  = "token"   // a stored token: Bearer or ?token=
	viaShared  = "shared"  // the shared server.auth_token
	viaSession = "session" // the sign-in cookie
	viaProxy   = "proxy"   // auth.trusted_proxy's header
	viaOpen    = "open"    // nothing is configured: the implicit owner
)

var errUnauthorized = httpjson.Errorf(http.StatusUnauthorized, "unauthorized",
	"sign in first: open a login link, paste a token, or send Authorization: Bearer <token>")

// open reports whether no credential is configured at all: no shared
// token and no people. Then every request that passed the Host and Origin
// checks is the implicit owner — one person on a laptop configures nothing.
func (g *guard) open() bool { return g.o.Token == "" && g.dir.Implicit() }

// identify finds who is behind r, in this order: a Bearer token (or
// ?token=) — the shared token or a stored one; the session cookie; a
// trusted proxy's header (only from auth.trusted_proxy.from); nobody
// needed when nothing is configured. A presented credential that does not
// open is a 401, never a fall-through, and counts against the client's
// address (429 once it has failed too often).
func (g *guard) identify(w http.ResponseWriter, r *http.Request) (people.Who, error) {
	addr := g.clientAddr(r)
	if secret, ok := bearer(r); ok {
		if err := g.limit.check(addr, g.now()); err != nil {
			return people.Who{}, err
		}
		p, c, via := g.tokenPerson(secret)
		if p == nil {
			return people.Who{}, g.limit.fail(addr, c.Person, g.now(), errUnauthorized)
		}
		return people.Who{Person: p, Credential: c.ID, Via: via}, nil
	}
	if ck, err := r.Cookie(SessionCookie); err == nil && ck.Value != "" {
		if err := g.limit.check(addr, g.now()); err != nil {
			return people.Who{}, err
		}
		c, ok := g.creds.Check(ck.Value, auth.KindSession)
		if p := g.dir.Get(c.Person); ok && p != nil {
			return people.Who{Person: p, Credential: c.ID, Via: viaSession}, nil
		}
		if w != nil {
			clearSessionCookie(w, r) // stale: the browser stops sending it
		}
		if err := g.limit.fail(addr, c.Person, g.now(), nil); err != nil {
			return people.Who{}, err
		}
	}
	if who, ok, err := g.byProxy(r, addr); ok || err != nil {
		return who, err
	}
	if g.open() {
		return people.Who{Person: g.dir.FirstAdmin(), Via: viaOpen}, nil
	}
	return people.Who{}, errUnauthorized
}

// tokenPerson is the person a token opens: the shared server.auth_token
// (compared in constant time) is the first admin; else a stored token.
// A token of someone no longer in people opens nothing (c names them).
func (g *guard) tokenPerson(secret string) (*people.Person, auth.Credential, string) {
	if g.o.Token != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(g.o.Token)) == 1 {
		return g.dir.FirstAdmin(), auth.Credential{}, viaShared
	}
	c, ok := g.creds.Check(secret, auth.KindToken)
	if !ok {
		return nil, auth.Credential{}, ""
	}
	return g.dir.Get(c.Person), c, viaBearer
}

// byProxy believes auth.trusted_proxy's headers, but only when the TCP
// peer is one of its addresses: the same header from anywhere else is
// ignored (ok false), as if it had not been sent. A header naming
// nobody in people is a 401.
func (g *guard) byProxy(r *http.Request, addr string) (people.Who, bool, error) {
	tp := g.o.Auth.TrustedProxy
	if !g.fromProxy(r) {
		return people.Who{}, false, nil
	}
	var p *people.Person
	var named string
	if h := tp.UserHeader; h != "" && r.Header.Get(h) != "" {
		named = r.Header.Get(h)
		p = g.dir.Get(named)
	} else if h := tp.EmailHeader; h != "" && r.Header.Get(h) != "" {
		named = r.Header.Get(h)
		p = g.dir.ByEmail(named)
	} else {
		return people.Who{}, false, nil
	}
	if p == nil || p.Kind == people.KindService {
		err := httpjson.Errorf(http.StatusUnauthorized, "unauthorized",
			"the proxy says "+strconv.Quote(named)+", who is not in people")
		return people.Who{}, false, g.limit.fail(addr, "", g.now(), err)
	}
	return people.Who{Person: p, Via: viaProxy}, true, nil
}

// fromProxy reports whether r's TCP peer is in auth.trusted_proxy.from.
func (g *guard) fromProxy(r *http.Request) bool {
	if len(g.proxy) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap()
	for _, p := range g.proxy {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// clientAddr is whom rate limits count against: the TCP peer's address,
// or, from a trusted proxy, the address it put last in X-Forwarded-For.
func (g *guard) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if g.fromProxy(r) {
		xff := r.Header.Values("X-Forwarded-For")
		if len(xff) > 0 {
			parts := strings.Split(xff[len(xff)-1], ",")
			if a, err := netip.ParseAddr(strings.TrimSpace(parts[len(parts)-1])); err == nil {
				return a.Unmap().String()
			}
		}
	}
	return host
}

// bearer returns the token r carries: in an Authorization header with the
// Bearer scheme (in any case, as RFC 7235 has it), or else in the token
// query parameter (a browser's WebSocket cannot send headers).
func bearer(r *http.Request) (string, bool) {
	if scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimLeft(cred, " "), true
	}
	if t := r.URL.Query().Get("token"); t != "" {
		return t, true
	}
	return "", false
}

// writeUnauthorized writes a 401 that also tells the page how it may sign
// in (oidc: an OIDC provider is configured).
func (g *guard) writeUnauthorized(w http.ResponseWriter, e *httpjson.Error) {
	httpjson.Write(w, e.Status, map[string]any{"code": e.Code, "message": e.Message, "oidc": g.o.Auth.OIDC.Issuer != ""})
}

// serveWatched serves a WebSocket opened with a credential and closes it
// (1008 "credential revoked") as soon as the credential stops being
// valid: revoked here or on another node (auth.Store.Changed), or expired.
func (g *guard) serveWatched(next http.Handler, w http.ResponseWriter, r *http.Request, who people.Who) {
	var expires time.Time
	for _, c := range g.creds.List(who.Person.ID) {
		if c.ID == who.Credential {
			expires = c.Expires
		}
	}
	revoked := make(chan struct{})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var expiry <-chan time.Time
		if !expires.IsZero() {
			t := time.NewTimer(time.Until(expires))
			defer t.Stop()
			expiry = t.C
		}
		for {
			changed := g.creds.Changed() // before Valid: no change slips between
			if !g.creds.Valid(who.Credential) {
				close(revoked)
				return
			}
			select {
			case <-changed:
			case <-expiry:
				expiry = nil
			case <-stop:
				return
			}
		}
	}()
	next.ServeHTTP(w, r.WithContext(ws.WithRevoked(r.Context(), revoked)))
	close(stop)
	<-done
}

// clearSessionCookie tells the browser to forget the session cookie.
func clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"})
}

// mayRead reports whether r is signed in as someone who may read (the
// detail of /healthz, which is open to all).
func (g *guard) mayRead(r *http.Request) bool {
	who, err := g.identify(nil, r)
	return err == nil && who.Person.Can(event.PermRead)
}
