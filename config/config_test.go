package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSampleMatchesDefaults(t *testing.T) {
	got, err := Load("../config.yaml", false)
	if err != nil {
		t.Fatal(err)
	}
	if want := Defaults(); !reflect.DeepEqual(got, want) {
		t.Fatalf("config.yaml differs from Defaults():\n got %+v\nwant %+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	if cfg, err := Load(missing, true); err != nil || !reflect.DeepEqual(cfg, Defaults()) {
		t.Fatalf("optional missing file: %v", err)
	}
	if _, err := Load(missing, false); err == nil {
		t.Fatal("a missing file named on the command line was accepted")
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown top key", "data_dir: x\nsrever: {}\n", []string{"line 2", `"srever"`, "server"}},
		{"unknown nested key", "server:\n  addr: 127.0.0.1:1\n  adr: x\n", []string{"line 3", `"server.adr"`, "addr"}},
		{"unknown deep key", "channels:\n  email:\n    imap:\n      mailbx: X\n", []string{"line 4", `"channels.email.imap.mailbx"`, "mailbox"}},
		{"wrong type", "session:\n  retain_exchanges: lots\n", []string{"line 2", "session.retain_exchanges", "lots"}},
		{"not yaml", "server: [\n", []string{"yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults()
			err := Decode([]byte(tc.yaml), &cfg)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestDecodeOverridesOnlyWhatIsSet(t *testing.T) {
	cfg := Defaults()
	if err := Decode([]byte("session:\n  busy_policy: queue\nchannels:\n  console:\n    enabled: false\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Session.BusyPolicy != "queue" || cfg.Session.RetainExchanges != 20 || cfg.Channels.Console.Enabled != "false" {
		t.Fatalf("got %+v / %+v", cfg.Session, cfg.Channels.Console)
	}
	empty := Defaults()
	if err := Decode(nil, &empty); err != nil || !reflect.DeepEqual(empty, Defaults()) {
		t.Fatalf("empty file: %v", err)
	}
}

// validateCases are TestValidate's: a change to the defaults, the key its
// error must name.
type validateCase struct {
	name   string
	mutate func(*Config)
	key    string
}

var validateCases = []validateCase{
	{"bad addr", func(c *Config) { c.Server.Addr = "8080" }, "server.addr"},
	{"short auth token", func(c *Config) { c.Server.AuthToken = "s3cret" }, "server.auth_token"},
	{"blank auth token", func(c *Config) { c.Server.AuthToken = "                    " }, "server.auth_token"},
	{"port out of range", func(c *Config) { c.Server.Addr = "127.0.0.1:99999" }, "server.addr"},
	{"negative port", func(c *Config) { c.Server.Addr = "127.0.0.1:-1" }, "server.addr"},
	{"port by name", func(c *Config) { c.Server.Addr = "127.0.0.1:http" }, "server.addr"},
	{"no port", func(c *Config) { c.Server.Addr = "127.0.0.1:" }, "server.addr"},
	{"small frames", func(c *Config) { c.Server.MaxMessageBytes = 10 }, "server.max_message_bytes"},
	{"no mcp tools", func(c *Config) { c.MCP.MaxTools = 0 }, "mcp.max_tools"},
	{"too many mcp tools", func(c *Config) { c.MCP.MaxTools = 5000 }, "mcp.max_tools"},
	{"bad policy", func(c *Config) { c.Session.BusyPolicy = "drop" }, "session.busy_policy"},
	{"bad fsync", func(c *Config) { c.Session.Fsync = "sometimes" }, "session.fsync"},
	{"negative idle", func(c *Config) { c.Session.IdleTimeoutSec = -1 }, "session.idle_timeout_sec"},
	{"rotate zero", func(c *Config) { c.Session.LogRotateMB = 0 }, "session.log_rotate_mb"},
	{"unknown backend", func(c *Config) { c.Agent.Backend = "gpt" }, "agent.backend"},
	{"openai without model", func(c *Config) { c.Agent.Backend = "openai" }, "agent.openai.model"},
	{"openai bad base url", func(c *Config) { c.Agent.OpenAI.BaseURL = "localhost:11434/v1" }, "agent.openai.base_url"},
	{"openai temperature", func(c *Config) { t := 3.0; c.Agent.OpenAI.Temperature = &t }, "agent.openai.temperature"},
	{"openai negative max tokens", func(c *Config) { c.Agent.OpenAI.MaxTokens = -1 }, "agent.openai.max_tokens"},
	{"openai timeout zero", func(c *Config) { c.Agent.OpenAI.RequestTimeoutSec = 0 }, "agent.openai.request_timeout_sec"},
	{"openai tool steps", func(c *Config) { c.Agent.OpenAI.MaxToolSteps = -1 }, "agent.openai.max_tool_steps"},
	{"openai small budget", func(c *Config) { c.Agent.OpenAI.ContextBudgetTokens = 10 }, "agent.openai.context_budget_tokens"},
	{"openai key env", func(c *Config) { c.Agent.OpenAI.APIKeyEnv = "MY KEY" }, "agent.openai.api_key_env"},
	{"embeddings bad base url", func(c *Config) { c.Search.Embeddings.BaseURL = "localhost:11434/v1"; c.Search.Embeddings.Model = "m" }, "search.embeddings.base_url"},
	{"embeddings without model", func(c *Config) { c.Search.Embeddings.BaseURL = "http://127.0.0.1:11434/v1" }, "search.embeddings.model"},
	{"embeddings key env", func(c *Config) { c.Search.Embeddings.APIKeyEnv = "MY KEY" }, "search.embeddings.api_key_env"},
	{"embeddings batch", func(c *Config) { c.Search.Embeddings.Batch = 0 }, "search.embeddings.batch"},
	{"command without argv", func(c *Config) { c.Agent.Backend = "command" }, "agent.command.argv"},
	{"command empty argv0", func(c *Config) { c.Agent.Backend = "command"; c.Agent.Command.Argv = []string{""} }, "agent.command.argv"},
	{"command env name", func(c *Config) { c.Agent.Command.Env = map[string]string{"1BAD": "x"} }, "agent.command.env"},
	{"command pass env", func(c *Config) { c.Agent.Command.PassEnv = []string{"OK", "A=B"} }, "agent.command.pass_env[1]"},
	{"command negative timeout", func(c *Config) { c.Agent.Command.TimeoutSec = -1 }, "agent.command.timeout_sec"},
	{"console", func(c *Config) { c.Channels.Console.Enabled = "yes" }, "channels.console.enabled"},
	{"email bad imap tls", func(c *Config) { c.Channels.Email.IMAP.TLS = "ssl" }, "channels.email.imap.tls"},
	{"email bad smtp tls", func(c *Config) { c.Channels.Email.SMTP.TLS = "yes" }, "channels.email.smtp.tls"},
	{"email without address", func(c *Config) { enableEmail(c); c.Channels.Email.Address = "" }, "channels.email.address"},
	{"email address with name", func(c *Config) { enableEmail(c); c.Channels.Email.Address = "Bot <bot@example.com>" }, "channels.email.address"},
	{"email empty allow_from", func(c *Config) { enableEmail(c); c.Channels.Email.AllowFrom = nil }, "channels.email.allow_from"},
	{"email bad allow_from", func(c *Config) {
		enableEmail(c)
		c.Channels.Email.AllowFrom = []string{"ana@example.com", "example.com"}
	}, "channels.email.allow_from[1]"},
	{"email bad allow domain", func(c *Config) { enableEmail(c); c.Channels.Email.AllowFrom = []string{"@"} }, "channels.email.allow_from[0]"},
	{"email small max_bytes", func(c *Config) { enableEmail(c); c.Channels.Email.MaxBytes = 10 }, "channels.email.max_bytes"},
	{"email negative rate", func(c *Config) { enableEmail(c); c.Channels.Email.RatePerHour = -1 }, "channels.email.rate_per_hour"},
	{"email imap addr", func(c *Config) { enableEmail(c); c.Channels.Email.IMAP.Addr = "imap.example.com" }, "channels.email.imap.addr"},
	{"email smtp addr", func(c *Config) { enableEmail(c); c.Channels.Email.SMTP.Addr = "" }, "channels.email.smtp.addr"},
	{"email imap plaintext remote", func(c *Config) { enableEmail(c); c.Channels.Email.IMAP.TLS = "none" }, "channels.email.imap.tls"},
	{"email smtp plaintext remote", func(c *Config) { enableEmail(c); c.Channels.Email.SMTP.TLS = "none" }, "channels.email.smtp.tls"},
	{"email imap username", func(c *Config) { enableEmail(c); c.Channels.Email.IMAP.Username = "" }, "channels.email.imap.username"},
	{"email imap password env", func(c *Config) { enableEmail(c); c.Channels.Email.IMAP.PasswordEnv = "" }, "channels.email.imap.password_env"},
	{"email smtp password env name", func(c *Config) { enableEmail(c); c.Channels.Email.SMTP.PasswordEnv = "A-B" }, "channels.email.smtp.password_env"},
	{"email mailbox", func(c *Config) { enableEmail(c); c.Channels.Email.IMAP.Mailbox = " " }, "channels.email.imap.mailbox"},
	{"email poll interval", func(c *Config) { enableEmail(c); c.Channels.Email.IMAP.PollIntervalSec = 0 }, "channels.email.imap.poll_interval_sec"},
	{"origin without scheme", func(c *Config) { c.Server.AllowedOrigins = []string{"example.com"} }, "server.allowed_origins[0]"},
	{"empty data dir", func(c *Config) { c.DataDir = "" }, "data_dir"},
	{"log format", func(c *Config) { c.Log.Format = "logfmt" }, "log.format"},
	{"log level", func(c *Config) { c.Log.Level = "verbose" }, "log.level"},
	{"log level case", func(c *Config) { c.Log.Level = "INFO" }, "log.level"},
	{"no clients", func(c *Config) { c.Server.MaxClients = 0 }, "server.max_clients"},
	{"negative frame rate", func(c *Config) { c.Server.FrameRatePerSec = -1 }, "server.frame_rate_per_sec"},
	{"zero frame burst", func(c *Config) { c.Server.FrameRateBurst = 0 }, "server.frame_rate_burst"},
	{"negative webhook rate", func(c *Config) { c.Channels.Webhook.RatePerSec = -0.5 }, "channels.webhook.rate_per_sec"},
	{"zero webhook burst", func(c *Config) { c.Channels.Webhook.RateBurst = 0 }, "channels.webhook.rate_burst"},
	{"unknown save approval", func(c *Config) { c.Memory.SaveApproval = "sometimes" }, "memory.save_approval"},
	{"empty save approval", func(c *Config) { c.Memory.SaveApproval = "" }, "memory.save_approval"},
	{"no memory items", func(c *Config) { c.Memory.MaxItems = 0 }, "memory.max_items"},
	{"too many memory items", func(c *Config) { c.Memory.MaxItems = 1_000_000 }, "memory.max_items"},
}

func TestValidate(t *testing.T) {
	checkInvalid(t, validateCases)
}

// checkInvalid runs cases: each mutation of Defaults must make Validate
// name its key.
func checkInvalid(t *testing.T, tests []validateCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.key+":") {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.key)
			}
		})
	}
}

func TestValidateAddr(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8080", "127.0.0.1:0", "[::1]:1", ":8080", "0.0.0.0:65535", "localhost:443"} {
		c := Defaults()
		c.Server.Addr = addr
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(addr %q) = %v, want nil", addr, err)
		}
	}
}

