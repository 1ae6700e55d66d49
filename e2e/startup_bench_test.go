package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// startupCorpus is a data directory whose chat log holds 1,000,000 events
// (~160 MB in 5 MB parts), made once and reused across runs.
func startupCorpus(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "frontdesk-startup-corpus-v1")
	done := filepath.Join(dir, ".complete")
	if _, err := os.Stat(done); err == nil {
		return dir
	}
	os.RemoveAll(dir)
	start := time.Now()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		b.Fatal(err)
	}
	words := strings.Fields("the meeting with Ana moved to Thursday please remind me about the invoice for the garden project and book a table near the station for four people at eight")
	ts := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
	var seq int64
	for seq < 1_000_000 {
		turn := fmt.Sprint("t", seq+1)
		text := strings.Join(words[int(seq)%7:int(seq)%7+12], " ")
		for _, e := range []event.Event{
			event.New(event.User, turn, ts, event.UserData{Channel: "web", Content: text + "?"}),
			event.New(event.Assistant, turn, ts, event.AssistantData{Content: "Noted: " + text + ". I will keep it in mind and remind you when it matters."}),
			event.New(event.TurnEnd, turn, ts, event.TurnEndData{Status: "completed", DurationMS: 1200}),
		} {
			seq++
			e.Seq = seq
			if err := lg.Append(e); err != nil {
				b.Fatal(err)
			}
		}
		ts = ts.Add(20 * time.Second)
	}
	if err := lg.Close(); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(done, nil, 0o600)
	b.Logf("generated the start-up corpus in %v", time.Since(start).Round(time.Millisecond))
	return dir
}

// BenchmarkStartupToConnected measures, with the 1M-event log, the time
// from starting the binary to the first `connected` frame on /ws.
func BenchmarkStartupToConnected(b *testing.B) {
	if testing.Short() {
		b.Skip("big corpus")
	}
	dir := startupCorpus(b)
	b.ResetTimer()
	var samples []time.Duration
	for range b.N * 5 {
		d, err := startupOnce(dir)
		if err != nil {
			b.Fatal(err)
		}
		samples = append(samples, d)
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(samples[len(samples)-1].Microseconds())/1000, "max-ms")
}

func startupOnce(dir string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	cmd := exec.Command(binary, "-addr", "127.0.0.1:0", "-data", dir)
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	re := regexp.MustCompile(`listening on (http://\S+)`)
	url := ""
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	if url == "" {
		return 0, errors.New("no listening line")
	}
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/ws", nil)
	if err != nil {
		return 0, err
	}
	defer c.CloseNow()
	_, msg, err := c.Read(ctx)
	if err != nil || !strings.Contains(string(msg), `"type":"connected"`) {
		return 0, fmt.Errorf("first frame %s: %v", msg, err)
	}
	return time.Since(start), nil
}
