//go:build unix

package index_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/index"
)

// BenchmarkIndexOpenCheck times the ways to check the built 1M-corpus
// index (645,131 messages, 203 MB) for damage at open, each from Open on
// a fresh connection (the OS's page cache is warm: the index was just
// built). Index.Check is quick_check(1): it reads every page and checks
// the b-trees, stopping at the first fault. quick_check(docs) checks the
// documents table alone (not the FTS5 index); integrity_check also
// checks the table indexes and constraints; FTS5's 'integrity-check'
// re-reads every document and compares it with the full-text index.
// Besides the wall clock it reports the process's CPU time (the machine
// may be shared).
func BenchmarkIndexOpenCheck(b *testing.B) {
	bi := buildIndex(b)
	for _, tc := range []struct{ name, q string }{
		{"open-only", ""},
		{"Index.Check", "check"},
		{"quick_check", "PRAGMA quick_check"},
		{"quick_check-docs", "PRAGMA quick_check(docs)"},
		{"fts5-integrity-check", "INSERT INTO fts(fts) VALUES('integrity-check')"},
		{"integrity_check", "PRAGMA integrity_check(1)"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var took, cpu time.Duration
			for b.Loop() {
				start, cpu0 := time.Now(), cpuTime(b)
				ix, _, err := index.Open(bi.path)
				if err != nil {
					b.Fatal(err)
				}
				if tc.q == "check" {
					if err := ix.Check(b.Context()); err != nil {
						b.Fatal(err)
					}
				} else if tc.q != "" {
					out, err := ix.RunForTest(tc.q)
					if err != nil || (len(out) > 0 && out[0] != "ok") {
						b.Fatalf("%s: %v %v", tc.q, out, err)
					}
				}
				took += time.Since(start)
				cpu += cpuTime(b) - cpu0
				ix.Close()
			}
			b.ReportMetric(took.Seconds()/float64(b.N), "s/open")
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/open")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system: on a
// shared machine it says more about a check's cost than the wall clock.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