// enableEmail makes a valid email section.
func enableEmail(c *Config) {
	e := &c.Channels.Email
	e.Enabled = true
	e.Address = "assistant@example.com"
	e.AllowFrom = []string{"ana@example.com", "@example.org"}
	e.IMAP.Addr = "imap.example.com:993"
	e.IMAP.TLS = "tls"
	e.IMAP.Username = "assistant@example.com"
	e.SMTP.Addr = "smtp.example.com:587"
	e.SMTP.Username = "assistant@example.com"
}

func TestValidateEmail(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
	}{
		{"remote servers with tls", func(c *Config) {}},
		{"plaintext on loopback", func(c *Config) {
			c.Channels.Email.IMAP.Addr, c.Channels.Email.IMAP.TLS = "127.0.0.1:1143", "none"
			c.Channels.Email.SMTP.Addr, c.Channels.Email.SMTP.TLS = "localhost:25", "none"
			c.Channels.Email.SMTP.Username = ""
		}},
		{"ipv6 loopback", func(c *Config) { c.Channels.Email.IMAP.Addr, c.Channels.Email.IMAP.TLS = "[::1]:143", "none" }},
		{"no rate limit", func(c *Config) { c.Channels.Email.RatePerHour = 0 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			enableEmail(&c)
			tc.mutate(&c)
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
		})
	}
	// A disabled channel with empty fields is fine (the sample config).
	c := Defaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

