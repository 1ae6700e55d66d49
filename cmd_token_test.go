package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/admin"
	"github.com/frontdesk-hq/frontdesk/auth"
)

// tokenConfig writes a config with people ann (admin) and ci (a service)
// and data_dir under a temp dir; it returns the config path and data dir.
func tokenConfig(t *testing.T, extra string) (cfg, dir string) {
	t.Helper()
	root := t.TempDir()
	dir = filepath.Join(root, "data")
	cfg = filepath.Join(root, "config.yaml")
	y := "data_dir: " + dir + "\npeople:\n  - {id: ann, name: Ann, role: admin}\n  - {id: ci, kind: service, permissions: [talk]}\n" + extra
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, dir
}

// lastLine is the last non-empty line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// secretOf runs a command that must succeed and returns its last line.
func secretOf(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runCmd(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return lastLine(out)
}

// grepData fails if any file under dir holds any of secrets.
func grepData(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSocket != 0 {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret %s", p, s)
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walk %s: %v (%d files)", dir, err, n)
	}
}

// The commands on a stopped server, then on a running one over its admin
// socket: tokens printed once on the last line, refused requests exit 2
// with nothing written, the audit trail in the log (the stopped server's
// changes at the next start), no secret in any file.
func TestTokenCommandsStoppedAndRunning(t *testing.T) {
	cfg, dir := tokenConfig(t, "")
	tok1 := secretOf(t, "token", "add", "ann", "-label", "laptop", "-expires", "90d", "-config", cfg)
	if !strings.HasPrefix(tok1, "fd_") {
		t.Fatalf("last line %q is not the token", tok1)
	}
	refusedWritesNothing(t, cfg, filepath.Join(dir, "auth", auth.FileName))
	link := secretOf(t, "login-link", "ann", "-config", cfg)
	code := link[strings.Index(link, "code=")+5:]
	if !strings.Contains(link, "/auth/link?code=fdl_") {
		t.Fatalf("link %q", link)
	}
	grepData(t, dir, tok1, code)

	srv := runServer(t, "-config", cfg)
	sock := filepath.Join(dir, admin.SocketName)
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket: %v %v", st, err)
	}
	tok2 := secretOf(t, "token", "add", "ann", "-label", "phone", "-config", cfg)
	if _, err := runCmd(t, "token", "add", "ann", "-label", "phone", "-config", cfg); !errors.As(err, new(*admin.UsageError)) {
		t.Fatalf("duplicate over the socket: %v", err)
	}
	out, err := runCmd(t, "login-link", "ann", "-config", cfg)
	if host := strings.TrimPrefix(srv.url, "http://"); err != nil || !strings.Contains(lastLine(out), "http://"+host+"/auth/link?code=fdl_") {
		t.Fatalf("login-link on the running server at %s: %v\n%s", srv.url, err, out)
	}
	code2 := lastLine(out)[strings.Index(lastLine(out), "code=")+5:]
	out, err = runCmd(t, "token", "list", "-config", cfg)
	if err != nil || !strings.Contains(out, "laptop") || !strings.Contains(out, "phone") || !strings.Contains(out, "link") {
		t.Fatalf("list %v:\n%s", err, out)
	}
	if _, err := runCmd(t, "token", "revoke", "ann", "laptop", "-config", cfg); err != nil {
		t.Fatal(err)
	}
	grepData(t, dir, tok1, tok2, code, code2)
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("admin socket left behind: %v", err)
	}
	grepData(t, dir, tok1, tok2, code, code2)

	// The running server wrote through: the stopped store has it.
	f, err := auth.OpenFile(filepath.Join(dir, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := auth.New(f, nil)
	if _, ok := s.Check(tok1, auth.KindToken); ok {
		t.Fatal("revoked token still opens")
	}
	if c, ok := s.Check(tok2, auth.KindToken); !ok || c.Label != "phone" {
		t.Fatal("token added while running does not open")
	}
	m, _ := s.Meta()
	if len(m.Pending) != 0 || len(m.People) != 2 {
		t.Fatalf("meta after the run: %+v", m)
	}

	// The audit trail: the stopped server's changes (by cli), the people
	// (by config), the running server's.
	wantAudit(t, dir, `"action":"token_added","person":"ann","by":"cli","label":"laptop"`,
		`"action":"link_issued","person":"ann","by":"cli"`,
		`"action":"added","person":"ann","by":"config","role":"admin"`,
		`"action":"added","person":"ci","by":"config"`,
		`"action":"token_added","person":"ann","by":"cli","label":"phone"`,
		`"action":"link_issued","person":"ann","by":"cli"`,
		`"action":"token_revoked","person":"ann","by":"cli","label":"laptop"`)
}

// wantAudit checks the chat log in dir holds each of want and no other
// person_changed event.
func wantAudit(t *testing.T, dir string, want ...string) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(dir, "chat_history.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(log), w) {
			t.Errorf("chat log lacks %s", w)
		}
	}
	if n := strings.Count(string(log), `"person_changed"`); n != len(want) {
		t.Errorf("chat log has %d person_changed events, want %d:\n%s", n, len(want), log)
	}
}

