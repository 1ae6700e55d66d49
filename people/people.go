// Package people is who frontdesk serves: the people (and services) of
// config.yaml's people list, their roles and permissions, and how a door
// finds the person behind a message (an email address, a chat account).
// One Directory is built at start and only read afterwards: it is safe for
// concurrent use.
package people

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// Owner is the id of the one implicit person when people is empty: every
// permission, named "owner" in events.
const Owner = "owner"

// Roles, from least to most.
const (
	RoleViewer   = "viewer"
	RoleMember   = "member"
	RoleOperator = "operator"
	RoleAdmin    = "admin"
)

// KindService marks a script or bridge: it signs in with tokens only.
const KindService = "service"

var rolePerms = map[string][]string{
	RoleViewer:   {event.PermRead},
	RoleMember:   {event.PermRead, event.PermTalk, event.PermCancel, event.PermMemory, event.PermSchedules},
	RoleOperator: {event.PermRead, event.PermTalk, event.PermCancel, event.PermMemory, event.PermSchedules, event.PermApprove, event.PermReset, event.PermForget, event.PermErase},
	RoleAdmin:    event.Permissions,
}

// signedInOnly are the permissions a door that only identifies (email, a
// chat account) never exercises: they need a checked credential.
var signedInOnly = []string{event.PermApprove, event.PermReset, event.PermForget, event.PermErase, event.PermAdmin}

// Person is one resolved entry.
type Person struct {
	ID          string
	Name        string
	Kind        string // "" or KindService
	Role        string // "" when Permissions were listed
	Permissions []string
	Emails      []string
	Accounts    map[string]string
}

// Can reports whether p holds perm.
func (p *Person) Can(perm string) bool { return p != nil && slices.Contains(p.Permissions, perm) }

// You is p as their own client sees them.
func (p *Person) You() event.You {
	return event.You{Person: p.ID, Name: p.Name, Role: p.Role, Kind: p.Kind, Permissions: slices.Clone(p.Permissions)}
}

// Directory is the people of one configuration.
type Directory struct {
	list      []*Person
	byID      map[string]*Person
	byEmail   map[string]*Person
	byAccount map[string]*Person // door + "\x00" + account
	implicit  bool
	// guest finds a person added at run time (auth.oidc.new_people), or
	// nil; set once by SetGuests before the directory is shared.
	guest func(id string) *Person
}

// SetGuests makes Get (and so Allow and Name) find people who are not in
// the configuration but were let in at run time — an OIDC sign-in under
// auth.oidc.new_people, kept in the credential store. f must be safe for
// concurrent use. Call it before the directory is shared.
func (d *Directory) SetGuests(f func(id string) *Person) { d.guest = f }

// GuestsFrom makes the guests st keeps (auth.Store.BindGuest) people.
func (d *Directory) GuestsFrom(st *auth.Store) {
	d.SetGuests(func(id string) *Person {
		if c, ok := st.Guest(id); ok {
			return Guest(id, c.Name, c.Role)
		}
		return nil
	})
}

// Guest builds a run-time person with role (viewer or member).
func Guest(id, name, role string) *Person {
	if name == "" {
		name = id
	}
	return &Person{ID: id, Name: name, Role: role, Permissions: slices.Clone(rolePerms[role])}
}

var _ hub.Gate = (*Directory)(nil)

// New builds the directory of cfg.People (validated by config). With none,
// it holds the implicit owner.
func New(list []config.Person) *Directory {
	d := &Directory{byID: map[string]*Person{}, byEmail: map[string]*Person{}, byAccount: map[string]*Person{}}
	if len(list) == 0 {
		d.implicit = true
		list = []config.Person{{ID: Owner, Name: "Owner", Role: RoleAdmin}}
	}
	for _, c := range list {
		p := &Person{ID: c.ID, Name: c.Name, Kind: c.Kind, Role: c.Role, Emails: c.Emails, Accounts: c.Accounts}
		if p.Kind == "person" {
			p.Kind = ""
		}
		if p.Name == "" {
			p.Name = p.ID
		}
		switch {
		case len(c.Permissions) > 0:
			p.Role = ""
			p.Permissions = slices.Clone(c.Permissions)
		case p.Role == "":
			p.Role = RoleViewer
			fallthrough
		default:
			p.Permissions = slices.Clone(rolePerms[p.Role])
		}
		d.list = append(d.list, p)
		d.byID[p.ID] = p
		for _, e := range c.Emails {
			d.byEmail[strings.ToLower(e)] = p
		}
		for door, a := range c.Accounts {
			d.byAccount[accountKey(door, a)] = p
		}
	}
	return d
}

