package event

// PersonChanged: a person, a role or a credential changed — the audit
// trail of who may do what. Never carries a secret (no token, no hash).
const PersonChanged Type = "person_changed"

// Person change actions (PersonChangedData.Action).
const (
	PersonAdded        = "added"         // a people entry appeared in the configuration
	PersonRemoved      = "removed"       // a people entry disappeared
	PersonRoleChanged  = "role_changed"  // its role or permissions changed (Role, Permissions)
	TokenAdded         = "token_added"   // frontdesk token add (Label, Credential, Expires)
	TokenRevoked       = "token_revoked" // frontdesk token revoke, or the admin API
	LoginLinkIssued    = "link_issued"   // frontdesk login-link (Credential, Expires)
	SessionStarted     = "signed_in"     // a web sign-in (Via: link, token, proxy, oidc)
	SessionRevoked     = "session_revoked"
	AccountLinked      = "oidc_linked" // an OIDC issuer+subject was matched to the person
	PersonCreatedByIdP = "oidc_created"
)

// PersonChangedData is the payload of a person_changed event. Person is
// whom it is about, By who did it (a people id, or "cli" for the command
// line on a stopped server, "config" for a changed configuration).
type PersonChangedData struct {
	Action      string   `json:"action"`
	Person      string   `json:"person"`
	By          string   `json:"by,omitempty"`
	Role        string   `json:"role,omitempty"`
	Permissions []string `json:"permissions,omitempty"`
	// Label names a token; Credential is a credential's public id (never
	// the secret nor its hash); Via says how a session signed in.
	Label      string `json:"label,omitempty"`
	Credential string `json:"credential,omitempty"`
	Via        string `json:"via,omitempty"`
	Expires    *Time  `json:"expires,omitempty"`
}

// Permissions a person may hold (people[].permissions, the roles, the
// "permission" of a 403 forbidden answer).
const (
	PermRead      = "read"      // see the conversation, history, memory, schedules
	PermTalk      = "talk"      // send messages
	PermCancel    = "cancel"    // stop the running reply
	PermMemory    = "memory"    // save and edit memory items
	PermSchedules = "schedules" // create and cancel schedules
	PermApprove   = "approve"   // answer approval requests
	PermReset     = "reset"     // reset the conversation
	PermForget    = "forget"    // delete memory items (make the assistant forget)
	PermErase     = "erase"     // erase messages
	PermAdmin     = "admin"     // people, tokens and sessions
)

// Permissions lists every permission in the order above.
var Permissions = []string{PermRead, PermTalk, PermCancel, PermMemory, PermSchedules,
	PermApprove, PermReset, PermForget, PermErase, PermAdmin}
