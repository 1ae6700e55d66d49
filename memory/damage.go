package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// ItemsDamage is what a damaged items.json cost at start: the file was
// renamed aside as it was (items.json.damaged-<time>) and the store
// started empty, to be rebuilt from the chat log's memory_changed events
// (the hub replays them as it starts). Nil when the file was sound.
type ItemsDamage struct {
	// At is when it was found (the start).
	At time.Time `json:"at"`
	// File is the name of the copy kept aside, in the memory directory.
	File string `json:"file"`
	// Problem says what was wrong, in a sentence.
	Problem string `json:"problem"`
}

// Message is the damage in one sentence, for the log and /healthz.
func (d *ItemsDamage) Message() string {
	return "memory items.json was damaged (" + d.Problem + "); kept as " + d.File +
		"; the items were rebuilt from the chat log"
}

// OpenItemsMending is OpenItems for the server: an items.json that cannot
// be read as a store (not JSON, cut short, empty) is not an error but
// damage — it is renamed aside, byte for byte, as
// items.json.damaged-<now>, and the store starts empty at applied seq 0,
// so that the catch-up rebuilds it from the whole chat log. A file of
// another version, or one that cannot be read or renamed, is still an
// error (a newer build's file is not damaged). Offline readers keep
// using OpenItems, which never moves a file.
func OpenItemsMending(dir string, now time.Time) (*Items, *ItemsDamage, error) {
	s, err := OpenItems(dir)
	var dmg *damagedError
	if !errors.As(err, &dmg) {
		return s, nil, err
	}
	path := filepath.Join(dir, ItemsFile)
	base := path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	aside := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Rename(path, aside); err != nil {
		return nil, nil, fmt.Errorf("%v, and could not be kept aside: %w", dmg, err)
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return nil, nil, fmt.Errorf("keep damaged memory items aside: %w", err)
	}
	return &Items{path: path, file: itemsFile{Version: itemsVersion}},
		&ItemsDamage{At: now.UTC(), File: filepath.Base(aside), Problem: dmg.problem}, nil
}

// damagedError is OpenItems' error for a file that is not a readable
// store.
type damagedError struct{ path, problem string }

func (e *damagedError) Error() string {
	return fmt.Sprintf("open memory items: %s is damaged (%s): move it aside and it is rebuilt from the chat log", e.path, e.problem)
}

// readProblem says why b is not readable JSON, in a sentence.
func readProblem(b []byte, err error) string {
	if len(strings.TrimSpace(string(b))) == 0 {
		return "the file is empty"
	}
	return "not readable JSON: " + err.Error()
}
