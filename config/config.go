// Package config loads frontdesk's configuration: Defaults, then the YAML
// file (unknown keys are errors), then Validate. config.yaml in the
// repository root is the annotated sample and must match Defaults.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/mail"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Config is the whole configuration. Zero values are never used as-is:
// Load starts from Defaults and Resolve fills derived paths.
type Config struct {
	// DataDir holds every file frontdesk writes. Default "data".
	DataDir  string   `yaml:"data_dir"`
	Server   Server   `yaml:"server"`
	Session  Session  `yaml:"session"`
	Agent    Agent    `yaml:"agent"`
	Memory   Memory   `yaml:"memory"`
	Channels Channels `yaml:"channels"`
	MCP      MCP      `yaml:"mcp"`
	Search   Search   `yaml:"search"`
	Log      Log      `yaml:"log"`

	// Attachments: see attachments.go.
	Attachments Attachments `yaml:"attachments"`
	// Schedules: see schedules.go.
	Schedules Schedules `yaml:"schedules"`
	// Cluster: see cluster.go.
	Cluster Cluster `yaml:"cluster"`
}

// MCP configures the Model Context Protocol server (the history tools at
// /mcp).
type MCP struct {
	// Serve mounts /mcp: the history tools (history_search, history_recent,
	// history_range) over MCP streamable HTTP, behind the same token and
	// Origin/Host rules as /api/*. Default false.
	Serve bool `yaml:"serve"`
	// ServeSend adds the send_message tool, which puts a message into the
	// shared conversation (channel "mcp") and returns the reply. Default
	// false; it needs Serve.
	ServeSend bool `yaml:"serve_send"`
	// Servers are the MCP servers whose tools the assistant may use.
	// Default none.
	Servers []MCPServer `yaml:"servers"`
	// ApprovalTimeoutSec denies a call that needs approval when nobody
	// answers within it. Default 300.
	ApprovalTimeoutSec int `yaml:"approval_timeout_sec"`
	// MaxTools caps the tools one model request carries, frontdesk's own
	// (history, schedules) included: the servers' tools past it are left
	// out, in the order of Servers. 1 to 1024; default 128 (OpenAI's limit).
	MaxTools int `yaml:"max_tools"`
}

// MCPServer is one MCP server the assistant uses: a stdio command or a
// streamable HTTP URL.
type MCPServer struct {
	// Name prefixes the server's tools (<name>__<tool>): a lower-case
	// letter, then up to 31 lower-case letters, digits, _ or -; unique.
	Name string `yaml:"name"`
	// Command and Args start a stdio server (in its own process group,
	// stopped with frontdesk). It gets only PATH, HOME and PassEnv from
	// frontdesk's environment.
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	PassEnv []string `yaml:"pass_env"`
	// URL is a streamable HTTP server instead of Command.
	URL string `yaml:"url"`
	// HeadersEnv sends headers whose values come from environment
	// variables: {Authorization: INTRANET_TOKEN}.
	HeadersEnv map[string]string `yaml:"headers_env"`
	// Tools, if not empty, offers only these of the server's tools.
	Tools []string `yaml:"tools"`
	// Confirm lists the tools (globs: "*", "write_*") whose every call a
	// person must approve first, from any door. Default none.
	Confirm []string `yaml:"confirm"`
	// TimeoutSec bounds one tool call. Default 60.
	TimeoutSec int `yaml:"timeout_sec"`
}

// Log configures frontdesk's own log: every line goes through one slog
// handler to stderr (through the console prompt when the REPL runs).
type Log struct {
	// Format is text (key=value lines) or json (one object per line).
	// Default text.
	Format string `yaml:"format"`
	// Level is the least severe level written: debug, info, warn or error.
	// Default info.
	Level string `yaml:"level"`
}

