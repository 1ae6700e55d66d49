package erasure_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/erasure"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// grepDir lists the files under dir holding word.
func grepDir(t *testing.T, dir, word string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(word)) {
				out = append(out, p)
			}
		}
		return nil
	})
	return out
}

// Apply rids the files of the erased message: the chat log line becomes
// the tombstone, the audit copy too, short_term.md loses the lines quoting
// it, the index its document, the attachment only it referred to goes
// while one another message shares stays. Applying again, or a seq the
// log does not hold, is no error and changes nothing.
func TestApplyRidsTheFiles(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	path := filepath.Join(dir, "chat_history.ndjson")
	l, err := history.Open(history.Options{Path: path, RotateMB: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	store, err := attachments.Open(filepath.Join(dir, "attachments"), 0)
	if err != nil {
		t.Fatal(err)
	}
	only, err := store.Put(strings.NewReader("note: quokkablue"), "only.txt")
	if err != nil {
		t.Fatal(err)
	}
	shared, err := store.Put(strings.NewReader("a shared picture"), "shared.txt")
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	mk := func(seq int64, content string, atts ...event.Attachment) event.Event {
		e := event.New(event.User, "t1", ts, event.UserData{Channel: "web", Content: content, Attachments: atts})
		e.Seq = seq
		return e
	}
	secret := mk(1, "the wifi password is quokkablue", only, shared)
	other := mk(2, "look at this", shared)
	for _, e := range []event.Event{secret, other} {
		if err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	audit := filepath.Join(dir, "audit")
	os.MkdirAll(audit, 0o700)
	b, _ := os.ReadFile(path)
	os.WriteFile(filepath.Join(audit, "2026-11-26T10-00-00.000.ndjson"), b, 0o600)
	mem, err := memory.Open(filepath.Join(dir, "memory"))
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.WriteShortTerm([]event.Event{secret, other}); err != nil {
		t.Fatal(err)
	}
	f, err := index.NewFollower(index.FollowerOptions{Path: filepath.Join(dir, index.FileName), Log: history.NewReader(path).Since, LogSeq: 2})
	if err != nil {
		t.Fatal(err)
	}
	fctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); f.Run(fctx) }()
	defer func() { stop(); <-done }()
	if res, err := f.Search(ctx, "quokkablue", index.Options{}); err != nil || len(res.Hits) != 1 {
		t.Fatalf("before: %v hits, %v", res.Hits, err)
	}

	sharedStore := &fileEraser{}
	a := &erasure.Applier{Log: l, AuditDir: audit, Index: f, Attachments: store, Memory: mem, Shared: sharedStore}
	d := event.ErasedOf(secret, "web")
	st, err := a.ApplyStats(ctx, d)
	if err != nil || !st.Found || st.Rewritten.Files != 2 || st.Attachments != 1 || st.Memory != 1 {
		t.Fatalf("Apply = %+v, %v; want found, 2 files rewritten, 1 attachment, 1 memory file", st, err)
	}
	if held := grepDir(t, dir, "quokkablue"); len(held) != 0 {
		t.Errorf("after Apply these files hold the word: %v", held)
	}
	if _, err := store.Stat(shared.SHA256); err != nil {
		t.Errorf("the attachment another message shares was removed: %v", err)
	}
	if got := strings.Join(sharedStore.erased, " "); got != only.SHA256 {
		t.Errorf("the nodes' shared store was asked to erase %q, want only the unshared attachment %s", got, only.SHA256)
	}
	evs, _, _, err := history.NewReader(path).Range(ctx, history.Bound{}, history.Bound{}, 0)
	if err != nil || len(evs) != 2 || !event.IsTombstone(evs[0]) || event.IsTombstone(evs[1]) {
		t.Errorf("the log after Apply: %v, %v", evs, err)
	}
	if res, err := f.Search(ctx, "quokkablue", index.Options{}); err != nil || len(res.Hits) != 0 {
		t.Errorf("after: %v hits, %v", res.Hits, err)
	}
	for _, again := range []event.ErasedData{d, event.ErasedOf(mk(99, "x"), "web")} {
		st, err := a.ApplyStats(ctx, again)
		if err != nil || st.Found || st.Rewritten.Files != 0 {
			t.Errorf("Apply(%d) again = %+v, %v; want nothing found or rewritten", again.Seq, st, err)
		}
	}
}

// fileEraser records what the shared store (a cluster's object store) is
// asked to erase.
type fileEraser struct{ erased []string }

func (f *fileEraser) EraseFile(_ context.Context, sha string) error {
	f.erased = append(f.erased, sha)
	return nil
}