func TestResolveDerivesPathsFromDataDir(t *testing.T) {
	c := Defaults()
	c.DataDir = "/srv/fd"
	c.Resolve()
	if c.Session.ChatLogPath != "/srv/fd/chat_history.ndjson" || c.Memory.Dir != "/srv/fd/memory" {
		t.Fatalf("resolved %q, %q", c.Session.ChatLogPath, c.Memory.Dir)
	}
	c = Defaults()
	c.Session.ChatLogPath = "logs/chat.ndjson"
	c.Resolve()
	if c.Session.ChatLogPath != "logs/chat.ndjson" {
		t.Fatalf("explicit path replaced: %q", c.Session.ChatLogPath)
	}
}

func TestCheckAuthToken(t *testing.T) {
	const good = "4f9c2a7e1b3d5f60"
	tests := []struct {
		name, file, env string
		want            []string // in the error; nil: no error
	}{
		{"no token", "", "", nil},
		{"16 characters", "", good, nil},
		{"from the file", good + good, "", nil},
		{"16 characters not bytes", "", "éééééééééééééééé", nil},
		{"white space only", "", "                    ", []string{"FRONTDESK_AUTH_TOKEN", "white space"}},
		{"tab only", "", "\t", []string{"FRONTDESK_AUTH_TOKEN", "white space"}},
		{"trailing newline", "", good + "\n", []string{"FRONTDESK_AUTH_TOKEN", "white space"}},
		{"leading space", "", " " + good, []string{"white space"}},
		{"too short", "", "abc", []string{"FRONTDESK_AUTH_TOKEN", "3 characters", "at least 16", "openssl rand -hex 16"}},
		{"15 characters", "", good[:15], []string{"15 characters"}},
		{"control character", "", good + "\x00", []string{"control"}},
		{"short in the file", "abc", "", []string{"server.auth_token", "at least 16"}},
		{"the variable wins over the file", "abc", good, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			c.Server.AuthToken = tc.file
			err := c.CheckAuthToken(func(k string) string {
				if k == "FRONTDESK_AUTH_TOKEN" {
					return tc.env
				}
				return ""
			})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one mentioning %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestAuthTokenFromEnv(t *testing.T) {
	c := Defaults()
	c.Server.AuthToken = "from-file"
	env := map[string]string{"FRONTDESK_AUTH_TOKEN": "from-env"}
	if got := c.AuthTokenValue(func(k string) string { return env[k] }); got != "from-env" {
		t.Fatalf("token = %q, want from-env", got)
	}
	if got := c.AuthTokenValue(os.Getenv); got != "from-file" && os.Getenv("FRONTDESK_AUTH_TOKEN") == "" {
		t.Fatalf("token = %q, want from-file", got)
	}
}
