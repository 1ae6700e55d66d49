package index_test

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdisk"
)

// TestDamagedMiddleIsFoundAtOpenAndRebuilt damages pages in the middle of
// a built index, keeping its header (SQLite opens it as usual), and starts
// a follower on it: the check after opening finds the damage, the file is
// set aside, and the index is rebuilt from the log with every hit — no
// search in between answers from the damaged file unmarked.
func TestDamagedMiddleIsFoundAtOpenAndRebuilt(t *testing.T) {
	t.Parallel() // independent: its own data directory
	dir := t.TempDir()
	c := newChatLog(t, dir, 5)
	c.fill(450, func(int) string { return "lilies" })
	c.turn("where is the zeppelin parked", "in the hangar")
	path := filepath.Join(dir, index.FileName)
	f, stop := follower(t, dir, c.seq, nil)
	if res := caughtUp(t, f, "lilies"); len(res.Hits) != c.msgs-2 {
		t.Fatalf("%d hits before the damage, want %d", len(res.Hits), c.msgs-2)
	}
	stop() // closing checkpoints the WAL: every page is in search.db
	testdisk.DamagePages(t, path, 4)

	// The damage is real and Open alone does not see it.
	ro, err := index.OpenReadOnly(path)
	if err != nil {
		t.Fatalf("the header was kept, yet: %v", err)
	}
	if err := ro.Check(context.Background()); !errors.Is(err, index.ErrCorrupt) {
		t.Fatalf("Check on the damaged index: %v, want ErrCorrupt", err)
	}
	ro.Close()

	// Nothing reads the damaged pages but the check (no search yet, no
	// catch-up: the index is level with the log): it alone must find the
	// damage. (A search may read them too, depending on the file's layout,
	// and would find it first — so none runs until the check has spoken.)
	var logs logBuf
	f, _ = followerLog(t, dir, c.seq, nil, &logs)
	logs.waitFor(t, "search index is damaged", 60*time.Second)
	// Searches are marked until the index is rebuilt.
	for {
		res, err := f.Search(context.Background(), "zeppelin", index.Options{})
		if err != nil {
			t.Fatalf("search while checking or rebuilding: %v", err)
		}
		if res.Indexing == nil {
			break
		}
	}
	if res := caughtUp(t, f, "lilies"); len(res.Hits) != c.msgs-2 {
		t.Fatalf("%d hits after the rebuild, want %d\n%s", len(res.Hits), c.msgs-2, logs.String())
	}
	// Found by the check, before any search could read the damage.
	if !regexp.MustCompile(`msg="search index is damaged; rebuilding from the chat log" err=".*check index: `).MatchString(logs.String()) {
		t.Errorf("no warning about the damage the check found in the log:\n%s", logs.String())
	}
	aside, _ := filepath.Glob(path + ".damaged-*")
	if len(aside) != 1 || !strings.Contains(logs.String(), aside[0]) {
		t.Errorf("damaged file kept aside as %v; log:\n%s", aside, logs.String())
	}
}

// TestSoundIndexPassesTheCheck reopens a sound index with the log ahead
// of it: the check after opening passes beside the catch-up and the
// updates that follow, nothing is set aside, and every hit is there.
func TestSoundIndexPassesTheCheck(t *testing.T) {
	t.Parallel() // independent: its own data directory
	dir := t.TempDir()
	c := newChatLog(t, dir, 5)
	c.fill(300, func(int) string { return "lilies" })
	f, stop := follower(t, dir, c.seq, nil)
	caughtUp(t, f, "lilies")
	stop()
	c.fill(100, func(int) string { return "lilies" })
	var logs logBuf
	f, _ = followerLog(t, dir, c.seq, nil, &logs)
	for range 20 { // updates while the check runs
		f.Notify(c.turn("more lilies", "yes, lilies"))
	}
	if res := caughtUp(t, f, "lilies"); len(res.Hits) != c.msgs {
		t.Errorf("%d hits, want %d", len(res.Hits), c.msgs)
	}
	if !strings.Contains(logs.String(), `msg="search index checked for damage: sound"`) || strings.Contains(logs.String(), "damaged") {
		t.Errorf("log:\n%s", logs.String())
	}
	if aside, _ := filepath.Glob(filepath.Join(dir, index.FileName) + ".damaged-*"); len(aside) != 0 {
		t.Errorf("a sound index was set aside: %v", aside)
	}
}
