package web

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
)

// guard applies the security defaults of DESIGN.md.
type guard struct{ o Options }

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
	// token (enforced at start-up for non-loopback addresses) protects /ws
	// and /api/* instead, and a rebinding page never has it.
	if ip := net.ParseIP(strings.Trim(listen, "[]")); (listen == "" || (ip != nil && ip.IsUnspecified())) && g.o.Token != "" {
		return true
	}
	return false
}

// protect checks Origin and the token for /ws and /api/*.
func (g *guard) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin, r.Host) {
			refuse(w)
			httpjson.WriteError(w, httpjson.Errorf(http.StatusForbidden, "bad_origin",
				"origin "+origin+" is not allowed; add it to server.allowed_origins"))
			return
		}
		if g.o.Token != "" && !tokenOK(r, g.o.Token) {
			refuse(w)
			w.Header().Set("WWW-Authenticate", `Bearer realm="frontdesk"`)
			httpjson.WriteError(w, httpjson.Errorf(http.StatusUnauthorized, "unauthorized",
				"a valid token is required: send Authorization: Bearer <token> or ?token=<token>"))
			return
		}
		next.ServeHTTP(w, r)
	})
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

// tokenOK reports whether r carries the token: in an Authorization header
// with the Bearer scheme (in any case, as RFC 7235 has it), or else in the
// token query parameter.
func tokenOK(r *http.Request, want string) bool {
	got := ""
	if scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		got = strings.TrimLeft(cred, " ")
	} else {
		got = r.URL.Query().Get("token")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
