package hub

import ()

// Actor is who asks the session for something: the door it came through
// and the person behind it. Doors build it; the hub writes Person on the
// events the request makes and asks the Gate whether it may.
type Actor struct {
	// Door is the channel (web, console, email, webhook, mcp, schedule,
	// telegram, …) or CancelByAPI for the HTTP API.
	Door string `json:"door"`
	// Person is a people id; "" when the door knows nobody (an allowed
	// but unmapped email sender).
	Person string `json:"person,omitempty"`
	// SignedIn is true when the door checked a credential (a token, a web
	// session, a trusted proxy's header, an OIDC sign-in), is the server's
	// own terminal, or is a chat door whose platform signed the account in
	// (Telegram, Matrix, Slack). An email address only says who sent a
	// message: approving, resetting, forgetting and erasing need it.
	SignedIn bool `json:"signed_in,omitempty"`
}

// Gate decides what an actor may do. *people.Directory implements it;
// a nil Config.Gate allows everything (one person on a laptop, tests).
// Allow is called on the hub's goroutine and on doors' goroutines alike:
// it must be safe for concurrent use and must not block.
type Gate interface {
	// Allow returns nil when a may do perm (an event.Perm* name), else a
	// *ForbiddenError saying who may not do what.
	Allow(a Actor, perm string) error
	// Name is a person's display name ("" for an unknown id).
	Name(person string) string
}

// ForbiddenError refuses a request its actor has no permission for. Doors
// answer 403 {"code":"forbidden","permission":…,"message":…} or an error
// frame with code forbidden.
type ForbiddenError struct {
	Person     string
	Permission string
	Message    string // "bo may not reset the conversation"
}

func (e *ForbiddenError) Error() string { return e.Message }

// Code is the word doors put on the wire.
func (e *ForbiddenError) Code() string { return "forbidden" }

// allow asks the configured Gate; nil Gate allows.
func (m *SessionManager) allow(a Actor, perm string) error {
	if m.cfg.Gate == nil {
		return nil
	}
	return m.cfg.Gate.Allow(a, perm)
}
