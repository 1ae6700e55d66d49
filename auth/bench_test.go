package auth

import (
	"fmt"
	"testing"
)

// BenchmarkCheck is the cost of a token check on the hot path (every
// Bearer request, every cookie request) with 10 and 10,000 credentials
// stored: a SHA-256 of the presented secret, one map lookup, a
// constant-time compare.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("credentials=%d", n), func(b *testing.B) {
			s, err := New(Memory{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			var secret string
			for i := range n {
				sec, _, err := s.Issue(KindToken, fmt.Sprintf("p%d", i%50), fmt.Sprintf("t%d", i), "", 0)
				if err != nil {
					b.Fatal(err)
				}
				if i == n/2 {
					secret = sec
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if _, ok := s.Check(secret, KindToken, KindSession); !ok {
					b.Fatal("check failed")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/check")
		})
	}
}
