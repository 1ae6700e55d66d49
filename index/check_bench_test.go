package index_test

import (
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/index"
)

// BenchmarkIndexOpenCheck times the ways to check the built 1M-corpus
// index for damage at open, each on a fresh connection (the page cache of
// the OS is warm: the index was just built).
func BenchmarkIndexOpenCheck(b *testing.B) {
	bi := buildIndex(b)
	for _, tc := range []struct{ name, q string }{
		{"open-only", ""},
		{"quick_check", "PRAGMA quick_check"},
		{"quick_check-1", "PRAGMA quick_check(1)"},
		{"quick_check-docs", "PRAGMA quick_check(docs)"},
		{"fts5-integrity-check", "INSERT INTO fts(fts) VALUES('integrity-check')"},
		{"integrity_check", "PRAGMA integrity_check(1)"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var took time.Duration
			for b.Loop() {
				start := time.Now()
				ix, err := index.OpenReadOnly(bi.path)
				if err != nil {
					b.Fatal(err)
				}
				if tc.q != "" {
					out, err := ix.RunForTest(tc.q)
					if err != nil || (len(out) > 0 && out[0] != "ok") {
						b.Fatalf("%s: %v %v", tc.q, out, err)
					}
				}
				took += time.Since(start)
				ix.Close()
			}
			b.ReportMetric(took.Seconds()/float64(b.N), "s/open")
		})
	}
}
