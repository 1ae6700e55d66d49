// Package testlog is a slog handler that keeps every record, so that a test
// can count log lines and wait for one instead of sleeping. It is imported
// only by tests.
package testlog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// Line is one record: its level, message and attributes as key=value.
type Line struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func (l Line) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q", l.Level, l.Msg)
	for k, v := range l.Attrs {
		fmt.Fprintf(&b, " %s=%q", k, v)
	}
	return b.String()
}

// Recorder is a slog.Handler keeping every record at every level. It is
// safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	lines   []Line
	changed chan struct{} // closed and replaced at every record
	attrs   []slog.Attr   // from WithAttrs; shared state lives in root
	root    *Recorder
}

// New returns a Recorder and a logger writing to it.
func New() (*Recorder, *slog.Logger) {
	r := &Recorder{changed: make(chan struct{})}
	r.root = r
	return r, slog.New(r)
}

// Enabled implements slog.Handler: every level is kept.
func (r *Recorder) Enabled(context.Context, slog.Level) bool { return true }

// Handle implements slog.Handler.
func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	l := Line{Level: rec.Level, Msg: rec.Message, Attrs: map[string]string{}}
	for _, a := range r.attrs {
		l.Attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		l.Attrs[a.Key] = a.Value.String()
		return true
	})
	root := r.root
	root.mu.Lock()
	root.lines = append(root.lines, l)
	close(root.changed)
	root.changed = make(chan struct{})
	root.mu.Unlock()
	return nil
}

// WithAttrs implements slog.Handler.
func (r *Recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Recorder{root: r.root, attrs: append(append([]slog.Attr(nil), r.attrs...), attrs...)}
}

// WithGroup implements slog.Handler; groups are flattened.
func (r *Recorder) WithGroup(string) slog.Handler { return r }

// Lines returns the records that match, in order (all with a nil match).
func (r *Recorder) Lines(match func(Line) bool) []Line {
	r.root.mu.Lock()
	defer r.root.mu.Unlock()
	var out []Line
	for _, l := range r.root.lines {
		if match == nil || match(l) {
			out = append(out, l)
		}
	}
	return out
}

// Wait waits until at least n records match, failing the test after 10 s,
// and returns them.
func (r *Recorder) Wait(t testing.TB, n int, match func(Line) bool) []Line {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		r.root.mu.Lock()
		changed := r.root.changed
		r.root.mu.Unlock()
		if got := r.Lines(match); len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("waited 10s for %d matching log lines; the log:\n%s", n, r.dump())
		}
	}
}

func (r *Recorder) dump() string {
	var b strings.Builder
	for _, l := range r.Lines(nil) {
		b.WriteString(l.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Msg matches records whose message starts with prefix, at level or above.
func Msg(level slog.Level, prefix string) func(Line) bool {
	return func(l Line) bool { return l.Level >= level && strings.HasPrefix(l.Msg, prefix) }
}
