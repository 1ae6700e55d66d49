package history_test

import (
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/benchcorpus"
)

// benchCorpusPath returns the benchmark corpus's live file (see
// benchcorpus), generating it if needed.
func benchCorpusPath(b *testing.B) string { return benchcorpus.Path(b) }

// bufioScan reads every byte of the log the way a plain reader would,
// .gz parts decompressed, and counts the lines: Search's yardstick.
func bufioScan(b *testing.B, path string) (lines, size int64) {
	parts, err := history.Parts(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range parts {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		var r io.Reader = f
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(f)
			if err != nil {
				b.Fatal(err)
			}
			r = zr
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			lines++
			size += int64(len(sc.Bytes())) + 1
		}
		if err := sc.Err(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	return lines, size
}

// timeIt runs fn once as a warm-up, then reps times, and returns the
// median duration.
func timeIt(reps int, fn func()) time.Duration {
	fn()
	ds := make([]time.Duration, reps)
	for i := range ds {
		t := time.Now()
		fn()
		ds[i] = time.Since(t)
	}
	slices.Sort(ds)
	return ds[reps/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkBufioScan reads the whole corpus with bufio.Scanner.
func BenchmarkBufioScan(b *testing.B) {
	path := benchCorpusPath(b)
	var lines, size int64
	for b.Loop() {
		lines, size = bufioScan(b, path)
	}
	if lines < benchcorpus.Events {
		b.Fatalf("scanned %d lines, want %d", lines, benchcorpus.Events)
	}
	b.ReportMetric(float64(size)/1e6, "MB")
	b.ReportMetric(ms(timeIt(5, func() { bufioScan(b, path) })), "scan-ms")
}

// BenchmarkRecent20 times Recent(20) with a new Reader for each call, so
// nothing is kept between calls but what the OS keeps: the page cache is
// warm (the live file was just read). It reports percentiles over 1000
// calls. If this process may drop the page cache (root, writable
// /proc/sys/vm/drop_caches), it also reports one truly cold call from disk.
func BenchmarkRecent20(b *testing.B) {
	path := benchCorpusPath(b)
	call := func() {
		evs, _, err := history.NewReader(path).Recent(20)
		if err != nil || len(evs) != 20 {
			b.Fatalf("Recent(20): %d events, %v", len(evs), err)
		}
	}
	cold := time.Duration(-1)
	if dropCaches() == nil {
		t := time.Now()
		call()
		cold = time.Since(t)
	}
	for b.Loop() {
		call()
	}
	ds := make([]time.Duration, 1000)
	for i := range ds {
		t := time.Now()
		call()
		ds[i] = time.Since(t)
	}
	slices.Sort(ds)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(ds[len(ds)/2]), "p50-µs")
	b.ReportMetric(us(ds[len(ds)*99/100]), "p99-µs")
	b.ReportMetric(us(ds[len(ds)-1]), "max-µs")
	if cold >= 0 { // reported last: b.Loop resets metrics
		b.ReportMetric(us(cold), "cold-first-µs")
	}
}

// dropCaches asks Linux to drop the page cache; it fails unless root.
func dropCaches() error {
	f, err := os.OpenFile("/proc/sys/vm/drop_caches", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString("3\n")
	return errors.Join(err, f.Close())
}
