package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/httpjson"
)

// sessionInfo is one web session in GET /api/me/sessions: never its
// secret nor its hash.
type sessionInfo struct {
	ID      string    `json:"id"`
	Person  string    `json:"person"`
	Via     string    `json:"via,omitempty"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires,omitzero"`
	Current bool      `json:"current"`
}

// sessions is GET /api/me/sessions: your own web sessions. An admin may
// ask for someone else's (?person=bo) or everyone's (?person=*).
func (g *guard) sessions(w http.ResponseWriter, r *http.Request) error {
	who, err := whoOf(r)
	if err != nil {
		return err
	}
	person := who.Person.ID
	if q := r.URL.Query().Get("person"); q != "" && q != person {
		if !who.Person.Can(event.PermAdmin) {
			return &httpjson.Error{Status: http.StatusForbidden, Code: "forbidden",
				Message: who.Person.ID + " may see only their own sessions; another person's need the admin permission"}
		}
		person = q
		if q == "*" {
			person = ""
		}
	}
	out := []sessionInfo{}
	now := g.now()
	for _, c := range g.creds.List(person) {
		if c.Kind != auth.KindSession || c.Expired(now) {
			continue
		}
		out = append(out, sessionInfo{ID: c.ID, Person: c.Person, Via: c.Via, Created: c.Created, Expires: c.Expires,
			Current: who.Via == viaSession && c.ID == who.Credential})
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"sessions": out})
	return nil
}

// revokeSession is DELETE /api/me/sessions/{id}: one of your sessions
// ends (its WebSockets close with 1008); an admin may end anyone's. A
// session that is not yours is 404 to a non-admin, as if it did not exist.
func (g *guard) revokeSession(w http.ResponseWriter, r *http.Request) error {
	who, err := whoOf(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	notFound := httpjson.Errorf(http.StatusNotFound, "not_found", "no session "+id)
	var found *auth.Credential
	for _, c := range g.creds.List("") {
		if c.ID == id && c.Kind == auth.KindSession {
			found = &c
		}
	}
	if found == nil || (found.Person != who.Person.ID && !who.Person.Can(event.PermAdmin)) {
		return notFound
	}
	if _, err := g.creds.Revoke(id); errors.Is(err, auth.ErrNotFound) {
		return notFound
	} else if err != nil {
		return err
	}
	g.o.Audit.revoked(r.Context(), *found, who.Person.ID)
	if who.Via == viaSession && who.Credential == id {
		clearSessionCookie(w, r)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
