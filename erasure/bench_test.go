package erasure_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/erasure"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/benchcorpus"
)

// BenchmarkErase1M erases one message of the 1M-event corpus
// (internal/testkit/benchcorpus: 5 MiB parts, one of them gzipped),
// copied so the shared corpus stays whole, through Applier.Apply with the
// chat log only: in the gzipped part, in a plain rotated part and in the
// live file. It reports the time of one erase, the bytes and files it
// rewrote, and the log's size for scale. The search index's share (one
// row deleted and a WAL checkpoint) is not in these figures.
func BenchmarkErase1M(b *testing.B) {
	src := filepath.Dir(benchcorpus.Path(b))
	dir := b.TempDir()
	var logBytes int64
	ents, err := os.ReadDir(src)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "chat_history") {
			continue
		}
		n, err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		logBytes += n
	}
	path := filepath.Join(dir, "chat_history.ndjson")
	l, err := history.Open(history.Options{Path: path, RotateMB: 5, Fsync: history.FsyncAlways})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	parts, err := history.Parts(path)
	if err != nil {
		b.Fatal(err)
	}
	where := map[string]string{"live": path, "rotated": parts[len(parts)/2]}
	for _, p := range parts {
		if strings.HasSuffix(p, ".gz") {
			where["gzipped"] = p
		}
	}
	a := &erasure.Applier{Log: l, Logger: slog.New(slog.DiscardHandler)}
	for _, name := range []string{"gzipped", "rotated", "live"} {
		used := 0 // b.Run runs the function again with a larger b.N: erase others
		b.Run(name, func(b *testing.B) {
			targets, err := messagesIn(where[name], used+b.N)
			if err != nil || len(targets) < used+b.N {
				b.Fatalf("%d messages in %s (%v), want %d", len(targets), where[name], err, used+b.N)
			}
			targets, used = targets[used:], used+b.N
			var bytes, files int64
			var took time.Duration
			b.ResetTimer()
			for i := range b.N {
				st, err := a.ApplyStats(context.Background(), event.ErasedOf(targets[i], "bench"))
				if err != nil || !st.Found {
					b.Fatalf("apply %d: %+v %v", targets[i].Seq, st, err)
				}
				bytes += st.Rewritten.Bytes
				files += int64(st.Rewritten.Files)
				took += st.Took
			}
			b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms/erase")
			b.ReportMetric(float64(bytes)/float64(b.N)/(1<<20), "MiB-rewritten/erase")
			b.ReportMetric(float64(files)/float64(b.N), "files/erase")
			b.ReportMetric(float64(logBytes)/(1<<20), "MiB-log")
		})
	}
}

// messagesIn returns up to n user or assistant events of the file at path.
func messagesIn(path string, n int) ([]event.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var out []event.Event
	for sc.Scan() && len(out) < n {
		var e event.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && (e.Type == event.User || e.Type == event.Assistant) {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

func copyFile(from, to string) (int64, error) {
	in, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}
