package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Telegram configures the Telegram door (channels/telegram): a bot that
// long-polls the Bot API.
type Telegram struct {
	// Enabled starts the door. Default false.
	Enabled bool `yaml:"enabled"`
	// TokenEnv names the variable holding the bot token from @BotFather.
	// Default FRONTDESK_TELEGRAM_TOKEN.
	TokenEnv string `yaml:"token_env"`
	// BaseURL is the Bot API's address. Default "" (https://api.telegram.org);
	// tests and a self-hosted Bot API server set it.
	BaseURL string `yaml:"base_url"`
	// Allow lists who may talk: numeric user ids ("12345") or @usernames.
	Allow []string `yaml:"allow"`
}

// Matrix configures the Matrix door (channels/matrix).
type Matrix struct {
	Enabled bool `yaml:"enabled"`
	// Homeserver is the client-server API's base URL, e.g.
	// https://matrix.example.org.
	Homeserver string `yaml:"homeserver"`
	// UserID is the bot's account, @frontdesk:example.org.
	UserID string `yaml:"user_id"`
	// PasswordEnv (default FRONTDESK_MATRIX_PASSWORD) or AccessTokenEnv
	// names the variable with the bot's secret; a password logs in once and
	// the device is kept in data_dir/matrix.
	PasswordEnv    string `yaml:"password_env"`
	AccessTokenEnv string `yaml:"access_token_env"`
	// Allow lists the Matrix user ids that may talk; the bot joins the
	// rooms they invite it to.
	Allow []string `yaml:"allow"`
	// Encryption makes end-to-end encrypted rooms work. Default true.
	Encryption bool `yaml:"encryption"`
}

// Slack configures the Slack door (channels/slack): Socket Mode, so no
// public URL is needed.
type Slack struct {
	Enabled bool `yaml:"enabled"`
	// AppTokenEnv names the variable with the app-level token (xapp-…,
	// connections:write). Default FRONTDESK_SLACK_APP_TOKEN.
	AppTokenEnv string `yaml:"app_token_env"`
	// BotTokenEnv names the variable with the bot token (xoxb-…).
	// Default FRONTDESK_SLACK_BOT_TOKEN.
	BotTokenEnv string `yaml:"bot_token_env"`
	// APIURL is the Web API's address. Default "" (https://slack.com/api/);
	// tests set it.
	APIURL string `yaml:"api_url"`
	// Allow lists the Slack user ids (U0123…) that may talk.
	Allow []string `yaml:"allow"`
}

// chatDoors are the doors people[].accounts and allow name accounts of.
var chatDoors = []string{"telegram", "matrix", "slack"}

func chatDefaults() (Telegram, Matrix, Slack) {
	return Telegram{TokenEnv: "FRONTDESK_TELEGRAM_TOKEN", Allow: []string{}},
		Matrix{PasswordEnv: "FRONTDESK_MATRIX_PASSWORD", Allow: []string{}, Encryption: true},
		Slack{AppTokenEnv: "FRONTDESK_SLACK_APP_TOKEN", BotTokenEnv: "FRONTDESK_SLACK_BOT_TOKEN", Allow: []string{}}
}

var (
	telegramAccount = regexp.MustCompile(`^(@[A-Za-z0-9_]{1,32}|[0-9]{1,20})$`)
	matrixUser      = regexp.MustCompile(`^@[a-z0-9._=/+-]+:[A-Za-z0-9.-]+(:[0-9]{1,5})?$`)
	slackUser       = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)
)

// ChatAccountValid says whether acct is an account of door as allow and
// people[].accounts write it, and if not, what one looks like.
func ChatAccountValid(door, acct string) (ok bool, example string) {
	switch door {
	case "telegram":
		return telegramAccount.MatchString(acct), "a numeric user id (12345) or an @username"
	case "matrix":
		return matrixUser.MatchString(acct), "a Matrix user id such as @ann:example.org"
	case "slack":
		return slackUser.MatchString(acct), "a Slack user id such as U0123ABCD"
	}
	return false, "telegram, matrix or slack"
}

// validateChat checks channels.telegram, .matrix and .slack; only enabled
// doors are checked beyond their allow lists.
func (c *Config) validateChat(bad badFunc) {
	t, m, s := c.Channels.Telegram, c.Channels.Matrix, c.Channels.Slack
	allows := []struct {
		door  string
		allow []string
	}{{"telegram", t.Allow}, {"matrix", m.Allow}, {"slack", s.Allow}}
	for _, a := range allows {
		for i, acct := range a.allow {
			if ok, ex := ChatAccountValid(a.door, acct); !ok {
				bad(fmt.Sprintf("channels.%s.allow[%d]", a.door, i), "%q is not %s", acct, ex)
			}
		}
	}
	if t.Enabled {
		envKey(bad, "channels.telegram.token_env", t.TokenEnv, true)
		baseURL(bad, "channels.telegram.base_url", t.BaseURL, false)
	}
	if m.Enabled {
		baseURL(bad, "channels.matrix.homeserver", m.Homeserver, true)
		if !matrixUser.MatchString(m.UserID) {
			bad("channels.matrix.user_id", "%q is not a Matrix user id such as @frontdesk:example.org", m.UserID)
		}
		envKey(bad, "channels.matrix.password_env", m.PasswordEnv, false)
		envKey(bad, "channels.matrix.access_token_env", m.AccessTokenEnv, false)
		if m.PasswordEnv == "" && m.AccessTokenEnv == "" {
			bad("channels.matrix.password_env", "name the variable with the bot's password (or set access_token_env)")
		}
	}
	if s.Enabled {
		envKey(bad, "channels.slack.app_token_env", s.AppTokenEnv, true)
		envKey(bad, "channels.slack.bot_token_env", s.BotTokenEnv, true)
		baseURL(bad, "channels.slack.api_url", s.APIURL, false)
	}
}

func envKey(bad badFunc, key, v string, required bool) {
	switch {
	case v == "" && required:
		bad(key, "must name the environment variable that holds the secret")
	case v != "" && !envName(v):
		bad(key, "%q is not an environment variable name", v)
	}
}

// baseURL checks an http(s) URL; plain http only for loopback hosts.
func baseURL(bad badFunc, key, v string, required bool) {
	if v == "" {
		if required {
			bad(key, "must be the server's URL, e.g. https://matrix.example.org")
		}
		return
	}
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		bad(key, "%q is not an http(s) URL", v)
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		bad(key, "%q sends the token in clear text; http is allowed for loopback addresses only: use https", v)
	case strings.Contains(v, "?") || u.Fragment != "":
		bad(key, "%q has a query or fragment; give the base URL alone", v)
	}
}
