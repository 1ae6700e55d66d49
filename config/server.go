package config

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

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

// validateSession checks the session: block.
func (c *Config) validateSession(bad func(key, format string, args ...any)) {
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
}