// Server configures the HTTP listener, auth and WebSocket limits.
type Server struct {
	// Addr is the listen address. Default "127.0.0.1:8080".
	Addr string `yaml:"addr"`
	// AuthToken, when set, is required on /ws and /api/*. Prefer AuthTokenEnv.
	AuthToken string `yaml:"auth_token"`
	// AuthTokenEnv names the environment variable holding the token.
	// Default FRONTDESK_AUTH_TOKEN. It wins over AuthToken when set and non-empty.
	AuthTokenEnv string `yaml:"auth_token_env"`
	// AllowedOrigins are extra WebSocket/API origins besides the page's own,
	// as full origins ("https://chat.example.com"). Default none.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// AllowedHosts are extra Host header values accepted besides loopback
	// names and the listen address (DNS-rebinding defence). Default none.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// MaxMessageBytes caps one WebSocket frame and one API body. Default 65536.
	MaxMessageBytes int64 `yaml:"max_message_bytes"`
	// PingIntervalSec is how often idle WebSocket peers are pinged; one that
	// does not answer within WriteTimeoutSec is dropped. Default 30.
	PingIntervalSec int `yaml:"ping_interval_sec"`
	// WriteTimeoutSec bounds writing one frame to a client. Default 10.
	WriteTimeoutSec int `yaml:"write_timeout_sec"`
	// ClientQueue is the number of events buffered per client; a client
	// whose queue fills is dropped (close 1008) and may reconnect. Default 1024.
	ClientQueue int `yaml:"client_queue"`
	// MaxClients caps open WebSocket connections; one more is accepted and
	// closed at once with 1013 "try again later". Default 1000.
	MaxClients int `yaml:"max_clients"`
	// FrameRatePerSec and FrameRateBurst limit the frames each WebSocket
	// client may send (a token bucket: FrameRateBurst at once, then
	// FrameRatePerSec a second); a frame over it is answered with error
	// rate_limited and dropped, the connection stays. 0 per second means no
	// limit. Defaults 2 and 20.
	FrameRatePerSec float64 `yaml:"frame_rate_per_sec"`
	FrameRateBurst  int     `yaml:"frame_rate_burst"`
}

// Session configures the hub and the chat log.
type Session struct {
	// IdleTimeoutSec: quiet seconds before the reset sequence; 0 disables. Default 1800.
	IdleTimeoutSec int `yaml:"idle_timeout_sec"`
	// RetainExchanges is how many user↔assistant exchanges the chat ring
	// keeps (and a reset keeps). Default 20.
	RetainExchanges int `yaml:"retain_exchanges"`
	// ChatLogPath is the chat log. Default <data_dir>/chat_history.ndjson.
	ChatLogPath string `yaml:"chat_log_path"`
	// LogRotateMB rotates the chat log at this size. Default 5.
	LogRotateMB int `yaml:"log_rotate_mb"`
	// BusyPolicy is reject | queue | interrupt. Default reject.
	BusyPolicy string `yaml:"busy_policy"`
	// Fsync is always | interval | never. Default always.
	Fsync string `yaml:"fsync"`
	// BufferEvents bounds the in-memory history buffer used for replay. Default 5000.
	BufferEvents int `yaml:"buffer_events"`
}

// Agent selects and configures the backend.
type Agent struct {
	// Backend is demo | openai | command. Default demo.
	Backend string  `yaml:"backend"`
	Demo    Demo    `yaml:"demo"`
	OpenAI  OpenAI  `yaml:"openai"`
	Command Command `yaml:"command"`
}

// Demo configures the offline demo agent.
type Demo struct {
	// DelayMS between streamed words. Default 30; 0 streams at once.
	DelayMS int `yaml:"delay_ms"`
}

