package web_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the test's own connection to search.db

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdisk"
	"github.com/frontdesk-hq/frontdesk/web"
)

// TestSearchOnIndexDamagedWhileOpen damages search.db under a running
// server: the search that reads a damaged page answers 200, empty and
// marked indexing — never 500 — and the index is rebuilt in the
// background until the same search gives every hit again.
func TestSearchOnIndexDamagedWhileOpen(t *testing.T) {
	dir := t.TempDir()
	logSeq := writeTurns(t, dir, 450)
	path := filepath.Join(dir, index.FileName)
	buildIndex(t, dir, logSeq)

	e := startIn(t, dir, logSeq, web.Options{}, &agent.Demo{})
	search := func() (reply, []float64) {
		r := do(t, request(t, "GET", e.srv.URL+"/api/history/search?q="+url.QueryEscape("lilies")+"&limit=200", ""))
		if r.status != 200 {
			t.Fatalf("search: %d %s", r.status, r.raw)
		}
		var seqs []float64
		hits, _ := r.body["hits"].([]any)
		for _, h := range hits {
			seqs = append(seqs, h.(map[string]any)["seq"].(float64))
		}
		return r, seqs
	}
	// Until the check after opening passes, answers say so.
	var want []float64
	for {
		r, seqs := search()
		if r.body["indexing"] == nil {
			want = seqs
			break
		}
	}
	if len(want) != 200 {
		t.Fatalf("%d hits before the damage, want 200", len(want))
	}

	testdisk.DamagePages(t, path, 4)
	bumpIndex(t, path)
	r, seqs := search()
	if r.body["indexing"] == nil {
		t.Fatalf("search of the damaged index answered unmarked (%d hits): %.300s", len(seqs), r.raw)
	}
	for {
		r, seqs := search()
		if r.body["indexing"] == nil {
			if !slices.Equal(seqs, want) {
				t.Fatalf("after the rebuild %d hits %v…, want %v…", len(seqs), seqs[:min(5, len(seqs))], want[:5])
			}
			break
		}
	}
	if aside, _ := filepath.Glob(path + ".damaged-*"); len(aside) != 1 {
		t.Errorf("damaged index kept aside as %v, want one file", aside)
	}
}

// writeTurns writes n exchanges about lilies into dir's chat log and
// returns the newest seq.
func writeTurns(t *testing.T, dir string, n int) int64 {
	t.Helper()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	t0 := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	var seq int64
	for i := range n {
		turn := fmt.Sprintf("t%d", seq+1)
		for _, e := range []event.Event{
			event.New(event.User, turn, t0.Add(time.Duration(seq)*time.Minute), event.UserData{Channel: event.ChannelWeb, Content: fmt.Sprintf("question %d about the lilies in the garden", i)}),
			event.New(event.Assistant, turn, t0.Add(time.Duration(seq+1)*time.Minute), event.AssistantData{Content: fmt.Sprintf("answer %d: the lilies look fine", i)}),
			event.New(event.TurnEnd, turn, t0.Add(time.Duration(seq+2)*time.Minute), event.TurnEndData{Status: event.StatusCompleted}),
		} {
			seq++
			e.Seq = seq
			if err := lg.Append(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	return seq
}

// buildIndex indexes dir's chat log into search.db and closes it (which
// checkpoints its WAL: every page is in the file).
func buildIndex(t *testing.T, dir string, logSeq int64) {
	t.Helper()
	f, err := index.NewFollower(index.FollowerOptions{Path: filepath.Join(dir, index.FileName),
		Log: history.NewReader(filepath.Join(dir, "chat_history.ndjson")).Since, LogSeq: logSeq, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for {
		res, err := f.Search(ctx, "lilies", index.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Indexing == nil {
			return
		}
	}
}

// bumpIndex commits a write to search.db through a connection of its own,
// as another process would: every connection of the server then drops the
// pages it has cached and reads the file again.
func bumpIndex(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT OR REPLACE INTO meta VALUES('test_bump', '1')`); err != nil {
		t.Fatal(err)
	}
}
