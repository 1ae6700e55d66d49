package email

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// On a cluster the spool is replicated (Options.Replicate) so that the
// node that takes over after a failover goes on from where the last one
// was: a snapshot holds state.json (the cursor, the keys of handled mail)
// and the files of inbox/ (recorded and committed mail) and outbox/
// (replies not yet sent). failed/ stays on the node that gave up.

// snapshot is the replicated form of the spool.
type snapshot struct {
	V     int               `json:"v"`
	State []byte            `json:"state,omitempty"`
	Files map[string][]byte `json:"files"` // "inbox/<key>.json", "inbox/<key>.pending", "outbox/<key>.json"
}

// replicate hands a snapshot of the spool to Options.Replicate. Calls are
// serialised and each takes its snapshot after the change that asked for
// it, so the last one replicated is never older than any change made
// before it was called.
func (c *Channel) replicate() error {
	if c.opts.Replicate == nil {
		return nil
	}
	c.replMu.Lock()
	defer c.replMu.Unlock()
	b, err := snapshotSpool(c.dir)
	if err != nil {
		return fmt.Errorf("snapshot the email spool: %w", err)
	}
	if err := c.opts.Replicate(b); err != nil {
		return fmt.Errorf("replicate the email spool: %w", err)
	}
	return nil
}

// replicated is replicate where a failure only costs work after a
// failover (mail fetched again, answered from the chat log): it is logged.
func (c *Channel) replicated() {
	if err := c.replicate(); err != nil {
		c.log.Warn("email spool not replicated; a new holder would fetch this mail again", "err", err)
	}
}

// SnapshotSpool returns the snapshot of the spool in dataDir/email, as
// Options.Replicate gets it; nil when there is no spool yet.
func SnapshotSpool(dataDir string) ([]byte, error) {
	dir := filepath.Join(dataDir, "email")
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return snapshotSpool(dir)
}

// snapshotSpool reads the spool in dir. The receiver, the worker and the
// sender change it meanwhile: inbox/ is read before outbox/ (a reply is
// written before its mail is removed, so no mail is missed between
// them), and the whole read is done again when a file vanished or the
// listings changed under it.
func snapshotSpool(dir string) ([]byte, error) {
	for range 100 {
		snap, ok, err := readSpool(dir)
		if err != nil {
			return nil, err
		}
		if ok {
			return json.Marshal(snap)
		}
	}
	return nil, errors.New("the spool kept changing while it was read")
}

func readSpool(dir string) (snapshot, bool, error) {
	snap := snapshot{V: 1, Files: map[string][]byte{}}
	st, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return snap, false, err
	}
	snap.State = st
	names, err := spoolNames(dir)
	if err != nil {
		return snap, false, err
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if errors.Is(err, os.ErrNotExist) {
			return snap, false, nil
		}
		if err != nil {
			return snap, false, err
		}
		snap.Files[n] = b
	}
	again, err := spoolNames(dir)
	if err != nil {
		return snap, false, err
	}
	return snap, slices.Equal(names, again), nil
}

// spoolNames lists the replicated files, inbox/ first, as paths relative
// to dir.
func spoolNames(dir string) ([]string, error) {
	var names []string
	for _, sub := range []struct{ dir, suffix string }{{"inbox", ".json"}, {"inbox", ".pending"}, {"outbox", ".json"}} {
		paths, err := filesWith(filepath.Join(dir, sub.dir), sub.suffix)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, p := range paths {
			names = append(names, sub.dir+"/"+filepath.Base(p))
		}
	}
	return names, nil
}

// RestoreSpool makes the spool in dataDir/email what the snapshot b (the
// bytes last given to Options.Replicate, on any node) says: state.json
// and the files of inbox/ and outbox/, each written atomically, and the
// local ones it does not hold removed. Call it before New's channel runs
// (Run reads state.json again).
func RestoreSpool(dataDir string, b []byte) error {
	var snap snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return fmt.Errorf("email spool replica: %w", err)
	}
	if snap.V != 1 {
		return fmt.Errorf("email spool replica: version %d; this build reads only 1", snap.V)
	}
	dir := filepath.Join(dataDir, "email")
	for _, d := range []string{"inbox", "outbox", "failed"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	for _, n := range slices.Sorted(maps.Keys(snap.Files)) {
		sub, base, ok := strings.Cut(n, "/")
		if !ok || (sub != "inbox" && sub != "outbox") || base == "" || strings.ContainsAny(base, `/\`) || strings.HasPrefix(base, ".") {
			return fmt.Errorf("email spool replica: bad file name %q", n)
		}
		if err := atomicfile.Write(filepath.Join(dir, sub, base), snap.Files[n], 0o600); err != nil {
			return err
		}
	}
	local, err := spoolNames(dir)
	if err != nil {
		return err
	}
	for _, n := range local {
		if _, ok := snap.Files[n]; !ok {
			if err := removeFile(filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	if snap.State == nil {
		return removeFile(filepath.Join(dir, "state.json"))
	}
	return atomicfile.Write(filepath.Join(dir, "state.json"), snap.State, 0o600)
}

// reloadState reads state.json again (Run, before the receiver starts:
// on a cluster node it may have been restored since New).
func (s *spool) reloadState() error {
	fresh, err := openSpool(s.dir)
	if err != nil {
		return err
	}
	s.state = fresh.state
	return nil
}
