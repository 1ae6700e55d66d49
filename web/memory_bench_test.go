package web_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/memory"
	"github.com/frontdesk-hq/frontdesk/web"
)

// BenchmarkMemoryChangeAtCap measures a memory change through the real
// HTTP door when memory holds memory.max_items items (the default, 2000,
// of about 250 characters each, as in issue 28's report): 100 rounds of
// DELETE one item, then POST one (the save that brings memory back to the
// cap), then PUT one. Every change rewrites items.json whole; reported:
// the latency percentiles of the POSTs and PUTs, the bytes of items.json
// (what each change writes, plus one chat-log line), and the process's
// peak RSS (the test binary's, setup included).
func BenchmarkMemoryChangeAtCap(b *testing.B) {
	const capItems = 2000
	const rounds = 100
	e := startMemoryCfg(b, web.Options{}, &agent.Demo{}, hub.Config{MaxMemoryItems: capItems})
	call := func(method, path, body string, want int) string {
		req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			b.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, raw)
		}
		return string(raw)
	}
	text := func(i int) string {
		return fmt.Sprintf(`{"text":"Fact %06d: %s"}`, i, strings.Repeat("the user prefers morning meetings and short notes ", 5))
	}
	idOf := func(raw string) string {
		i := strings.Index(raw, `"id":"`) + 6
		return raw[i : i+strings.Index(raw[i:], `"`)]
	}
	ids := make([]string, 0, capItems+rounds)
	for i := range capItems {
		ids = append(ids, idOf(call("POST", "/api/memory", text(i), 201)))
	}
	call("POST", "/api/memory", text(-1), 409) // full: memory_full
	var post, put []time.Duration
	b.ResetTimer()
	for range b.N {
		post, put = post[:0], put[:0]
		for r := range rounds {
			call("DELETE", "/api/memory/"+ids[0], "", 204)
			ids = ids[1:]
			t0 := time.Now()
			ids = append(ids, idOf(call("POST", "/api/memory", text(capItems+r), 201)))
			post = append(post, time.Since(t0))
			t0 = time.Now()
			call("PUT", "/api/memory/"+ids[len(ids)/2], text(-r), 200)
			put = append(put, time.Since(t0))
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, p int) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)*p/100].Microseconds()) / 1000
	}
	b.ReportMetric(pct(post, 50), "post-p50-ms")
	b.ReportMetric(pct(post, 99), "post-p99-ms")
	b.ReportMetric(pct(put, 50), "put-p50-ms")
	b.ReportMetric(pct(put, 99), "put-p99-ms")
	// startMemoryCfg made the data directory a sibling of a new TempDir.
	matches, _ := filepath.Glob(filepath.Join(b.TempDir(), "..", "*", "memory", memory.ItemsFile))
	var size int64
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil {
			size = max(size, st.Size())
		}
	}
	b.ReportMetric(float64(size), "items.json-bytes/change")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB")
	}
}
