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
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

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
	// People and Auth: see people.go. No people: one implicit person,
	// "owner", with every permission.
	People []Person `yaml:"people"`
	Auth   Auth     `yaml:"auth"`
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

// Defaults returns the configuration used when no file sets a key.
func Defaults() Config {
	c := Config{
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
		Memory: Memory{ContextTokens: 2000, SaveApproval: SaveApprovalUntrusted, MaxItems: DefaultMaxItems},
		MCP:    MCP{Servers: []MCPServer{}, ApprovalTimeoutSec: 300, MaxTools: 128},
		Search: defaultSearch(),

		Attachments: defaultAttachments(),

		Schedules: scheduleDefaults(),

		Cluster: clusterDefaults(),

		People: []Person{},
		Auth:   Auth{SessionDays: 30, TrustedProxy: TrustedProxy{From: []string{}}, OIDC: OIDC{Scopes: []string{"email", "profile"}}},
	}
	c.Channels.Telegram, c.Channels.Matrix, c.Channels.Slack = chatDefaults()
	return c
}

// ForCommand is the config a command runs with: path (config.yaml in the
// working directory, if there is one, when path is empty), then -addr and
// -data when set, resolved and validated.
func ForCommand(path, addr, dataDir string) (Config, error) {
	optional := path == ""
	if optional {
		path = "config.yaml"
	}
	cfg, err := Load(path, optional)
	if err != nil {
		return cfg, err
	}
	if addr != "" {
		cfg.Server.Addr = addr
	}
	if dataDir != "" {
		cfg.DataDir = dataDir
	}
	cfg.Resolve()
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("invalid config:\n%w", err)
	}
	return cfg, nil
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
	c.Memory.validate(bad)
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
	c.validateSession(bad)
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
	c.validateChat(bad)
	c.validateMCPServers(bad)
	c.validateAttachments(bad)
	c.validateSchedules(bad)
	c.validateCluster(bad)
	c.validatePeople(bad)
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
