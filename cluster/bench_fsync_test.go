package cluster

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/history"
)

// BenchmarkAppendFsync is the other side of BenchmarkAppendR1 and
// BenchmarkAppendR3: the same appends to a single node's chat log with
// session.fsync: always (the ack is the fsync), measured and reported the
// same way.
func BenchmarkAppendFsync(b *testing.B) {
	l, err := history.Open(history.Options{Path: filepath.Join(b.TempDir(), "chat.ndjson"), RotateMB: 64, Fsync: history.FsyncAlways})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var next int64
	ds := make([]time.Duration, 0, benchAppends*b.N)
	b.ResetTimer()
	for range b.N {
		for range benchAppends {
			next++
			e := ev(next, "a chat line of ordinary length, about as long as a short reply")
			start := time.Now()
			if err := l.Append(e); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
	}
	b.StopTimer()
	reportPercentiles(b, ds)
}