// OpenAI configures the openai backend: any OpenAI-compatible chat
// completions endpoint (OpenAI, Ollama, llama.cpp server, vLLM).
type OpenAI struct {
	// BaseURL is the API root, usually ending in /v1, for example
	// http://127.0.0.1:11434/v1 for Ollama. Empty means https://api.openai.com/v1.
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable holding the API key. Default
	// OPENAI_API_KEY. An unset or empty variable sends no key (local servers).
	APIKeyEnv string `yaml:"api_key_env"`
	// Model is the model name the server knows (gpt-4o-mini, llama3.2).
	// Required when backend is openai.
	Model string `yaml:"model"`
	// SystemPrompt opens every request; the turn's notes and the long-term
	// memory follow it. Default: a short frontdesk prompt.
	SystemPrompt string `yaml:"system_prompt"`
	// Temperature is sent when set (0 to 2); null (the default) leaves it to the server.
	Temperature *float64 `yaml:"temperature"`
	// MaxTokens caps one reply; 0 (the default) leaves it to the server.
	MaxTokens int `yaml:"max_tokens"`
	// RequestTimeoutSec is the longest wait for the server to start
	// answering, and between two streamed chunks. Default 120.
	RequestTimeoutSec int `yaml:"request_timeout_sec"`
	// MaxToolSteps bounds the tool rounds (tool calls → results → next
	// request) in one turn; 0 offers no tools. Default 8.
	MaxToolSteps int `yaml:"max_tool_steps"`
	// ContextBudgetTokens bounds the prompt (system prompt, notes, memory,
	// recent conversation, input), estimated as bytes/4; the oldest
	// exchanges are left out first. Default 12000.
	ContextBudgetTokens int `yaml:"context_budget_tokens"`
	// Vision sends image attachments to the model as image content parts;
	// false (the default) only tells it in text that an image was attached.
	// Turn it on for a model that takes images (see README "Attachments").
	Vision bool `yaml:"vision"`
}

// Command configures the command backend: a program run once per turn.
type Command struct {
	// Argv is the program and its arguments; argv[0] is looked up in PATH.
	// Required when backend is command.
	Argv []string `yaml:"argv"`
	// Env is added to the program's minimal environment (PATH and HOME of
	// frontdesk), as NAME: value. Default none. Put no secrets here: use PassEnv.
	Env map[string]string `yaml:"env"`
	// PassEnv names variables copied from frontdesk's own environment (API
	// keys, for instance). Default none.
	PassEnv []string `yaml:"pass_env"`
	// TimeoutSec stops a turn's program after this many seconds; 0 means
	// no limit. Default 300.
	TimeoutSec int `yaml:"timeout_sec"`
}

// Memory configures the memory files.
type Memory struct {
	// Dir holds short_term.md and items.json (the long-term memory
	// items). Default <data_dir>/memory.
	Dir string `yaml:"dir"`
	// ContextTokens bounds the memory items put into each turn's context
	// (about 4 bytes a token), newest and most used first; the rest are
	// found with history_search type:memory. -1 puts all of them in.
	// Default 2000.
	ContextTokens int `yaml:"context_tokens"`
}

// Channels configures the doors into the session besides the web UI.
type Channels struct {
	Console Console `yaml:"console"`
	Webhook Webhook `yaml:"webhook"`
	Email   Email   `yaml:"email"`
}

// Console configures the terminal REPL (not yet available).
type Console struct {
	// Enabled is auto | true | false. Default auto.
	Enabled string `yaml:"enabled"`
}

// Webhook configures POST /api/messages.
type Webhook struct {
	// Enabled mounts POST /api/messages. Default true.
	Enabled bool `yaml:"enabled"`
	// RatePerSec and RateBurst limit POST /api/messages for the whole
	// process (a token bucket: RateBurst at once, then RatePerSec a
	// second); past it the answer is 429 with Retry-After. 0 per second
	// means no limit. Defaults 1 and 20.
	RatePerSec float64 `yaml:"rate_per_sec"`
	RateBurst  int     `yaml:"rate_burst"`
}

// Email configures the email channel: mail read over IMAP, replies sent
// over SMTP. See channels/email.
type Email struct {
	// Enabled starts the channel. Default false.
	Enabled bool `yaml:"enabled"`
	// Address is the assistant's own address: the From of replies. Mail
	// from it is never answered. Required when enabled.
	Address string `yaml:"address"`
	// AllowFrom lists who gets an answer: exact addresses
	// ("ana@example.com") or whole domains ("@example.com", no
	// subdomains). Required and non-empty when enabled; mail from anyone
	// else is marked seen and skipped.
	AllowFrom []string `yaml:"allow_from"`
	// MaxBytes: larger mail is not processed (logged, marked seen).
	// Default 1048576 (1 MiB).
	MaxBytes int64 `yaml:"max_bytes"`
	// RatePerHour caps the mails answered per sender in any hour; the
	// excess is marked seen and skipped. 0 means no limit. Default 10.
	RatePerHour int  `yaml:"rate_per_hour"`
	IMAP        IMAP `yaml:"imap"`
	SMTP        SMTP `yaml:"smtp"`
}

