package index_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
)

// TestEraseLeavesNoBytes erases a message whose word is in no other: the
// search finds it no more, and neither search.db nor its -wal holds the
// word; the other messages are still found. Erasing again, or a seq the
// index does not hold, is no error.
func TestEraseLeavesNoBytes(t *testing.T) {
	var texts []string
	for i := range 200 {
		texts = append(texts, "filler message number "+strings.Repeat("x", i%7)+" about the garden", "ok")
	}
	texts = append(texts, "the wifi password is zanzibarquokka", "noted")
	evs := convo(texts...)
	ix := openIndex(t, evs)
	ctx := context.Background()
	if res := search(t, ix, "zanzibarquokka"); len(res.Hits) != 1 {
		t.Fatalf("before the erase: %d hits, want 1", len(res.Hits))
	}
	var seq int64
	for _, e := range evs {
		if m, ok := e.Message(); ok && strings.Contains(m.Content, "zanzibarquokka") {
			seq = e.Seq
		}
	}
	for range 2 {
		if err := ix.Erase(ctx, seq); err != nil {
			t.Fatalf("Erase(%d): %v", seq, err)
		}
	}
	if err := ix.Erase(ctx, 1<<40); err != nil {
		t.Fatalf("Erase of an unknown seq: %v", err)
	}
	if res := search(t, ix, "zanzibarquokka"); len(res.Hits) != 0 {
		t.Errorf("after the erase: %d hits, want 0", len(res.Hits))
	}
	if res := search(t, ix, "garden"); len(res.Hits) == 0 {
		t.Errorf("the other messages are no longer found")
	}
	for _, f := range []string{ix.Path(), ix.Path() + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(bytes.ToLower(b), []byte("zanzibarquokka")) || bytes.Contains(b, []byte("zanzibarquokk")) {
			t.Errorf("%s still holds the erased word", filepath.Base(f))
		}
	}
}

// BenchmarkIndexErase1M erases messages from the index built over the
// 1M-event corpus (see buildIndex): the FTS5 delete with secure-delete,
// the row and its vector, secure_delete, and the WAL checkpoint
// (TRUNCATE) each erase ends with. It reports the time of one erase and
// the index file's size.
func BenchmarkIndexErase1M(b *testing.B) {
	bi := buildIndex(b)
	ix, _, err := index.Open(bi.path)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	// Messages spread over the indexed part of the log.
	r := history.NewReader(bi.logPath)
	var seqs []int64
	for i := range b.N {
		evs, err := r.Since(int64(1+(i*300_007)%800_000), 8)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range evs {
			if e.Type == event.User || e.Type == event.Assistant {
				seqs = append(seqs, e.Seq)
				break
			}
		}
	}
	b.ResetTimer()
	for _, seq := range seqs {
		if err := ix.Erase(ctx, seq); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if fi, err := os.Stat(bi.path); err == nil {
		b.ReportMetric(float64(fi.Size())/(1<<20), "MiB-index")
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/erase")
}

// TestMemoryChangeLeavesNoBytes: a memory section replaced (an item
// edited or deleted because it quoted an erased message) leaves no trace
// of its old words in search.db or its WAL.
func TestMemoryChangeLeavesNoBytes(t *testing.T) {
	ix := openIndex(t, sample)
	ctx := context.Background()
	t0 := sample[0].TS.Std()
	if err := ix.UpdateMemory(ctx, []index.Doc{{TS: t0, Content: "[m1] the locker code is marmotquartz"}, {TS: t0, Content: "[m2] likes tea"}}); err != nil {
		t.Fatal(err)
	}
	if err := ix.UpdateMemory(ctx, []index.Doc{{TS: t0, Content: "[m2] likes tea"}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ix.Path(), ix.Path() + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("marmotquartz")) {
			t.Errorf("%s still holds the old section's word", filepath.Base(f))
		}
	}
}
