package testdendrite

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the Dendrite release the kit builds: v0.13.8, the last one
// under the Apache-2.0 licence.
const Version = "v0.13.8"

// module is Dendrite's module path; commands are the four binaries built
// from it.
const module = "github.com/matrix-org/dendrite"

var commands = []string{"dendrite", "generate-keys", "generate-config", "create-account"}

// okFile marks a finished build in the cache directory; it is written last,
// so a build killed halfway is redone.
const okFile = "ok"

// binaries is the process-wide result of Binaries: the first test of a test
// binary to need Dendrite builds it (or finds it cached), the others wait.
var binaries struct {
	sync.Mutex
	dir string
}

// CacheDir is where the built binaries are kept between runs:
// os.UserCacheDir()/frontdesk-test/dendrite-v0.13.8 ($XDG_CACHE_HOME or
// ~/.cache on Linux). CI keeps it where the machine keeps that directory.
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("user cache dir: %w", err)
	}
	return filepath.Join(base, "frontdesk-test", "dendrite-"+Version), nil
}

// Binaries returns the directory holding the dendrite, generate-keys,
// generate-config and create-account binaries of Version, building them
// with `go install` from the module proxy the first time on this machine
// (~2–3 min on 2 cores). A lock file next to the cache directory keeps test
// binaries running in parallel from building twice: the others wait for
// the first. It skips the test, saying why, only where the build cannot
// be done here — no go command, no C compiler for cgo's SQLite, no network
// to the module proxy — and fails it there in CI (CI=true) and on any
// other build error. Any test goroutine may call it.
func Binaries(t testing.TB) string {
	t.Helper()
	binaries.Lock()
	defer binaries.Unlock()
	if binaries.dir != "" {
		return binaries.dir
	}
	dir, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if built(dir) {
		binaries.dir = bin
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatalf("dendrite cache: %v", err)
	}
	unlock, err := lockFile(dir+".lock", func() {
		t.Logf("waiting for another test binary that is building Dendrite %s", Version)
	})
	if err != nil {
		t.Fatalf("dendrite cache: %v", err)
	}
	defer unlock()
	// Another test binary may have built it while we waited for the lock.
	if built(dir) {
		binaries.dir = bin
		return bin
	}
	took, err := build(t, dir)
	if err != nil {
		var skip *cannotBuild
		if errors.As(err, &skip) && os.Getenv("CI") == "" {
			t.Skipf("Dendrite %s cannot be built here, so this test does not run: %v", Version, err)
		}
		t.Fatalf("build Dendrite %s: %v", Version, err)
	}
	t.Logf("built Dendrite %s in %s into %s (cached for later runs)", Version, took.Round(time.Second), bin)
	binaries.dir = bin
	return bin
}

// built reports whether dir holds a finished build.
func built(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, okFile)); err != nil {
		return false
	}
	for _, c := range commands {
		if _, err := os.Stat(filepath.Join(dir, "bin", c)); err != nil {
			return false
		}
	}
	return true
}

// cannotBuild is a build that this machine cannot do (as opposed to one
// that went wrong): the caller skips the test outside CI.
type cannotBuild struct{ reason string }

func (e *cannotBuild) Error() string { return e.reason }

// build runs `go install` for the four commands into dir/bin and writes
// dir/ok. The caller holds the lock.
func build(t testing.TB, dir string) (time.Duration, error) {
	t.Helper()
	// go test puts its own GOROOT/bin first on the test binary's PATH.
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return 0, &cannotBuild{"no go command on PATH"}
	}
	env := append(os.Environ(),
		"CGO_ENABLED=1", // Dendrite's SQLite is mattn/go-sqlite3
		"GOWORK=off",
		"GOFLAGS=", // the caller's -mod, -tags or -race are not for Dendrite
	)
	cc, err := goEnv(goCmd, env, "CC")
	if err != nil {
		return 0, err
	}
	if f := strings.Fields(cc); len(f) == 0 {
		return 0, &cannotBuild{"go env CC is empty: no C compiler for cgo (apt-get install gcc)"}
	} else if _, err := exec.LookPath(f[0]); err != nil {
		return 0, &cannotBuild{fmt.Sprintf("no C compiler %q for cgo, which Dendrite's SQLite needs (apt-get install gcc)", f[0])}
	}

	// Built in a directory of its own and moved into place when done, so
	// that a build cut short (a go test -timeout) leaves nothing half-made.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".build-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	args := []string{"install"}
	for _, c := range commands {
		args = append(args, module+"/cmd/"+c+"@"+Version)
	}
	t.Logf("building Dendrite %s (once per machine, a few minutes): go %s", Version, strings.Join(args, " "))
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := d.Deadline(); ok && time.Until(end) < 10*time.Minute {
			t.Logf("the test deadline is %s away and a cold build can take longer: go test -timeout 20m", time.Until(end).Round(time.Second))
		}
	}
	start := time.Now()
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = tmp // outside any module, so go.mod here plays no part
	cmd.Env = append(env, "GOBIN="+filepath.Join(tmp, "bin"))
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		if offline(out) {
			return took, &cannotBuild{fmt.Sprintf("the module proxy is out of reach: %s", tail(out, 600))}
		}
		return took, fmt.Errorf("go install: %w\n%s", err, tail(out, 4000))
	}
	stamp := fmt.Sprintf("dendrite %s built in %s by %s\n", Version, took.Round(time.Millisecond), goCmd)
	if err := os.WriteFile(filepath.Join(tmp, okFile), []byte(stamp), 0o644); err != nil {
		return took, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return took, err
	}
	return took, os.Rename(tmp, dir)
}

// goEnv returns one `go env` value under env.
func goEnv(goCmd string, env []string, key string) (string, error) {
	cmd := exec.Command(goCmd, "env", key)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", key, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// offline reports whether go's output says the network was the problem.
func offline(out []byte) bool {
	for _, s := range []string{
		"dial tcp", "no such host", "connection refused", "network is unreachable",
		"i/o timeout", "TLS handshake timeout", "GOPROXY=off",
		"temporary failure in name resolution",
	} {
		if bytes.Contains(bytes.ToLower(out), bytes.ToLower([]byte(s))) {
			return true
		}
	}
	return false
}

// tail returns the last n bytes of b, for error messages and logs.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = append([]byte("…"), b[len(b)-n:]...)
	}
	return string(b)
}
