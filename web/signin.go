package web

import (
	"net/http"
	"time"

	"github.com/frontdesk-hq/frontdesk/auth"
)

// SessionCookie names the web sign-in cookie: HttpOnly, SameSite=Lax,
// Secure when the request came over TLS, Path /.
const SessionCookie = "frontdesk_session"

// signIn starts a web session for person (via: link, token, proxy, oidc):
// a new session credential — a new id at every sign-in — and its cookie.
// Every way of signing in on the web ends here.
func signIn(w http.ResponseWriter, r *http.Request, st *auth.Store, person, via string, ttl time.Duration) (auth.Credential, error) {
	secret, c, err := st.Issue(auth.KindSession, person, "", via, ttl)
	if err != nil {
		return auth.Credential{}, err
	}
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: secret, Path: "/", Expires: c.Expires,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https",
	})
	return c, nil
}

var _ = signIn