// IMAP configures the incoming side of the email channel.
type IMAP struct {
	// Addr is the server's HOST:PORT (993 for tls, 143 for starttls).
	// Required when email is enabled.
	Addr string `yaml:"addr"`
	// TLS is tls | starttls | none; none only for loopback addresses.
	// Default starttls.
	TLS string `yaml:"tls"`
	// Username logs in. Required when email is enabled.
	Username string `yaml:"username"`
	// PasswordEnv names the environment variable holding the password (an
	// app password for Gmail, Fastmail, iCloud). Default FRONTDESK_IMAP_PASSWORD.
	PasswordEnv string `yaml:"password_env"`
	// Mailbox is watched for new mail. Default INBOX.
	Mailbox string `yaml:"mailbox"`
	// Idle waits for new mail with IMAP IDLE when the server offers it;
	// false (or a server without IDLE) polls instead. Default true.
	Idle bool `yaml:"idle"`
	// PollIntervalSec is how often the mailbox is checked without IDLE.
	// Default 60.
	PollIntervalSec int `yaml:"poll_interval_sec"`
}

// SMTP configures the outgoing side of the email channel.
type SMTP struct {
	// Addr is the submission server's HOST:PORT (465 for tls, 587 for
	// starttls). Required when email is enabled.
	Addr string `yaml:"addr"`
	// TLS is tls | starttls | none; none only for loopback addresses.
	// Default starttls.
	TLS string `yaml:"tls"`
	// Username authenticates (PLAIN or LOGIN); empty sends without AUTH
	// (a local relay that trusts this host). Default empty.
	Username string `yaml:"username"`
	// PasswordEnv names the environment variable holding the password.
	// Default FRONTDESK_SMTP_PASSWORD.
	PasswordEnv string `yaml:"password_env"`
}

// Defaults returns the configuration used when no file sets a key.
func Defaults() Config {
	return Config{
		DataDir: "data",
		Server: Server{
			Addr:            "127.0.0.1:8080",
			AuthTokenEnv:    "FRONTDESK_AUTH_TOKEN",
			AllowedOrigins:  []string{},
			AllowedHosts:    []string{},
			MaxMessageBytes: 65536,
			PingIntervalSec: 30,
			WriteTimeoutSec: 10,
			ClientQueue:     1024,
			MaxClients:      1000,
			FrameRatePerSec: 2,
			FrameRateBurst:  20,
		},
		Session: Session{
			IdleTimeoutSec:  1800,
			RetainExchanges: 20,
			LogRotateMB:     5,
			BusyPolicy:      "reject",
			Fsync:           "always",
			BufferEvents:    5000,
		},
		Agent: Agent{
			Backend: "demo",
			Demo:    Demo{DelayMS: 30},
			OpenAI: OpenAI{
				APIKeyEnv:           "OPENAI_API_KEY",
				SystemPrompt:        "You are frontdesk, a helpful assistant in one shared conversation that several people can join from the web, a terminal, email and webhooks. Answer concisely, and say so when you do not know.",
				RequestTimeoutSec:   120,
				MaxToolSteps:        8,
				ContextBudgetTokens: 12000,
			},
			Command: Command{Argv: []string{}, Env: map[string]string{}, PassEnv: []string{}, TimeoutSec: 300},
		},
		Channels: Channels{
			Console: Console{Enabled: "auto"},
			Webhook: Webhook{Enabled: true, RatePerSec: 1, RateBurst: 20},
			Email: Email{
				AllowFrom:   []string{},
				MaxBytes:    1 << 20,
				RatePerHour: 10,
				IMAP: IMAP{TLS: "starttls", PasswordEnv: "FRONTDESK_IMAP_PASSWORD",
					Mailbox: "INBOX", Idle: true, PollIntervalSec: 60},
				SMTP: SMTP{TLS: "starttls", PasswordEnv: "FRONTDESK_SMTP_PASSWORD"},
			},
		},
		Log:    Log{Format: "text", Level: "info"},
		Memory: Memory{ContextTokens: 2000},
		MCP:    MCP{Servers: []MCPServer{}, ApprovalTimeoutSec: 300, MaxTools: 128},
		Search: defaultSearch(),

		Attachments: defaultAttachments(),

		Schedules: scheduleDefaults(),

		Cluster: clusterDefaults(),
	}
}

