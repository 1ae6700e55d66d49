package index_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/benchcorpus"
)

// The index benchmarks share one build over the 1M-event corpus
// (internal/testkit/benchcorpus), made once per process in a temp dir:
//
//   - build: a new index takes every event but the last 100,000 messages'
//     worth, read from the log with Reader.Since and added in the
//     Follower's batches — messages indexed per second;
//   - catch-up: a Follower opened on that index with the log 100,000
//     messages ahead, timed from NewFollower until a search says the
//     index holds the log's newest seq — as at a start after a crash or
//     an upgrade; and until the check for damage after opening, which
//     runs beside the catch-up, has passed;
//   - size: the index file (after a checkpoint) against the log's bytes.
type builtIndex struct {
	path       string
	logPath    string
	logBytes   int64
	buildMsgs  int64
	buildTime  time.Duration
	catchMsgs  int64
	catchTime  time.Duration
	checkTime  time.Duration // from NewFollower until the check after opening passed
	indexBytes int64
	docs       int64
}

var built struct {
	sync.Once
	b   builtIndex
	err error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.b.path != "" {
		os.RemoveAll(filepath.Dir(built.b.path))
	}
	os.Exit(code)
}

// catchUpMessages is how many messages the log is ahead at the timed start.
const catchUpMessages = 100_000

func buildIndex(b *testing.B) builtIndex {
	logPath := benchcorpus.Path(b)
	built.Do(func() { built.b, built.err = doBuild(b, logPath) })
	if built.err != nil {
		b.Fatal(built.err)
	}
	return built.b
}

func doBuild(b *testing.B, logPath string) (builtIndex, error) {
	ctx := context.Background()
	r := history.NewReader(logPath)
	bi := builtIndex{logPath: logPath}
	parts, err := history.Parts(logPath)
	if err != nil {
		return bi, err
	}
	for _, p := range parts {
		fi, err := os.Stat(p)
		if err != nil {
			return bi, err
		}
		bi.logBytes += fi.Size() // a .gz part counts as it is on disk
	}
	// Where the last catchUpMessages messages start: 2 of every 3 events
	// are messages (a few turns have tool events too), so find it by count.
	all, err := r.Since(1, 0)
	if err != nil {
		return bi, err
	}
	var split, msgs int64
	for i := len(all) - 1; i >= 0; i-- {
		if t := all[i].Type; t == "user" || t == "assistant" {
			msgs++
			if msgs == catchUpMessages {
				split = all[i].Seq
				break
			}
		}
	}
	head := all[:slices.IndexFunc(all, func(e event.Event) bool { return e.Seq >= split })]
	for _, e := range head {
		if e.Type == "user" || e.Type == "assistant" {
			bi.buildMsgs++
		}
	}
	all = nil

	dir, err := os.MkdirTemp("", "frontdesk-bench-index-")
	if err != nil {
		return bi, err
	}
	// Removed by TestMain: the index outlives the benchmark that built it.
	bi.path = filepath.Join(dir, index.FileName)
	ix, _, err := index.Open(bi.path)
	if err != nil {
		return bi, err
	}
	start := time.Now()
	for i := 0; i < len(head); i += 4096 {
		if err := ix.Add(ctx, head[i:min(i+4096, len(head))]); err != nil {
			return bi, err
		}
	}
	bi.buildTime = time.Since(start)
	ix.Close()
	head = nil

	bi.catchMsgs = msgs
	if err := timeStart(ctx, &bi, r); err != nil {
		return bi, err
	}
	// Checkpoint the WAL into the file so its size is the index's.
	ix, _, err = index.Open(bi.path)
	if err != nil {
		return bi, err
	}
	ix.Close()
	for _, p := range []string{bi.path, bi.path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			bi.indexBytes += fi.Size()
		}
	}
	return bi, nil
}