// refusedWritesNothing runs refused requests on a stopped server: each is
// a usage error (exit 2) and leaves the credentials file as it was.
func refusedWritesNothing(t *testing.T, cfg, credFile string) {
	t.Helper()
	before, err := os.ReadFile(credFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"token", "add", "ann", "-label", "laptop"}, // duplicate label
		{"token", "add", "nobody"},                  // unknown person
		{"token", "add", "ann", "-expires", "soon"}, // bad -expires
		{"token", "add", "ann", "-expires", "-3d"},  // bad -expires
		{"login-link", "ci"},                        // a service gets no link
		{"token", "revoke", "ann", "desktop"},       // no such label
	} {
		_, err := runCmd(t, append(args, "-config", cfg)...)
		var ue *admin.UsageError
		if !errors.As(err, &ue) || ue.ExitCode() != 2 {
			t.Errorf("%v: err %v, want a usage error (exit 2)", args, err)
		}
		if after, _ := os.ReadFile(credFile); !bytes.Equal(before, after) {
			t.Fatalf("%v changed the credentials file", args)
		}
	}
}

// A changed people list is logged at the next start (by "config"), once.
func TestPeopleChangesLoggedAtStart(t *testing.T) {
	cfg, dir := tokenConfig(t, "")
	srv := runServer(t, "-config", cfg)
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	y := "data_dir: " + dir + "\npeople:\n  - {id: ann, name: Ann, role: member}\n  - {id: bo, role: viewer}\n"
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second start finds nothing new
		srv = runServer(t, "-config", cfg)
		if err := srv.stop(); err != nil {
			t.Fatal(err)
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, "chat_history.ndjson"))
	for _, w := range []string{`"action":"role_changed","person":"ann","by":"config","role":"member"`,
		`"action":"added","person":"bo","by":"config","role":"viewer"`,
		`"action":"removed","person":"ci","by":"config"`} {
		if strings.Count(string(log), w) != 1 {
			t.Errorf("chat log has %s %d times, want once", w, strings.Count(string(log), w))
		}
	}
	if n := strings.Count(string(log), `"person_changed"`); n != 5 {
		t.Errorf("%d person_changed events, want 5 (2 added, then 3 changes)", n)
	}
}

// A stopped cluster node does not write credentials of its own: the
// command says it needs a running node, and writes nothing.
func TestTokenOnStoppedClusterNode(t *testing.T) {
	cfg, dir := tokenConfig(t, "cluster:\n  node: n1\n")
	_, err := runCmd(t, "token", "add", "ann", "-config", cfg)
	if err == nil || !strings.Contains(err.Error(), "needs a running node") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "auth")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a stopped cluster node wrote credentials: %v", err)
	}
}

// A credentials file that is damaged stops the start with its name.
func TestDamagedCredentialsStopStart(t *testing.T) {
	cfg, dir := tokenConfig(t, "")
	if err := os.MkdirAll(filepath.Join(dir, "auth"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "auth", auth.FileName)
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"frontdesk", "-addr", "127.0.0.1:0", "-config", cfg}, func(string) string { return "" },
		strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move it aside") {
		t.Fatalf("err %v", err)
	}
}

// check-config warns, without failing, when people are listed and the
// shared token is still set.
func TestCheckConfigWarnsOfSharedToken(t *testing.T) {
	cfg, _ := tokenConfig(t, "")
	check := func(token string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		getenv := func(k string) string {
			if k == "FRONTDESK_AUTH_TOKEN" {
				return token
			}
			return ""
		}
		if err := run(t.Context(), []string{"frontdesk", "check-config", "-config", cfg}, getenv,
			strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("check-config failed: %v\n%s", err, stderr.String())
		}
		if !strings.HasSuffix(strings.TrimSpace(stdout.String()), "config ok") {
			t.Fatalf("no config ok:\n%s", stdout.String())
		}
		return stdout.String()
	}
	if out := check("a-long-enough-shared-token-1234567890"); !strings.Contains(out, "warning: server.auth_token is set while people are listed") {
		t.Fatalf("no warning:\n%s", out)
	}
	if out := check(""); strings.Contains(out, "warning:") {
		t.Fatalf("a warning without a shared token:\n%s", out)
	}
}
