package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// TestFileKeepsHashesOnly: credentials survive a reopen, the file is 0600
// in a 0700 directory, and no secret is anywhere in it.
func TestFileKeepsHashesOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	f, err := OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, c, err := s.Issue(KindToken, "ann", "laptop", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	link, _, err := s.Issue(KindLink, "ann", "", "", LinkTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddPending(event.PersonChangedData{Action: event.TokenAdded, Person: "ann", Credential: c.ID}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{tok, link} {
		if strings.Contains(string(b), secret) {
			t.Fatalf("secret %q in the file", secret)
		}
	}
	if st, _ := os.Stat(filepath.Join(dir, FileName)); st.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v", st.Mode())
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", st.Mode())
	}
	f2, err := OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := New(f2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s2.Check(tok, KindToken); !ok || got.ID != c.ID {
		t.Fatalf("reopened store does not open the token: %v %v", got, ok)
	}
	m, _ := s2.Meta()
	if len(m.Pending) != 1 || m.Pending[0].Credential != c.ID {
		t.Fatalf("pending %+v", m.Pending)
	}
	if _, err := s2.Revoke(c.ID); err != nil {
		t.Fatal(err)
	}
	f3, _ := OpenFile(dir)
	s3, _ := New(f3, nil)
	if _, ok := s3.Check(tok, KindToken); ok {
		t.Fatal("revoked token opens after a reopen")
	}
}

// TestFileDamagedIsAClearError: a damaged file stops the start with its
// path and what to do, and is left as it was.
func TestFileDamagedIsAClearError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte(`{"credentials": [{"id": "x"`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenFile(dir)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "backup") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"credentials": [{"id": "x"` {
		t.Fatal("damaged file changed")
	}
}

// TestPruneDropsExpired: an expired credential is deleted from the file.
func TestPruneDropsExpired(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f, _ := OpenFile(t.TempDir())
	s, _ := New(f, func() time.Time { return now })
	_, old, _ := s.Issue(KindToken, "ann", "a", "", time.Hour)
	_, keep, _ := s.Issue(KindToken, "ann", "b", "", 0)
	now = now.Add(2 * time.Hour)
	if n, err := s.Prune(); n != 1 || err != nil {
		t.Fatalf("pruned %d, %v", n, err)
	}
	got, _ := f.Load()
	if len(got) != 1 || got[0].ID != keep.ID || got[0].ID == old.ID {
		t.Fatalf("left %+v", got)
	}
}

// TestLockExcludes: a second holder of the lock is refused.
func TestLockExcludes(t *testing.T) {
	dir := t.TempDir()
	unlock, err := Lock(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir, 50*time.Millisecond); err == nil {
		t.Fatal("second lock taken")
	}
	unlock()
	u2, err := Lock(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	u2()
}
