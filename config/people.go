package config

import (
	"fmt"
	"net"
	"net/mail"
	"regexp"
	"slices"
	"strings"
)

// Person is one entry of people: someone (or, with Kind service, a script
// or bridge) the doors know. See package people for what the roles allow.
type Person struct {
	// ID names the person in events (person), commands and tokens: a
	// lower-case letter, then up to 31 lower-case letters, digits, _ or -.
	ID string `yaml:"id"`
	// Name is what the page and the terminal show. Default the id.
	Name string `yaml:"name"`
	// Kind is "" (a person) or service (a script or bridge: it signs in
	// with tokens only, never by link or OIDC).
	Kind string `yaml:"kind"`
	// Role is viewer, member, operator or admin. Either Role or
	// Permissions; neither means viewer.
	Role string `yaml:"role"`
	// Permissions, instead of a role: any of read, talk, cancel, memory,
	// schedules, approve, reset, forget, erase, admin.
	Permissions []string `yaml:"permissions"`
	// Emails are the person's addresses: mail from one is theirs, and an
	// OIDC sign-in with one of them (verified) is matched to them once.
	Emails []string `yaml:"emails"`
	// Accounts are the person's accounts on the chat doors, by door
	// ({telegram: "@ann", matrix: "@ann:example.org", slack: "U0123"}).
	Accounts map[string]string `yaml:"accounts"`
}

// Auth configures how people sign in besides tokens and login links.
type Auth struct {
	// SessionDays is how long a web sign-in lasts. Default 30.
	SessionDays int `yaml:"session_days"`
	// TrustedProxy believes a reverse proxy's header about who is asking,
	// but only from the addresses in From.
	TrustedProxy TrustedProxy `yaml:"trusted_proxy"`
	// OIDC signs people in with an OpenID Connect provider.
	OIDC OIDC `yaml:"oidc"`
}

// TrustedProxy is auth.trusted_proxy.
type TrustedProxy struct {
	// From lists the proxy's addresses as CIDRs (127.0.0.1/32,
	// 10.0.0.0/8). Empty: no header is believed.
	From []string `yaml:"from"`
	// UserHeader carries a person's id (Authelia's Remote-User).
	UserHeader string `yaml:"user_header"`
	// EmailHeader carries an address matched against people[].emails
	// (oauth2-proxy's X-Forwarded-Email, Tailscale-User-Login).
	EmailHeader string `yaml:"email_header"`
}

// OIDC is auth.oidc.
type OIDC struct {
	// Issuer is the provider's issuer URL; empty disables OIDC.
	Issuer string `yaml:"issuer"`
	// ClientID and ClientSecretEnv (the variable holding the secret;
	// empty for a public client, which PKCE protects).
	ClientID        string `yaml:"client_id"`
	ClientSecretEnv string `yaml:"client_secret_env"`
	// RedirectURL is this server's callback as the provider knows it:
	// https://HOST/auth/oidc/callback.
	RedirectURL string `yaml:"redirect_url"`
	// Scopes asked for besides openid. Default [email, profile].
	Scopes []string `yaml:"scopes"`
	// NewPeople is the role given to someone the provider vouches for
	// but no people entry matches: "" (default) refuses them.
	NewPeople string `yaml:"new_people"`
}

// Roles and permissions, as package people defines them (repeated here so
// the configuration is checked where it is read).
var (
	roleNames       = []string{"viewer", "member", "operator", "admin"}
	permissionNames = []string{"read", "talk", "cancel", "memory", "schedules", "approve", "reset", "forget", "erase", "admin"}
	personIDRe      = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
)

