package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/config"
)

// TestRefusesWeakToken: a blank or short token is a start-up error, also
// on loopback, and it never unlocks a public address.
func TestRefusesWeakToken(t *testing.T) {
	tests := []struct {
		name, token, addr string
		wantErr           string
	}{
		{"white space only, public", "                ", "0.0.0.0:0", "white space"},
		{"white space only, loopback", "   ", "127.0.0.1:0", "white space"},
		{"short, public", "abc", "0.0.0.0:0", "at least 16"},
		{"long enough, public", "4f9c2a7e1b3d5f60a8", "0.0.0.0:0", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			getenv := func(k string) string {
				if k == "FRONTDESK_AUTH_TOKEN" {
					return tc.token
				}
				return ""
			}
			err := run(context.Background(), []string{"frontdesk", "check-config", "-config", "config.yaml", "-addr", tc.addr}, getenv,
				strings.NewReader(""), &stdout, &stderr)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("err %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "FRONTDESK_AUTH_TOKEN") {
				t.Fatalf("err %v, want one naming FRONTDESK_AUTH_TOKEN and saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestRunSubcommands(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("session:\n  busy_policy: sometimes\n"), 0o600)
	tests := []struct {
		name    string
		args    []string
		wantOut string
		wantErr string
	}{
		{"version", []string{"version"}, "frontdesk dev", ""},
		{"check-config defaults", []string{"check-config", "-config", "config.yaml"}, "config ok", ""},
		{"check-config bad value", []string{"check-config", "-config", bad}, "", "session.busy_policy"},
		{"check-config port out of range", []string{"check-config", "-config", "config.yaml", "-addr", "127.0.0.1:99999"}, "", "server.addr"},
		{"missing config file", []string{"check-config", "-config", filepath.Join(dir, "none.yaml")}, "", "no such file"},
		{"bad flag", []string{"-nope"}, "", "flag provided but not defined"},
		{"stray argument", []string{"serve"}, "", `unexpected argument "serve"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"frontdesk"}, tc.args...), func(string) string { return "" },
				strings.NewReader(""), &stdout, &stderr)
			if tc.wantErr == "" {
				if err != nil || !strings.Contains(stdout.String(), tc.wantOut) {
					t.Fatalf("err %v, stdout %q; want %q", err, stdout.String(), tc.wantOut)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error()+stderr.String(), tc.wantErr) {
				t.Fatalf("err %v (stderr %q), want it to mention %q", err, stderr.String(), tc.wantErr)
			}
		})
	}
}

// mcp.max_tools counts every built-in tool a turn gets — the history
// tools, memory_save and memory_forget, the schedule tools — before the
// MCP servers share the rest: a request never carries more than the cap
// (it carried 130 with the cap at 128 when the memory tools were left
// out).
func TestMaxToolsCountsEveryBuiltinTool(t *testing.T) {
	cfg := config.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.MCP.Servers = []config.MCPServer{{Name: "x", Command: "true"}}
	cfg.Resolve()
	quiet := slog.New(slog.DiscardHandler)
	getenv := func(string) string { return "" }
	st, err := openStores(cfg, getenv, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.close)
	a, err := wire(cfg, "", getenv, quiet, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	// history_get_recent, history_get_range, history_search, memory_save,
	// memory_forget, and the scheduler's.
	if want := 5 + len(a.sched.Tools()); a.tools.Builtin != want {
		t.Fatalf("mcp.max_tools reserves %d tools for the built-in ones; a turn gets %d", a.tools.Builtin, want)
	}
}

// A public address needs a credential: a shared token, or people (each
// signs in with their own); loopback needs neither.
func TestCheckExposure(t *testing.T) {
	tests := []struct {
		name, addr, token string
		people            []config.Person
		ok                bool
	}{
		{"loopback", "127.0.0.1:8080", "", nil, true},
		{"public, nothing", "0.0.0.0:8080", "", nil, false},
		{"public, shared token", "0.0.0.0:8080", "0123456789abcdef", nil, true},
		{"public, people", "0.0.0.0:8080", "", []config.Person{{ID: "ann", Role: "admin"}}, true},
	}
	for _, tc := range tests {
		cfg := config.Defaults()
		cfg.Server.Addr, cfg.People = tc.addr, tc.people
		if err := checkExposure(cfg, tc.token); (err == nil) != tc.ok {
			t.Errorf("%s: checkExposure = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
