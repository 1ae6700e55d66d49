package index_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/embed/embedtest"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/benchcorpus"
)

// BenchmarkHybridSearch builds an index of the first 100,000 messages of
// the benchmark corpus with a vector each (the stand-in embedder, 256
// dimensions), then times top-20 hybrid searches (the query's vector
// given: the embeddings server's own time is not in it): p50, p99 and CPU
// per search, and the index's size with and without the vectors. With
// FRONTDESK_BENCH_VECTORS_ALL=1 it also runs on every message of the
// corpus (about 667,000: the corpus has a million events, not a million
// messages), which takes minutes.
func BenchmarkHybridSearch(b *testing.B) {
	sizes := []int{100_000}
	if os.Getenv("FRONTDESK_BENCH_VECTORS_ALL") == "1" {
		sizes = append(sizes, math.MaxInt) // every message of the corpus
	}
	for _, n := range sizes {
		name := "msgs-all"
		if n < math.MaxInt {
			name = "msgs-" + strconv.Itoa(n/1000) + "k"
		}
		b.Run(name, func(b *testing.B) { benchHybrid(b, n) })
	}
}

func benchHybrid(b *testing.B, n int) {
	ctx := context.Background()
	r := history.NewReader(benchcorpus.Path(b))
	dir := b.TempDir()
	path := filepath.Join(dir, index.FileName)
	ix, _, err := index.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	msgs := 0
	for from := int64(1); msgs < n; {
		evs, err := r.Since(from, 4096)
		if err != nil || len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if e.Type == event.User || e.Type == event.Assistant {
				msgs++
			}
		}
		if err := ix.Add(ctx, evs); err != nil {
			b.Fatal(err)
		}
		from = evs[len(evs)-1].Seq + 1
	}
	plain := fileBytes(b, ix, path)
	if ix, _, err = index.Open(path); err != nil {
		b.Fatal(err)
	}
	e := conceptEmbedder{embedtest.DefaultDim}
	start := time.Now()
	if err := ix.EmbedAllForTest(ctx, e); err != nil {
		b.Fatal(err)
	}
	embedTime := time.Since(start)
	withVecs := fileBytes(b, ix, path)
	ix, _, err = index.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	if err := ix.EmbedAllForTest(ctx, e); err != nil { // loads the vectors
		b.Fatal(err)
	}
	queries := []string{"budget review", "dentist appointment tuesday", "kilimanjaro", "meeting notes", "which car did I purchase", "zurich trip"}
	search := func(i int) {
		q := queries[i%len(queries)]
		pq, _ := index.ParseQuery(q)
		vs, _ := e.Embed(ctx, []string{q})
		if _, err := ix.SearchHybrid(ctx, pq, index.Options{Limit: 20}, vs[0]); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		search(i)
		i++
	}
	ds := make([]time.Duration, 120)
	cpu0 := cpuTime(b)
	for i := range ds {
		t := time.Now()
		search(i)
		ds[i] = time.Since(t)
	}
	cpu := cpuTime(b) - cpu0
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(ds[len(ds)*99/100])/1e6, "p99-ms")
	b.ReportMetric(float64(cpu)/float64(len(ds))/1e6, "cpu-ms/search")
	b.ReportMetric(float64(msgs), "msgs")
	b.ReportMetric(float64(plain)/1e6, "index-MB")
	b.ReportMetric(float64(withVecs)/1e6, "index+vectors-MB")
	b.ReportMetric(float64(msgs)/embedTime.Seconds(), "embed+store-msgs/s")
}

// fileBytes closes ix and returns the size of its file after a
// checkpoint (opening and closing it again folds the WAL in).
func fileBytes(b *testing.B, ix *index.Index, path string) int64 {
	ix.Close()
	ix, _, err := index.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	ix.Close()
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}
