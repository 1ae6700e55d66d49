package web

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/people"
)

// guard applies the security defaults of DESIGN.md.
type guard struct {
	o     Options
	creds *auth.Store
	dir   *people.Directory
	cop   *http.CrossOriginProtection
	proxy []netip.Prefix // auth.trusted_proxy.from
	limit *signinLimits
	now   func() time.Time
}

func newGuard(o Options) *guard {
	g := &guard{o: o, creds: o.Credentials, dir: o.People, cop: http.NewCrossOriginProtection(), limit: newSigninLimits(), now: time.Now}
	if g.dir == nil {
		g.dir = people.New(nil)
	}
	if g.creds == nil {
		g.creds, _ = auth.New(auth.Memory{}, nil)
	}
	for _, o := range o.AllowedOrigins {
		_ = g.cop.AddTrustedOrigin(strings.TrimSuffix(o, "/")) // a malformed one is refused by config
	}
	for _, c := range o.Auth.TrustedProxy.From {
		if p, err := netip.ParsePrefix(c); err == nil {
			g.proxy = append(g.proxy, p.Masked())
		} else if a, err := netip.ParseAddr(c); err == nil {
			g.proxy = append(g.proxy, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return g
}

// checkHost refuses Host headers that are not ours: a browser tricked by
// DNS rebinding sends the attacker's name, and same-origin checks alone
// would pass because the page's origin is that name too.
func (g *guard) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.hostAllowed(r.Host) {
			refuse(w)
			httpjson.WriteError(w, httpjson.Errorf(http.StatusMisdirectedRequest, "bad_host",
				"host "+r.Host+" is not served here; add it to server.allowed_hosts"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (g *guard) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	listen, _, _ := net.SplitHostPort(g.o.Addr)
	if strings.EqualFold(strings.Trim(listen, "[]"), host) {
		return true
	}
	for _, h := range g.o.AllowedHosts {
		if strings.EqualFold(h, host) || strings.EqualFold(h, hostport) {
			return true
		}
	}
	// Listening on every interface we cannot know our names; the required
	// credential (enforced at start-up for non-loopback addresses) protects /ws
	// and /api/* instead, and a rebinding page never has it.
	if ip := net.ParseIP(strings.Trim(listen, "[]")); (listen == "" || (ip != nil && ip.IsUnspecified())) && !g.open() {
		return true
	}
	return false
}

// protect checks Origin, finds who is asking (identify) and, for /ws and
// reads of /api/*, that they may read; the request goes on carrying its
// people.Who (people.NewContext). A request that signed in with a cookie
// or a proxy's header (something a browser sends by itself) is refused
// cross-site by net/http.CrossOriginProtection; a Bearer token is not, as
// no browser sends one on its own.
func (g *guard) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin, r.Host) {
			refuse(w)
			httpjson.WriteError(w, httpjson.Errorf(http.StatusForbidden, "bad_origin",
				"origin "+origin+" is not allowed; add it to server.allowed_origins"))
			return
		}
		who, err := g.identify(w, r)
		if err == nil && who.Via != viaBearer && who.Via != viaShared {
			if cerr := g.cop.Check(r); cerr != nil {
				err = httpjson.Errorf(http.StatusForbidden, "cross_origin",
					"a cross-site request signed in by cookie is refused; send Authorization: Bearer instead")
			}
		}
		if err == nil && needsRead(r) && !who.Person.Can(event.PermRead) {
			err = &httpjson.Error{Status: http.StatusForbidden, Code: "forbidden",
				Message: who.Person.ID + " may not read the conversation"}
		}
		if err != nil {
			refuse(w)
			var e *httpjson.Error
			if errors.As(err, &e) && e.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="frontdesk"`)
				g.writeUnauthorized(w, e)
				return
			}
			httpjson.WriteError(w, err)
			return
		}
		r = r.WithContext(people.NewContext(r.Context(), who))
		if r.URL.Path == "/ws" && who.Credential != "" {
			g.serveWatched(next, w, r, who)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// needsRead: the WebSocket and every read of /api/* but your own /api/me
// (a service that may only talk still learns who it is).
func needsRead(r *http.Request) bool {
	if r.URL.Path == "/ws" {
		return true
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false // the handlers check what a write needs (hub.Gate)
	}
	return strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/api/me" && !strings.HasPrefix(r.URL.Path, "/api/me/")
}

// refuse marks a response that turns a request away unread: the
// connection closes after it, and nothing more is read from it. net/http
// would otherwise drain the rest of the body first (Connection: close alone
// does not stop that), and a client sending it one byte at a time could
// hold a refused connection for as long as the body deadline allows.
func refuse(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

func (g *guard) originAllowed(origin, host string) bool {
	for _, o := range g.o.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	// Same origin: the page was served by this Host (which checkHost vetted).
	// The scheme is not compared so a TLS-terminating proxy in front works.
	return strings.EqualFold(u.Host, host)
}
