package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/event"
)

// SessionCookie names the web sign-in cookie: HttpOnly, SameSite=Lax,
// Secure when the request came over TLS, Path /.
const SessionCookie = "frontdesk_session"

// signIn starts a web session for person (via: link, token, proxy, oidc):
// a new session credential — a new id at every sign-in — and its cookie.
// Every way of signing in on the web ends here.
// audit (Options.Audit) records the sign-in in the log.
func signIn(w http.ResponseWriter, r *http.Request, st *auth.Store, audit Audit, person, via string, ttl time.Duration) (auth.Credential, error) {
	secret, c, err := st.Issue(auth.KindSession, person, "", via, ttl)
	if err != nil {
		return auth.Credential{}, err
	}
	exp := event.Time(c.Expires)
	audit.record(r.Context(), event.PersonChangedData{Action: event.SessionStarted, Person: person, By: person,
		Credential: c.ID, Via: via, Expires: &exp})
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: secret, Path: "/", Expires: c.Expires,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https",
	})
	return c, nil
}

// Audit records a change of who may do what (a person_changed event:
// hub.SessionManager.RecordPersonChange). nil records nothing.
type Audit func(ctx context.Context, d event.PersonChangedData) error

// record calls a, logging (not returning) a failure: the sign-in or
// revocation it records has happened.
func (a Audit) record(ctx context.Context, d event.PersonChangedData) {
	if a == nil {
		return
	}
	if err := a(context.WithoutCancel(ctx), d); err != nil {
		slog.Warn("audit: the change is not in the chat log", "action", d.Action, "person", d.Person, "err", err)
	}
}

// revoked records that by ended session c.
func (a Audit) revoked(ctx context.Context, c auth.Credential, by string) {
	a.record(ctx, event.PersonChangedData{Action: event.SessionRevoked, Person: c.Person, By: by, Credential: c.ID})
}