// timeStart opens a Follower on the built index with the log ahead, as at
// a start, and times its catch-up and its check after opening.
func timeStart(ctx context.Context, bi *builtIndex, r *history.Reader) error {
	last := int64(benchcorpus.Events)
	start := time.Now()
	f, err := index.NewFollower(index.FollowerOptions{Path: bi.path, Log: r.Since, LogSeq: last, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	fctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); f.Run(fctx) }()
	defer func() { stop(); <-done }()
	// Caught up when the index holds the log's newest seq; the check
	// after opening (Progress.Checking) follows and may end later.
	for bi.catchTime == 0 || bi.checkTime == 0 {
		res, err := f.Search(ctx, "kilimanjaro", index.Options{})
		if err != nil {
			return err
		}
		if bi.catchTime == 0 && (res.Indexing == nil || res.Indexing.IndexedSeq >= last) {
			bi.catchTime = time.Since(start)
		}
		if bi.checkTime == 0 && (res.Indexing == nil || !res.Indexing.Checking) {
			bi.checkTime = time.Since(start)
		}
	}
	st, err := f.Stats(ctx)
	bi.docs = st.Docs
	return err
}

// BenchmarkIndexBuild reports the build and catch-up rates and the index's
// size (goals: ≥ 20k messages/s; 100k messages caught up in ≤ 5 s; index
// ≤ 1× the log's bytes).
func BenchmarkIndexBuild(b *testing.B) {
	bi := buildIndex(b)
	for b.Loop() {
	}
	b.ReportMetric(float64(bi.buildMsgs)/bi.buildTime.Seconds(), "build-msgs/s")
	b.ReportMetric(bi.catchTime.Seconds(), "catchup-100k-s")
	b.ReportMetric(float64(bi.catchMsgs)/bi.catchTime.Seconds(), "catchup-msgs/s")
	b.ReportMetric(bi.checkTime.Seconds(), "checked-s")
	b.ReportMetric(float64(bi.indexBytes)/1e6, "index-MB")
	b.ReportMetric(float64(bi.logBytes)/1e6, "log-MB")
	b.ReportMetric(float64(bi.indexBytes)/float64(bi.logBytes), "index/log")
	b.ReportMetric(float64(bi.docs), "docs")
}

// BenchmarkIndexSearch times top-20 searches on the built index, warm
// (each query run 200 times after a warm-up): p50 and p99 in ms, and the
// share of messages every term matches (the AND set; "or-fallback" has
// none). The corpus repeats a small vocabulary, so its words are far more
// common than a real conversation's: "common" is a word in more than 10%
// of messages, the worst case, and ranks only its newest RankWindow
// matches (broad).
func BenchmarkIndexSearch(b *testing.B) {
	bi := buildIndex(b)
	ix, err := index.OpenReadOnly(bi.path)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	for _, tc := range []struct{ name, q string }{
		{"two-words", "budget review"},
		{"three-words", "dentist appointment tuesday"},
		{"accented", "zurich trip"},
		{"rare", "kilimanjaro"},
		{"phrase", `"quarterly report"`},
		{"or-fallback", "kilimanjaro xylophone"},
		{"common", "meeting"},
		{"common-two", "meeting notes"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var res index.Result
			for b.Loop() {
				res, err = ix.Search(ctx, tc.q, index.Options{Limit: 20})
				if err != nil {
					b.Fatal(err)
				}
			}
			ds := make([]time.Duration, 200)
			for i := range ds {
				t := time.Now()
				ix.Search(ctx, tc.q, index.Options{Limit: 20})
				ds[i] = time.Since(t)
			}
			slices.Sort(ds)
			matches, err := ix.MatchesForTest(tc.q)
			if err != nil {
				b.Fatal(err)
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(ds[len(ds)/2]), "p50-ms")
			b.ReportMetric(ms(ds[len(ds)*99/100]), "p99-ms")
			b.ReportMetric(float64(len(res.Hits)), "hits")
			b.ReportMetric(100*float64(matches)/float64(bi.docs), "match-%")
			if res.Broad {
				b.ReportMetric(1, "broad")
			}
		})
	}
}