// Implicit reports whether people was empty: one owner, nothing configured.
func (d *Directory) Implicit() bool { return d.implicit }

// All returns every person in the configuration's order.
func (d *Directory) All() []*Person { return slices.Clone(d.list) }

// Get returns the person with id (listed, or a guest), or nil.
func (d *Directory) Get(id string) *Person {
	if p := d.byID[id]; p != nil {
		return p
	}
	if d.guest != nil && id != "" {
		return d.guest(id)
	}
	return nil
}

// ByEmail returns the person whose emails hold addr (any case), or nil.
func (d *Directory) ByEmail(addr string) *Person { return d.byEmail[strings.ToLower(addr)] }

// ByAccount returns the person whose accounts name acct on door, or nil.
func (d *Directory) ByAccount(door, acct string) *Person { return d.byAccount[accountKey(door, acct)] }

// accountKey is a chat account's key: Telegram @usernames are the same
// whatever their case; ids are compared exactly.
func accountKey(door, acct string) string {
	if door == "telegram" && strings.HasPrefix(acct, "@") {
		acct = strings.ToLower(acct)
	}
	return door + "\x00" + acct
}

// FirstAdmin is the first person with the admin permission (the implicit
// owner without people): whom the shared server.auth_token and, by
// default, the terminal sign in as. nil when nobody is an admin.
func (d *Directory) FirstAdmin() *Person {
	for _, p := range d.list {
		if p.Can(event.PermAdmin) && p.Kind != KindService {
			return p
		}
	}
	return nil
}

// Name is a person's display name ("" for an unknown id).
func (d *Directory) Name(id string) string {
	if p := d.Get(id); p != nil {
		return p.Name
	}
	return ""
}

// Allow implements hub.Gate: nil when a may do perm.
func (d *Directory) Allow(a hub.Actor, perm string) error {
	p := d.Get(a.Person)
	switch {
	case a.Person == "":
		return &hub.ForbiddenError{Permission: perm,
			Message: fmt.Sprintf("the %s door names nobody, and only a signed-in person may %s", doorName(a.Door), says(perm))}
	case p == nil:
		return &hub.ForbiddenError{Person: a.Person, Permission: perm,
			Message: fmt.Sprintf("%s is not in people and may not %s", a.Person, says(perm))}
	case !p.Can(perm):
		return &hub.ForbiddenError{Person: p.ID, Permission: perm,
			Message: fmt.Sprintf("%s may not %s", p.ID, says(perm))}
	case !a.SignedIn && slices.Contains(signedInOnly, perm):
		return &hub.ForbiddenError{Person: p.ID, Permission: perm,
			Message: fmt.Sprintf("%s may %s only when signed in (the web page, a token, the terminal); the %s door only says who sent a message",
				p.ID, says(perm), doorName(a.Door))}
	}
	return nil
}

func doorName(door string) string {
	if door == "" {
		return "unnamed"
	}
	return door
}

// says is what perm lets a person do, in words for a refusal.
func says(perm string) string {
	switch perm {
	case event.PermRead:
		return "read the conversation"
	case event.PermTalk:
		return "talk to the assistant"
	case event.PermCancel:
		return "cancel the running reply"
	case event.PermMemory:
		return "change the assistant's memory"
	case event.PermSchedules:
		return "change schedules"
	case event.PermApprove:
		return "answer approval requests"
	case event.PermReset:
		return "reset the conversation"
	case event.PermForget:
		return "make the assistant forget"
	case event.PermErase:
		return "erase messages"
	case event.PermAdmin:
		return "manage people and credentials"
	}
	return perm
}

// Who is the person behind an HTTP request or a WebSocket, as the web
// guard found them. Doors turn it into a hub.Actor.
type Who struct {
	Person *Person
	// Credential is the public id of the token or session used ("" for
	// the shared server.auth_token, a trusted proxy's header, or a server
	// that asks for no credential).
	Credential string
	// Via is how: token, session, shared, proxy or open.
	Via string
}

// Actor is w at door: signed in, since the guard checked a credential.
func (w Who) Actor(door string) hub.Actor {
	if w.Person == nil {
		return hub.Actor{Door: door}
	}
	return hub.Actor{Door: door, Person: w.Person.ID, SignedIn: true}
}

type whoKey struct{}

// NewContext returns ctx carrying w (the web guard sets it on every
// request it lets through).
func NewContext(ctx context.Context, w Who) context.Context {
	return context.WithValue(ctx, whoKey{}, w)
}

// FromContext returns the Who the guard set; ok is false when none was.
func FromContext(ctx context.Context) (w Who, ok bool) {
	w, ok = ctx.Value(whoKey{}).(Who)
	return w, ok
}
