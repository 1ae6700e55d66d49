package schedule

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
)

const benchSchedules = 10000

// benchScheduler returns a scheduler (not running) holding n schedules:
// every tenth a one-shot, the rest daily or weekday crons at different
// minutes in a few zones.
func benchScheduler(tb testing.TB, n int) *Scheduler {
	tb.Helper()
	clock := fakeclock.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	s, err := Open(nil, Options{DataDir: tb.TempDir(), Clock: clock, MaxSchedules: n + 1, TZ: time.UTC,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo"}
	for i := range n {
		sp := Spec{Content: fmt.Sprintf("Reminder %d: something to do", i), TZ: zones[i%len(zones)]}
		switch {
		case i%10 == 0:
			sp.InSeconds = int64(60 + i)
		case i%2 == 0:
			sp.Cron = fmt.Sprintf("%d %d * * 1-5", i%60, i%24)
		default:
			sp.Cron = fmt.Sprintf("%d %d * * *", i%60, i%24)
		}
		sc, err := s.build(sp, clock.Now())
		if err != nil {
			tb.Fatal(err)
		}
		s.all[sc.ID] = sc
	}
	return s
}

// BenchmarkNextWake is the scheduler's work after every change: find the
// earliest next run among 10,000 schedules.
func BenchmarkNextWake(b *testing.B) {
	s := benchScheduler(b, benchSchedules)
	b.ResetTimer()
	for b.Loop() {
		if _, ok := s.nextWake(); !ok {
			b.Fatal("nothing due")
		}
	}
}

// BenchmarkNextRun is one schedule's next run (cron, Europe/Berlin): what
// firing or creating a recurring schedule computes.
func BenchmarkNextRun(b *testing.B) {
	cs, err := parseCron("0 9 * * 1-5")
	if err != nil {
		b.Fatal(err)
	}
	loc, _ := time.LoadLocation("Europe/Berlin")
	t := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for b.Loop() {
		if next(cs, t, loc).IsZero() {
			b.Fatal("no next run")
		}
	}
}

// BenchmarkMemory reports the heap 10,000 schedules take (parsed crons
// included), measured once at the start from a clean heap, and the size
// of their schedules.json; the time per op is building the 10,000.
func BenchmarkMemory(b *testing.B) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s := benchScheduler(b, benchSchedules)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if err := s.save(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		b.Fatal(err)
	}
	runtime.KeepAlive(s)
	b.ResetTimer()
	for b.Loop() {
		benchScheduler(b, benchSchedules)
	}
	// After the loop: ResetTimer and Loop drop metrics reported earlier.
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/benchSchedules, "heap-B/schedule")
	b.ReportMetric(float64(fi.Size())/1e6, "file-MB")
}

// BenchmarkCreateWith10k is one more Create when 10,000 exist: the whole
// file is rewritten and synced (atomic write), which dominates.
func BenchmarkCreateWith10k(b *testing.B) {
	s := benchScheduler(b, benchSchedules)
	s.opts.MaxSchedules = 1 << 30
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.create(Spec{Content: "one more", Cron: "0 9 * * *"}); err != nil {
			b.Fatal(err)
		}
	}
}