func (c *Config) validatePeople(bad badFunc) {
	ids := map[string]bool{}
	emails := map[string]string{}
	accounts := map[string]string{}
	for i, p := range c.People {
		key := fmt.Sprintf("people[%d]", i)
		switch {
		case !personIDRe.MatchString(p.ID):
			bad(key+".id", "%q: use a lower-case letter, then up to 31 lower-case letters, digits, _ or -", p.ID)
		case ids[p.ID]:
			bad(key+".id", "%q is listed twice", p.ID)
		}
		ids[p.ID] = true
		oneOf(bad, key+".kind", p.Kind, "", "person", "service")
		if p.Role != "" && len(p.Permissions) > 0 {
			bad(key, "set role or permissions, not both")
		}
		if p.Role != "" {
			oneOf(bad, key+".role", p.Role, roleNames...)
		}
		for j, perm := range p.Permissions {
			if !slices.Contains(permissionNames, perm) {
				bad(fmt.Sprintf("%s.permissions[%d]", key, j), "%q: use %s", perm, strings.Join(permissionNames, ", "))
			}
		}
		for j, e := range p.Emails {
			k := fmt.Sprintf("%s.emails[%d]", key, j)
			a, err := mail.ParseAddress(e)
			if err != nil || a.Address != e {
				bad(k, "%q is not a plain address such as ann@example.com", e)
				continue
			}
			if other, ok := emails[strings.ToLower(e)]; ok {
				bad(k, "%q is also %s's address: an address belongs to one person", e, other)
			}
			emails[strings.ToLower(e)] = p.ID
		}
		for door, acct := range p.Accounts {
			k := fmt.Sprintf("%s.accounts.%s", key, door)
			oneOf(bad, k+" (the door)", door, chatDoors...)
			if ok, ex := ChatAccountValid(door, acct); !ok && slices.Contains(chatDoors, door) {
				bad(k, "%q is not %s", acct, ex)
			}
			ak := door + "\x00" + acct
			if door == "telegram" {
				ak = strings.ToLower(ak)
			}
			if other, ok := accounts[ak]; ok {
				bad(k, "%q is also %s's account", acct, other)
			}
			accounts[ak] = p.ID
		}
	}
	c.validateAuth(bad, ids)
	if c.Channels.Console.Person != "" && len(c.People) > 0 && !ids[c.Channels.Console.Person] {
		bad("channels.console.person", "%q is not in people", c.Channels.Console.Person)
	}
}

func (c *Config) validateAuth(bad badFunc, ids map[string]bool) {
	if c.Auth.SessionDays < 1 || c.Auth.SessionDays > 400 {
		bad("auth.session_days", "%d: use 1 to 400 days (default 30)", c.Auth.SessionDays)
	}
	tp := c.Auth.TrustedProxy
	for i, cidr := range tp.From {
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			bad(fmt.Sprintf("auth.trusted_proxy.from[%d]", i), "%q is not a CIDR such as 127.0.0.1/32", cidr)
		}
	}
	if len(tp.From) > 0 && tp.UserHeader == "" && tp.EmailHeader == "" {
		bad("auth.trusted_proxy", "from is set but neither user_header nor email_header: name the header the proxy sets")
	}
	if len(tp.From) == 0 && (tp.UserHeader != "" || tp.EmailHeader != "") {
		bad("auth.trusted_proxy.from", "is empty: list the proxy's addresses, or the header would be believed from nobody")
	}
	o := c.Auth.OIDC
	if o.Issuer == "" {
		return
	}
	if !strings.HasPrefix(o.Issuer, "https://") && !strings.HasPrefix(o.Issuer, "http://") {
		bad("auth.oidc.issuer", "%q must be a URL such as https://accounts.example.com", o.Issuer)
	}
	if o.ClientID == "" {
		bad("auth.oidc.client_id", "is required with auth.oidc.issuer")
	}
	if !strings.HasSuffix(o.RedirectURL, "/auth/oidc/callback") {
		bad("auth.oidc.redirect_url", "%q must be this server's https://HOST/auth/oidc/callback", o.RedirectURL)
	}
	if o.NewPeople != "" {
		oneOf(bad, "auth.oidc.new_people", o.NewPeople, "viewer", "member")
	}
}

// PeopleWarnings are the problems check-config reports without refusing
// the configuration.
func (c *Config) PeopleWarnings(getenv func(string) string) []string {
	var w []string
	if len(c.People) > 0 && c.AuthTokenValue(getenv) != "" {
		w = append(w, "server.auth_token is set while people are listed: the shared token signs in as the first admin; "+
			"give each person their own (frontdesk token add <person>) and remove the shared token")
	}
	return w
}
