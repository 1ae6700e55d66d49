package web

import (
	"errors"
	"html/template"
	"net/http"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
	"github.com/frontdesk-hq/frontdesk/people"
)

// link is GET /auth/link?code=…: a login link (frontdesk login-link)
// used once. It signs the browser in (the session cookie) and sends it to
// the page; a used, unknown or expired link gets a page that says so
// (400, 410) and how to get a new one.
func (g *guard) link(w http.ResponseWriter, r *http.Request) {
	addr, now := g.clientAddr(r), g.now()
	if err := g.limit.check(addr, now); err != nil {
		linkLimited(w, err)
		return
	}
	code := r.URL.Query().Get("code")
	c, err := g.creds.Redeem(code)
	switch {
	case errors.Is(err, auth.ErrExpired):
		_ = g.limit.fail(addr, "", now, nil)
		linkPage(w, http.StatusGone, "This sign-in link has expired (a link works for 15 minutes). Ask for a new one.")
		return
	case errors.Is(err, auth.ErrNotFound) || code == "":
		if e := g.limit.fail(addr, "", now, nil); e != nil {
			linkLimited(w, e)
			return
		}
		linkPage(w, http.StatusBadRequest, "This sign-in link does not work: it was already used, or this server did not issue it. Ask for a new one.")
		return
	case err != nil:
		linkPage(w, http.StatusInternalServerError, "Signing in failed on the server; see its log.")
		return
	}
	p := g.dir.Get(c.Person)
	if p == nil || p.Kind == people.KindService {
		linkPage(w, http.StatusBadRequest, "This sign-in link was for "+c.Person+", who is no longer in people.")
		return
	}
	if err := g.limit.signIn(p.ID, now); err != nil {
		linkLimited(w, err)
		return
	}
	if _, err := signIn(w, r, g.creds, g.o.Audit, p.ID, "link", g.sessionTTL()); err != nil {
		linkPage(w, http.StatusInternalServerError, "Signing in failed on the server; see its log.")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

var linkTmpl = template.Must(template.New("link").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>frontdesk: sign-in link</title></head>
<body><h1>Signing in did not work</h1><p id="why">{{.}}</p>
<p>Whoever runs this frontdesk can make a new link with <code>frontdesk login-link &lt;your id&gt;</code>.</p>
<p><a href="/">Back to frontdesk</a></p></body></html>
`))

func linkPage(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = linkTmpl.Execute(w, msg)
}

// linkLimited is linkPage for a rate limit's 429, with its Retry-After.
func linkLimited(w http.ResponseWriter, err error) {
	var e *httpjson.Error
	if errors.As(err, &e) && e.RetryAfter != "" {
		w.Header().Set("Retry-After", e.RetryAfter)
		linkPage(w, http.StatusTooManyRequests, e.Message)
		return
	}
	linkPage(w, http.StatusTooManyRequests, err.Error())
}
