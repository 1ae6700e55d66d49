package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/config"
)

func TestNewLoggerFormats(t *testing.T) {
	tests := []struct {
		format, level string
		logged        []slog.Level
		want          string
	}{
		{"text", "info", []slog.Level{slog.LevelDebug, slog.LevelInfo}, `level=INFO msg=m`},
		{"json", "warn", []slog.Level{slog.LevelInfo, slog.LevelWarn}, `"level":"WARN","msg":"m"`},
		{"text", "debug", []slog.Level{slog.LevelDebug}, `level=DEBUG msg=m`},
		{"json", "error", []slog.Level{slog.LevelWarn, slog.LevelError}, `"level":"ERROR","msg":"m"`},
	}
	for _, tc := range tests {
		t.Run(tc.format+"/"+tc.level, func(t *testing.T) {
			var buf bytes.Buffer
			l := New(config.Log{Format: tc.format, Level: tc.level}, &buf)
			for _, lv := range tc.logged {
				l.Log(context.Background(), lv, "m")
			}
			got := strings.TrimSpace(buf.String())
			if strings.Count(got, "\n") != 0 || !strings.Contains(got, tc.want) {
				t.Fatalf("logged %q, want one line with %q", got, tc.want)
			}
		})
	}
}

func TestRedactor(t *testing.T) {
	var buf bytes.Buffer
	w := newRedactor(&buf, []string{"s3cret-token", "s3cret", `pa"ss\word`})
	for _, line := range []string{
		"token=s3cret-token x\n",
		`err="bad key s3cret-token, and s3cret"` + "\n",
		`{"msg":"pa\"ss\\word"}` + "\n",
		"pa\"ss\\word\n",
	} {
		if n, err := io.WriteString(w, line); n != len(line) || err != nil {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(line))
		}
	}
	got := buf.String()
	for _, secret := range []string{"s3cret", `pa"ss\word`, `pa\"ss\\word`} {
		if strings.Contains(got, secret) {
			t.Errorf("%q survived: %s", secret, got)
		}
	}
	if strings.Count(got, "[REDACTED]") != 5 {
		t.Errorf("got %q, want 5 redactions", got)
	}
	if w := newRedactor(&buf, nil); w != io.Writer(&buf) {
		t.Error("no secrets: want the writer itself")
	}
}

// TestOneLogStream: what libraries write through the standard log package
// ends up in the configured slog handler, redacted, in its format.
func TestOneLogStream(t *testing.T) {
	prevW, prevFlags, prevDefault := log.Writer(), log.Flags(), slog.Default()
	t.Cleanup(func() {
		slog.SetDefault(prevDefault)
		log.SetOutput(prevW)
		log.SetFlags(prevFlags)
	})
	cfg := config.Defaults()
	cfg.Log = config.Log{Format: "json", Level: "info"}
	var buf bytes.Buffer
	Setup(cfg, func(k string) string {
		if k == "FRONTDESK_AUTH_TOKEN" {
			return "TOKEN-9f8e7d6c5b4a3928"
		}
		return ""
	}, &buf)
	log.Printf("websocket: bad origin pattern from TOKEN-9f8e7d6c5b4a3928")
	slog.Warn("from slog's package functions")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
	}
	for _, line := range lines {
		if !json.Valid([]byte(line)) || strings.Contains(line, "TOKEN-") {
			t.Errorf("line %q: want JSON, redacted", line)
		}
	}
}