// Load reads path over Defaults. An empty path, or a missing file when
// optional is true, yields the defaults. The result is not yet validated.
func Load(path string, optional bool) (Config, error) {
	cfg := Defaults()
	if path == "" {
		return cfg, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if optional && errors.Is(err, os.ErrNotExist) {
			return cfg, nil
		}
		return cfg, fmt.Errorf("read config: %w", err)
	}
	if err := Decode(b, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Decode decodes YAML b over cfg. Unknown keys are reported with their full
// dotted path, line and the keys that are allowed there.
func Decode(b []byte, cfg *Config) error {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return err
	}
	if len(root.Content) == 0 {
		return nil // empty file: all defaults
	}
	keys := map[int]string{} // line → dotted key, to name keys in type errors
	if err := checkKeys(root.Content[0], reflect.TypeOf(*cfg), "", keys); err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	err := dec.Decode(cfg)
	var te *yaml.TypeError
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return nil
	case errors.As(err, &te):
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			var line int
			if _, scanErr := fmt.Sscanf(m, "line %d:", &line); scanErr == nil && keys[line] != "" {
				prefix := fmt.Sprintf("line %d:", line)
				m = prefix + " " + keys[line] + ":" + strings.TrimPrefix(m, prefix)
			}
			msgs[i] = m
		}
		return errors.New(strings.Join(msgs, "\n"))
	default:
		return err
	}
}

// checkKeys walks a mapping node against struct type t.
func checkKeys(n *yaml.Node, t reflect.Type, prefix string, keys map[int]string) error {
	if t.Kind() != reflect.Struct || n.Kind != yaml.MappingNode {
		return nil // type mismatches are left to the decoder's message
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		fields[name] = f.Type
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ft, ok := fields[k.Value]
		if !ok {
			known := make([]string, 0, len(fields))
			for name := range fields {
				known = append(known, name)
			}
			sort.Strings(known)
			return fmt.Errorf("line %d: unknown key %q; known keys here: %s",
				k.Line, prefix+k.Value, strings.Join(known, ", "))
		}
		keys[k.Line] = prefix + k.Value
		if err := checkKeys(v, ft, prefix+k.Value+".", keys); err != nil {
			return err
		}
	}
	return nil
}

// Resolve fills paths left empty from DataDir, so that -data moves everything.
func (c *Config) Resolve() {
	if c.Session.ChatLogPath == "" {
		c.Session.ChatLogPath = filepath.Join(c.DataDir, "chat_history.ndjson")
	}
	if c.Memory.Dir == "" {
		c.Memory.Dir = filepath.Join(c.DataDir, "memory")
	}
	c.Cluster.resolve(c.DataDir)
}

// AuthTokenValue returns the effective auth token: the environment variable
// named by AuthTokenEnv when set, else AuthToken.
func (c *Config) AuthTokenValue(getenv func(string) string) string {
	if c.Server.AuthTokenEnv != "" {
		if v := getenv(c.Server.AuthTokenEnv); v != "" {
			return v
		}
	}
	return c.Server.AuthToken
}

// MinAuthTokenChars is the shortest auth token accepted. A token unlocks
// listening beyond loopback, so a short or blank one must not pass.
const MinAuthTokenChars = 16

