package e2e

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// tokenCmd runs the binary with args and returns stdout's last line, the
// whole stdout and the exit code.
func tokenCmd(t *testing.T, dir string, args ...string) (last, out string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), stdout.String() + stderr.String(), code
}

// noSecretIn fails if a file under dir holds one of secrets.
func noSecretIn(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSocket != 0 {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret %s", p, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The real binary: token add, list, revoke and login-link on a stopped
// server and on a running one (over data_dir/admin.sock), a refused
// request exits 2, no token or link is in any file under data_dir, and
// the changes are person_changed events in the chat log.
func TestTokenCommandsBinary(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := "data_dir: " + data + "\npeople:\n  - {id: ann, name: Ann, role: admin}\n  - {id: bo, role: member}\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tok1, out, code := tokenCmd(t, dir, "token", "add", "ann", "-label", "laptop", "-expires", "30d")
	if code != 0 || !strings.HasPrefix(tok1, "fd_") {
		t.Fatalf("stopped add: exit %d\n%s", code, out)
	}
	if _, out, code := tokenCmd(t, dir, "token", "add", "zed"); code != 2 || !strings.Contains(out, `no person "zed"`) {
		t.Fatalf("unknown person: exit %d\n%s", code, out)
	}
	p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0")
	tok2, out, code := tokenCmd(t, dir, "token", "add", "bo", "-label", "phone")
	if code != 0 || !strings.HasPrefix(tok2, "fd_") {
		t.Fatalf("running add: exit %d\n%s", code, out)
	}
	if _, out, code := tokenCmd(t, dir, "token", "add", "bo", "-label", "phone"); code != 2 || !strings.Contains(out, "already has a token") {
		t.Fatalf("duplicate: exit %d\n%s", code, out)
	}
	link, out, code := tokenCmd(t, dir, "login-link", "bo")
	if code != 0 || !strings.Contains(link, "/auth/link?code=fdl_") {
		t.Fatalf("login-link: exit %d\n%s", code, out)
	}
	secret := link[strings.Index(link, "code=")+5:]
	if _, out, code := tokenCmd(t, dir, "token", "revoke", "ann", "laptop"); code != 0 {
		t.Fatalf("revoke: exit %d\n%s", code, out)
	}
	_, out, code = tokenCmd(t, dir, "token", "list")
	if code != 0 || strings.Contains(out, "laptop") || !strings.Contains(out, "phone") || !strings.Contains(out, "link") {
		t.Fatalf("list after revoke: exit %d\n%s", code, out)
	}
	noSecretIn(t, data, tok1, tok2, secret)
	if _, err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.stderr)
	}
	noSecretIn(t, data, tok1, tok2, secret)
	log, err := os.ReadFile(filepath.Join(data, "chat_history.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"action":"token_added","person":"ann","by":"cli","label":"laptop"`,
		`"action":"token_added","person":"bo","by":"cli","label":"phone"`, `"action":"link_issued","person":"bo"`,
		`"action":"token_revoked","person":"ann","by":"cli","label":"laptop"`} {
		if !strings.Contains(string(log), w) {
			t.Errorf("chat log lacks %s", w)
		}
	}
	_, out, code = tokenCmd(t, dir, "token", "list")
	if code != 0 || strings.Contains(out, "laptop") || !strings.Contains(out, "phone") {
		t.Fatalf("stopped list: exit %d\n%s", code, out)
	}
}
