// Package admin manages people's credentials from the command line:
// frontdesk token add|list|revoke and frontdesk login-link. A running
// server answers on a unix socket (data_dir/admin.sock, 0600, HTTP over
// it); with the server stopped the command opens the credentials itself.
// Either way the same Service does the work, so both behave alike.
package admin

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/people"
)

// UsageError is a request refused as given (unknown person, bad -expires,
// a duplicate label): nothing was written. The command exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// ExitCode is the command's exit status for it.
func (e *UsageError) ExitCode() int { return 2 }

func usage(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// Service does what the commands ask of a Store.
type Service struct {
	Store  *auth.Store
	People *people.Directory
	// Addr is the server's listen address (server.addr): login links
	// point at it.
	Addr string
	// Record appends a person_changed event to the chat log (a running
	// server), or keeps it to be appended at the next start (a stopped
	// one).
	Record func(event.PersonChangedData) error
	// By names who made a change in person_changed events ("cli").
	By  string
	Now func() time.Time
}

// Added is what token add and login-link answer: the secret (shown once)
// and its credential.
type Added struct {
	Secret     string          `json:"secret"`
	URL        string          `json:"url,omitempty"` // a login link's
	Credential auth.Credential `json:"credential"`
}

func (s *Service) person(id string) (*people.Person, error) {
	p := s.People.Get(id)
	if p == nil {
		var ids []string
		for _, o := range s.People.All() {
			ids = append(ids, o.ID)
		}
		return nil, usage("no person %q in the configuration (people: %s)", id, strings.Join(ids, ", "))
	}
	return p, nil
}

// ParseExpires reads -expires: a Go duration (12h, 30m) or a number of
// days (90d); "" or "0" is never.
func ParseExpires(s string) (time.Duration, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, usage("bad -expires %q: give a number of days (90d) or a duration (12h, 30m), more than zero", s)
	}
	return d, nil
}

// AddToken issues a token for person. A duplicate label, an unknown
// person or a bad expires is a *UsageError and nothing is written.
func (s *Service) AddToken(person, label, expires string) (Added, error) {
	if _, err := s.person(person); err != nil {
		return Added{}, err
	}
	ttl, err := ParseExpires(expires)
	if err != nil {
		return Added{}, err
	}
	if label == "" {
		label = "token-" + s.Now().UTC().Format("20060102-150405")
	}
	if _, ok := s.Store.Find(person, label); ok {
		return Added{}, usage("%s already has a token labelled %q: revoke it first or choose another -label", person, label)
	}
	secret, c, err := s.Store.Issue(auth.KindToken, person, label, "", ttl)
	if errors.Is(err, auth.ErrExists) {
		return Added{}, usage("%v", err)
	}
	if err != nil {
		return Added{}, err
	}
	s.record(event.PersonChangedData{Action: event.TokenAdded, Person: person, Label: label, Credential: c.ID, Expires: expiry(c)})
	return Added{Secret: secret, Credential: c}, nil
}

// LoginLink issues a one-time login link (auth.LinkTTL) for person; a
// service gets none.
func (s *Service) LoginLink(person string) (Added, error) {
	p, err := s.person(person)
	if err != nil {
		return Added{}, err
	}
	if p.Kind == people.KindService {
		return Added{}, usage("%s is a service: it signs in with a token (frontdesk token add %s), not a login link", person, person)
	}
	secret, c, err := s.Store.Issue(auth.KindLink, person, "", "", auth.LinkTTL)
	if err != nil {
		return Added{}, err
	}
	s.record(event.PersonChangedData{Action: event.LoginLinkIssued, Person: person, Credential: c.ID, Expires: expiry(c)})
	return Added{Secret: secret, URL: LinkURL(s.Addr, secret), Credential: c}, nil
}

// LinkURL is the login link for secret on a server listening on addr.
func LinkURL(addr, secret string) string {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
		addr = net.JoinHostPort("localhost", port)
	}
	return "http://" + addr + "/auth/link?code=" + url.QueryEscape(secret)
}

// List returns every credential (tokens, sessions, links), oldest first.
func (s *Service) List() []auth.Credential { return s.Store.List("") }

// Revoke deletes person's token labelled label, or person's credential
// whose public id is label (a session's).
func (s *Service) Revoke(person, label string) (auth.Credential, error) {
	if _, err := s.person(person); err != nil {
		return auth.Credential{}, err
	}
	c, ok := s.Store.Find(person, label)
	if !ok {
		return auth.Credential{}, usage("%s has no token labelled %q nor a credential with that id (see frontdesk token list)", person, label)
	}
	if _, err := s.Store.Revoke(c.ID); err != nil {
		return auth.Credential{}, err
	}
	action := event.TokenRevoked
	if c.Kind == auth.KindSession {
		action = event.SessionRevoked
	}
	s.record(event.PersonChangedData{Action: action, Person: person, Label: c.Label, Credential: c.ID})
	return c, nil
}

func (s *Service) record(d event.PersonChangedData) {
	d.By = s.By
	if s.Record != nil {
		_ = s.Record(d) // the Record funcs keep what they could not append (auth.Store.AddPending)
	}
}

func expiry(c auth.Credential) *event.Time {
	if c.Expires.IsZero() {
		return nil
	}
	t := event.Time(c.Expires)
	return &t
}