// CheckAuthToken checks the effective auth token (see AuthTokenValue): none
// at all is fine (loopback only, see main), but one that is set must be at
// least MinAuthTokenChars characters with no white space around it and no
// control characters. The error names where the token came from.
func (c *Config) CheckAuthToken(getenv func(string) string) error {
	source := "server.auth_token"
	if c.Server.AuthTokenEnv != "" && getenv(c.Server.AuthTokenEnv) != "" {
		source = "the " + c.Server.AuthTokenEnv + " environment variable"
	}
	if err := checkToken(c.AuthTokenValue(getenv)); err != nil {
		return fmt.Errorf("auth token from %s: %w", source, err)
	}
	return nil
}

func checkToken(tok string) error {
	if tok == "" {
		return nil
	}
	const fix = "; make one with: openssl rand -hex 16"
	if strings.TrimSpace(tok) != tok {
		return errors.New("it has white space at its start or end (a blank token is no token)" + fix)
	}
	if strings.ContainsFunc(tok, unicode.IsControl) {
		return errors.New("it contains control characters" + fix)
	}
	if n := utf8.RuneCountInString(tok); n < MinAuthTokenChars {
		return fmt.Errorf("it is %d characters long; use at least %d%s", n, MinAuthTokenChars, fix)
	}
	return nil
}

// Validate checks every key and returns all problems at once, each naming
// the key and how to fix it.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.DataDir == "" {
		bad("data_dir", "must not be empty; the default is \"data\"")
	}
	if _, port, err := net.SplitHostPort(c.Server.Addr); err != nil {
		bad("server.addr", "%q is not HOST:PORT (for example 127.0.0.1:8080)", c.Server.Addr)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		bad("server.addr", "port %q is not a port number from 0 to 65535 (0 picks a free one); for example 127.0.0.1:8080", port)
	}
	if err := checkToken(c.Server.AuthToken); err != nil {
		bad("server.auth_token", "%v", err)
	}
	if c.Memory.ContextTokens < 1 && c.Memory.ContextTokens != -1 {
		bad("memory.context_tokens", "%d is not a budget: use a number of tokens from 1, or -1 for all items (default 2000)", c.Memory.ContextTokens)
	}
	if c.Server.MaxMessageBytes < 1024 {
		bad("server.max_message_bytes", "%d is too small; use at least 1024 (default 65536)", c.Server.MaxMessageBytes)
	}
	if c.Server.PingIntervalSec < 1 {
		bad("server.ping_interval_sec", "must be at least 1 (default 30)")
	}
	if c.Server.WriteTimeoutSec < 1 {
		bad("server.write_timeout_sec", "must be at least 1 (default 10)")
	}
	if c.Server.ClientQueue < 16 {
		bad("server.client_queue", "must be at least 16 (default 1024)")
	}
	if c.Server.MaxClients < 1 {
		bad("server.max_clients", "must be at least 1 (default 1000)")
	}
	rate(bad, "server.frame_rate", c.Server.FrameRatePerSec, c.Server.FrameRateBurst, "2 and 20")
	rate(bad, "channels.webhook.rate", c.Channels.Webhook.RatePerSec, c.Channels.Webhook.RateBurst, "1 and 20")
	for i, o := range c.Server.AllowedOrigins {
		if !strings.Contains(o, "://") {
			bad(fmt.Sprintf("server.allowed_origins[%d]", i), "%q must be a full origin such as https://chat.example.com", o)
		}
	}
	if c.Session.IdleTimeoutSec < 0 {
		bad("session.idle_timeout_sec", "must be 0 (disabled) or a positive number of seconds")
	}
	if c.Session.RetainExchanges < 0 {
		bad("session.retain_exchanges", "must not be negative (default 20)")
	}
	if c.Session.LogRotateMB < 1 {
		bad("session.log_rotate_mb", "must be at least 1 (default 5)")
	}
	if c.Session.BufferEvents < 100 {
		bad("session.buffer_events", "must be at least 100 (default 5000)")
	}
	oneOf(bad, "session.busy_policy", c.Session.BusyPolicy, "reject", "queue", "interrupt")
	oneOf(bad, "session.fsync", c.Session.Fsync, "always", "interval", "never")
	oneOf(bad, "agent.backend", c.Agent.Backend, "demo", "openai", "command")
	if c.Agent.Demo.DelayMS < 0 {
		bad("agent.demo.delay_ms", "must not be negative (default 30)")
	}
	c.validateOpenAI(bad)
	c.validateSearch(bad)
	c.validateCommand(bad)
	oneOf(bad, "channels.console.enabled", c.Channels.Console.Enabled, "auto", "true", "false")
	oneOf(bad, "log.format", c.Log.Format, "text", "json")
	oneOf(bad, "log.level", c.Log.Level, "debug", "info", "warn", "error")
	c.validateEmail(bad)
	c.validateMCPServers(bad)
	c.validateAttachments(bad)
	c.validateSchedules(bad)
	c.validateCluster(bad)
	if c.MCP.ApprovalTimeoutSec < 1 || c.MCP.ApprovalTimeoutSec > 86400 {
		bad("mcp.approval_timeout_sec", "%d: use 1 to 86400 seconds (default 300)", c.MCP.ApprovalTimeoutSec)
	}
	if c.MCP.MaxTools < 1 || c.MCP.MaxTools > 1024 {
		bad("mcp.max_tools", "%d: use 1 to 1024 tools a request (default 128)", c.MCP.MaxTools)
	}
	if c.MCP.ServeSend && !c.MCP.Serve {
		bad("mcp.serve_send", "needs mcp.serve: true (send_message is a tool of the /mcp server)")
	}
	return errors.Join(errs...)
}

