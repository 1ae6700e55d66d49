package config

import (
	"strings"
	"testing"
)

func TestValidatePeople(t *testing.T) {
	ann := Person{ID: "ann", Name: "Ann", Role: "admin", Emails: []string{"ann@example.com"}}
	checkInvalid(t, []validateCase{
		{"bad id", func(c *Config) { c.People = []Person{{ID: "Ann"}} }, "people[0].id"},
		{"twice", func(c *Config) { c.People = []Person{ann, ann} }, "people[1].id"},
		{"bad role", func(c *Config) { c.People = []Person{{ID: "bo", Role: "boss"}} }, "people[0].role"},
		{"role and permissions", func(c *Config) { c.People = []Person{{ID: "bo", Role: "member", Permissions: []string{"talk"}}} }, "people[0]"},
		{"bad permission", func(c *Config) { c.People = []Person{{ID: "bo", Permissions: []string{"talk", "fly"}}} }, "people[0].permissions[1]"},
		{"bad kind", func(c *Config) { c.People = []Person{{ID: "ci", Kind: "robot"}} }, "people[0].kind"},
		{"bad email", func(c *Config) { c.People = []Person{{ID: "bo", Emails: []string{"Bo <bo@example.com>"}}} }, "people[0].emails[0]"},
		{"shared email", func(c *Config) {
			c.People = []Person{ann, {ID: "bo", Emails: []string{"ANN@example.com"}}}
		}, "people[1].emails[0]"},
		{"bad door", func(c *Config) { c.People = []Person{{ID: "bo", Accounts: map[string]string{"irc": "bo"}}} }, "people[0].accounts.irc (the door)"},
		{"shared account", func(c *Config) {
			c.People = []Person{{ID: "ann", Accounts: map[string]string{"telegram": "@x"}}, {ID: "bo", Accounts: map[string]string{"telegram": "@x"}}}
		}, "people[1].accounts.telegram"},
		{"console person", func(c *Config) { c.People = []Person{ann}; c.Channels.Console.Person = "bo" }, "channels.console.person"},
		{"session days", func(c *Config) { c.Auth.SessionDays = 0 }, "auth.session_days"},
		{"proxy cidr", func(c *Config) {
			c.Auth.TrustedProxy = TrustedProxy{From: []string{"10.0.0.1"}, UserHeader: "Remote-User"}
		}, "auth.trusted_proxy.from[0]"},
		{"proxy no header", func(c *Config) { c.Auth.TrustedProxy.From = []string{"127.0.0.1/32"} }, "auth.trusted_proxy"},
		{"header from nobody", func(c *Config) { c.Auth.TrustedProxy.UserHeader = "Remote-User" }, "auth.trusted_proxy.from"},
		{"oidc issuer", func(c *Config) {
			c.Auth.OIDC = OIDC{Issuer: "accounts.example.com", ClientID: "x", RedirectURL: "https://h/auth/oidc/callback"}
		}, "auth.oidc.issuer"},
		{"oidc client", func(c *Config) {
			c.Auth.OIDC = OIDC{Issuer: "https://a.example.com", RedirectURL: "https://h/auth/oidc/callback"}
		}, "auth.oidc.client_id"},
		{"oidc redirect", func(c *Config) {
			c.Auth.OIDC = OIDC{Issuer: "https://a.example.com", ClientID: "x", RedirectURL: "https://h/callback"}
		}, "auth.oidc.redirect_url"},
		{"oidc new people", func(c *Config) {
			c.Auth.OIDC = OIDC{Issuer: "https://a.example.com", ClientID: "x", RedirectURL: "https://h/auth/oidc/callback", NewPeople: "admin"}
		}, "auth.oidc.new_people"},
	})
}

func TestValidPeople(t *testing.T) {
	c := Defaults()
	c.People = []Person{
		{ID: "ann", Name: "Ann", Role: "admin", Emails: []string{"ann@example.com"}, Accounts: map[string]string{"telegram": "@ann"}},
		{ID: "bo", Permissions: []string{"read", "talk"}},
		{ID: "ci", Kind: "service", Permissions: []string{"talk"}},
	}
	c.Channels.Console.Person = "bo"
	c.Auth.TrustedProxy = TrustedProxy{From: []string{"127.0.0.1/32", "::1/128"}, EmailHeader: "Tailscale-User-Login"}
	c.Auth.OIDC = OIDC{Issuer: "https://a.example.com", ClientID: "x", RedirectURL: "https://h.example.com/auth/oidc/callback", NewPeople: "viewer"}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
}

func TestPeopleWarnings(t *testing.T) {
	env := func(k string) string { return map[string]string{"FRONTDESK_AUTH_TOKEN": "0123456789abcdef"}[k] }
	none := func(string) string { return "" }
	c := Defaults()
	if w := c.PeopleWarnings(env); len(w) != 0 {
		t.Fatalf("no people: got %q, want no warning", w)
	}
	c.People = []Person{{ID: "ann", Role: "admin"}}
	if w := c.PeopleWarnings(none); len(w) != 0 {
		t.Fatalf("people without a shared token: got %q, want no warning", w)
	}
	if w := c.PeopleWarnings(env); len(w) != 1 || !strings.Contains(w[0], "server.auth_token") {
		t.Fatalf("people and a shared token: got %q, want one warning naming server.auth_token", w)
	}
}
