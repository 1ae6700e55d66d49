package hub

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// sessionFile is data/session.json.
type sessionFile struct {
	SessionID  string    `json:"session_id"`
	Generation int64     `json:"generation"`
	CreatedAt  time.Time `json:"created_at"`
}

// loadSession reads dir/session.json, creating it (and dir, 0700) when it
// does not exist yet.
func loadSession(dir string, now time.Time) (sessionFile, error) {
	path := filepath.Join(dir, "session.json")
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		var s sessionFile
		if err := json.Unmarshal(b, &s); err != nil || s.SessionID == "" {
			return s, fmt.Errorf("read %s: not a session file (%v); move it away to start a new session", path, err)
		}
		return s, nil
	case !errors.Is(err, os.ErrNotExist):
		return sessionFile{}, fmt.Errorf("read session: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return sessionFile{}, fmt.Errorf("create data dir: %w", err)
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails on supported platforms
	s := sessionFile{SessionID: "s-" + hex.EncodeToString(id[:]), Generation: 1, CreatedAt: now.UTC()}
	return s, saveSession(dir, s)
}

func saveSession(dir string, s sessionFile) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "session.json"), append(b, '\n'), 0o600)
}

// AdoptSession makes dir/session.json name the session id (a cluster's,
// the same on every node), so that clients moving between nodes see one
// session. A file that names another session is replaced only when fresh
// (this node's chat log is empty); otherwise the data directory belongs to
// another session and it is an error.
func AdoptSession(dir, id string, created time.Time, fresh bool) error {
	s, err := loadSession(dir, created)
	if err != nil {
		return err
	}
	if s.SessionID == id {
		return nil
	}
	if !fresh {
		return fmt.Errorf("%s holds session %s, not the cluster's %s: this data directory belongs to another desk; give this node an empty one", filepath.Join(dir, "session.json"), s.SessionID, id)
	}
	return saveSession(dir, sessionFile{SessionID: id, Generation: 1, CreatedAt: created.UTC()})
}