// validateEmail checks channels.email. The TLS modes are checked always;
// everything else only when the channel is enabled.
func (c *Config) validateEmail(bad badFunc) {
	e := c.Channels.Email
	oneOf(bad, "channels.email.imap.tls", e.IMAP.TLS, "tls", "starttls", "none")
	oneOf(bad, "channels.email.smtp.tls", e.SMTP.TLS, "tls", "starttls", "none")
	if !e.Enabled {
		return
	}
	if a, err := mail.ParseAddress(e.Address); err != nil || a.Address != strings.TrimSpace(e.Address) {
		bad("channels.email.address", "%q is not a plain email address; set it to the assistant's own address, e.g. assistant@example.com", e.Address)
	}
	if len(e.AllowFrom) == 0 {
		bad("channels.email.allow_from", "must list who may email the assistant, e.g. [\"you@example.com\"] or [\"@example.com\"]")
	}
	for i, a := range e.AllowFrom {
		if !validAllow(a) {
			bad(fmt.Sprintf("channels.email.allow_from[%d]", i), "%q is neither an address (you@example.com) nor a domain (@example.com)", a)
		}
	}
	if e.MaxBytes < 1024 || e.MaxBytes > 64<<20 {
		bad("channels.email.max_bytes", "%d is out of range; use 1024 to 67108864 (default 1048576)", e.MaxBytes)
	}
	if e.RatePerHour < 0 {
		bad("channels.email.rate_per_hour", "must be 0 (no limit) or a positive number (default 10)")
	}
	for _, s := range []struct{ key, addr, tls, passEnv string }{
		{"channels.email.imap", e.IMAP.Addr, e.IMAP.TLS, e.IMAP.PasswordEnv},
		{"channels.email.smtp", e.SMTP.Addr, e.SMTP.TLS, e.SMTP.PasswordEnv},
	} {
		host, port, err := net.SplitHostPort(s.addr)
		if err != nil || host == "" || port == "" {
			bad(s.key+".addr", "%q is not HOST:PORT, e.g. imap.example.com:993 or smtp.example.com:587", s.addr)
		} else if s.tls == "none" && !loopbackHost(host) {
			bad(s.key+".tls", "none sends the password in clear text; it is allowed only for loopback addresses, not %q: use tls or starttls", host)
		}
		if s.passEnv != "" && !envName(s.passEnv) {
			bad(s.key+".password_env", "%q is not an environment variable name", s.passEnv)
		}
	}
	if strings.TrimSpace(e.IMAP.Username) == "" {
		bad("channels.email.imap.username", "must be set to the mailbox login (often the full address)")
	}
	if e.IMAP.PasswordEnv == "" {
		bad("channels.email.imap.password_env", "must name the environment variable holding the IMAP password")
	}
	if e.SMTP.Username != "" && e.SMTP.PasswordEnv == "" {
		bad("channels.email.smtp.password_env", "must name the environment variable holding the SMTP password")
	}
	if strings.TrimSpace(e.IMAP.Mailbox) == "" {
		bad("channels.email.imap.mailbox", "must not be empty (default INBOX)")
	}
	if e.IMAP.PollIntervalSec < 5 || e.IMAP.PollIntervalSec > 3600 {
		bad("channels.email.imap.poll_interval_sec", "%d is out of range; use 5 to 3600 (default 60)", e.IMAP.PollIntervalSec)
	}
}

