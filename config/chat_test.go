package config

import "testing"

func TestValidateChat(t *testing.T) {
	checkInvalid(t, []validateCase{
		{"telegram allow", func(c *Config) { c.Channels.Telegram.Allow = []string{"ann smith"} }, "channels.telegram.allow[0]"},
		{"matrix allow", func(c *Config) { c.Channels.Matrix.Allow = []string{"ann"} }, "channels.matrix.allow[0]"},
		{"slack allow", func(c *Config) { c.Channels.Slack.Allow = []string{"ann"} }, "channels.slack.allow[0]"},
		{"telegram token", func(c *Config) { c.Channels.Telegram.Enabled, c.Channels.Telegram.TokenEnv = true, "" }, "channels.telegram.token_env"},
		{"telegram http", func(c *Config) {
			c.Channels.Telegram.Enabled, c.Channels.Telegram.BaseURL = true, "http://bots.example.com"
		}, "channels.telegram.base_url"},
		{"matrix homeserver", func(c *Config) {
			c.Channels.Matrix = Matrix{Enabled: true, UserID: "@bot:example.org", PasswordEnv: "P"}
		}, "channels.matrix.homeserver"},
		{"matrix user", func(c *Config) {
			c.Channels.Matrix = Matrix{Enabled: true, Homeserver: "https://m.example.org", UserID: "bot", PasswordEnv: "P"}
		}, "channels.matrix.user_id"},
		{"matrix secret", func(c *Config) {
			c.Channels.Matrix = Matrix{Enabled: true, Homeserver: "https://m.example.org", UserID: "@bot:example.org"}
		}, "channels.matrix.password_env"},
		{"slack tokens", func(c *Config) { c.Channels.Slack.Enabled, c.Channels.Slack.BotTokenEnv = true, "" }, "channels.slack.bot_token_env"},
		{"people account", func(c *Config) { c.People = []Person{{ID: "bo", Accounts: map[string]string{"slack": "bo"}}} }, "people[0].accounts.slack"},
		{"telegram case", func(c *Config) {
			c.People = []Person{{ID: "ann", Accounts: map[string]string{"telegram": "@Ann"}}, {ID: "bo", Accounts: map[string]string{"telegram": "@ann"}}}
		}, "people[1].accounts.telegram"},
	})
	c := Defaults()
	c.Channels.Telegram = Telegram{Enabled: true, TokenEnv: "T", BaseURL: "http://127.0.0.1:9999", Allow: []string{"@ann", "12345"}}
	c.Channels.Matrix = Matrix{Enabled: true, Homeserver: "http://localhost:8008", UserID: "@bot:localhost", AccessTokenEnv: "M",
		Allow: []string{"@ann:localhost"}, Encryption: true}
	c.Channels.Slack = Slack{Enabled: true, AppTokenEnv: "A", BotTokenEnv: "B", Allow: []string{"U0123ABCD"}}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
}
