package web_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The OIDC tests sign in against a real provider: the zitadel example OP
// (github.com/zitadel/oidc/v3/example/server), run on 127.0.0.1 by
// testdata/oidcop with frontdesk's test users and clients. It is built
// once from the module proxy (or the module cache) into
// os.UserCacheDir()/frontdesk-test and reused while testdata/oidcop and
// the version below stay the same.

// zitadelVersion is the zitadel/oidc release the provider is built from.
const zitadelVersion = "v3.52.0"

// buildOIDCOP returns the provider binary, building it if needed; it
// skips the test when Go cannot build it (no module proxy, no cache).
func buildOIDCOP(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "oidcop", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(src, zitadelVersion...))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "frontdesk-test")
	bin := filepath.Join(dir, "oidcop-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	mod := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module oidcop\n\ngo 1.26\n"), 0o644))
	must(os.WriteFile(filepath.Join(mod, "main.go"), src, 0o644))
	must(os.MkdirAll(dir, 0o755))
	goCmd := func(args ...string) {
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("cannot build the zitadel example OpenID provider (%s) — go %s: %v\n%s",
				zitadelVersion, strings.Join(args, " "), err, out)
		}
	}
	goCmd("get", "github.com/zitadel/oidc/v3/example/server/exampleop@"+zitadelVersion,
		"github.com/zitadel/oidc/v3/example/server/storage@"+zitadelVersion)
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	goCmd("build", "-o", tmp, ".")
	must(os.Rename(tmp, bin))
	return bin
}

// startOIDCOP runs the provider with redirect as its clients' only
// redirect URI and returns its issuer. It stops when the test ends.
func startOIDCOP(t *testing.T, redirect string) string {
	t.Helper()
	cmd := exec.Command(buildOIDCOP(t), "-redirect", redirect)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer // read only after Wait
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the provider exits when its stdin closes
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("the provider's log:\n%s", logs.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case s := <-line:
		issuer, ok := strings.CutPrefix(strings.TrimSpace(s), "issuer ")
		if !ok {
			t.Fatalf("the provider did not start: %q", s)
		}
		return issuer
	case <-time.After(30 * time.Second):
		t.Fatal("the provider did not say its issuer within 30 s")
	}
	return ""
}

// userAgent is a person's browser (without the page): a cookie jar, following redirects
// except where stop says (the test looks at, or tampers with, the
// provider's answer there).
type userAgent struct {
	*http.Client
	stop func(*http.Request) bool
}

func newUserAgent(t *testing.T) *userAgent {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &userAgent{Client: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	b.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if b.stop != nil && b.stop(req) {
			return http.ErrUseLastResponse
		}
		if len(via) >= 10 {
			return fmt.Errorf("too many redirects")
		}
		return nil
	}
	return b
}

var loginFormID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// signInAt starts a sign-in at the relying party base, fills the
// provider's login form as username (password "pw") and returns the last
// response, its body read.
func (b *userAgent) signInAt(t *testing.T, base, username string) (*http.Response, string) {
	t.Helper()
	resp, body := b.get(t, base+"/auth/oidc/login")
	m := loginFormID.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("GET /auth/oidc/login: %d at %s, no provider login form:\n%s", resp.StatusCode, resp.Request.URL, body)
	}
	form := url.Values{"id": {m[1]}, "username": {username}, "password": {"pw"}}
	op := resp.Request.URL
	r, err := b.PostForm(op.Scheme+"://"+op.Host+"/login/username", form)
	if err != nil {
		t.Fatal(err)
	}
	return r, readAll(t, r)
}

func (b *userAgent) get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	r, err := b.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	return r, readAll(t, r)
}

func readAll(t *testing.T, r *http.Response) string {
	t.Helper()
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