// validAllow accepts "user@domain" or "@domain".
func validAllow(s string) bool {
	if d, ok := strings.CutPrefix(s, "@"); ok {
		if d == "localhost" {
			return true
		}
		return strings.Contains(d, ".") && !strings.ContainsAny(d, "@ <>,;\"\\")
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s
}

// loopbackHost reports whether host names this machine only.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func oneOf(bad func(string, string, ...any), key, v string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	bad(key, "%q is not one of %s", v, strings.Join(allowed, ", "))
}

// rate checks a token bucket's <prefix>_per_sec and <prefix>_burst.
func rate(bad func(string, string, ...any), prefix string, perSec float64, burst int, defaults string) {
	if perSec < 0 || math.IsNaN(perSec) || math.IsInf(perSec, 0) {
		bad(prefix+"_per_sec", "must be 0 (no limit) or a positive number (defaults %s)", defaults)
	}
	if burst < 1 {
		bad(prefix+"_burst", "must be at least 1 (defaults %s)", defaults)
	}
}

// mcpName is what an MCP server may be called: it becomes a tool-name
// prefix, which model APIs restrict.
var mcpName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

func (c *Config) validateMCPServers(bad badFunc) {
	seen := map[string]bool{}
	for i := range c.MCP.Servers {
		s := &c.MCP.Servers[i]
		key := fmt.Sprintf("mcp.servers[%d]", i)
		switch {
		case !mcpName.MatchString(s.Name):
			bad(key+".name", "%q: use a lower-case letter, then up to 31 lower-case letters, digits, _ or -", s.Name)
		case seen[s.Name]:
			bad(key+".name", "%q is used twice; names must be unique", s.Name)
		}
		seen[s.Name] = true
		switch {
		case (s.Command == "") == (s.URL == ""):
			bad(key, "set either command (a stdio server) or url (streamable HTTP), not both or neither")
		case s.URL != "":
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(key+".url", "%q is not an http(s) URL", s.URL)
			}
			if len(s.Args) > 0 || len(s.PassEnv) > 0 {
				bad(key, "args and pass_env go with command, not url")
			}
		default:
			if len(s.HeadersEnv) > 0 {
				bad(key+".headers_env", "goes with url, not command")
			}
		}
		for _, g := range s.Confirm {
			if _, err := path.Match(g, ""); err != nil {
				bad(key+".confirm", "%q is not a valid glob (use *, ?, [a-z])", g)
			}
		}
		for _, v := range s.PassEnv {
			if !envName(v) {
				bad(key+".pass_env", "%q is not an environment variable name", v)
			}
		}
		for h, v := range s.HeadersEnv {
			if !envName(v) {
				bad(key+".headers_env."+h, "%q is not an environment variable name", v)
			}
		}
		if s.TimeoutSec == 0 {
			s.TimeoutSec = 60
		}
		if s.TimeoutSec < 1 || s.TimeoutSec > 3600 {
			bad(key+".timeout_sec", "%d: use 1 to 3600 seconds (default 60)", s.TimeoutSec)
		}
	}
}
