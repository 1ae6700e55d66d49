package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func testPath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "data", "chat_history.ndjson")
}

func openLog(t testing.TB, opts Options) *Log {
	t.Helper()
	l, err := Open(opts)
	if err != nil {
		t.Fatalf("Open(%+v): %v", opts, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func userEvent(seq int64, content string) event.Event {
	e := event.New(event.User, fmt.Sprintf("t%d", seq), t0.Add(time.Duration(seq)*time.Millisecond),
		event.UserData{Channel: event.ChannelWeb, Content: content})
	e.Seq = seq
	return e
}

// wantLine is what Append should write for e.
func wantLine(t testing.TB, e event.Event) []byte {
	t.Helper()
	e.V = event.LogVersion
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func mustAppend(t testing.TB, l *Log, e event.Event) {
	t.Helper()
	if err := l.Append(e); err != nil {
		t.Fatalf("Append(seq %d): %v", e.Seq, err)
	}
}

// logFiles returns the rotated parts of the log at path in rotation order,
// then the live file.
func logFiles(t testing.TB, path string) []string {
	t.Helper()
	ext := filepath.Ext(path)
	parts, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(parts) // the UTC timestamps in the names sort in time order
	return append(parts, path)
}

func readAll(t testing.TB, files []string) []byte {
	t.Helper()
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

func TestOpenRejectsBadOptions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no path", Options{RotateMB: 1}, "no path"},
		{"zero rotate size", Options{Path: filepath.Join(dir, "a.ndjson")}, "rotate size is 0 MB"},
		{"negative rotate size", Options{Path: filepath.Join(dir, "b.ndjson"), RotateMB: -1}, "rotate size is -1 MB"},
		{"unknown fsync", Options{Path: filepath.Join(dir, "c.ndjson"), RotateMB: 1, Fsync: "sometimes"}, `fsync mode "sometimes"`},
		{"path is a directory", Options{Path: dir, RotateMB: 1}, "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Open(tt.opts)
			if err == nil {
				l.Close()
				t.Fatalf("Open(%+v) = nil error, want one containing %q", tt.opts, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "open chat log: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open(%+v) error = %q, want \"open chat log: …%s…\"", tt.opts, err, tt.want)
			}
		})
	}
}

func TestAppendWritesOneLinePerEvent(t *testing.T) {
	turn := "t7"
	evs := []event.Event{
		userEvent(1, "hello <b>&</b>"),
		event.New(event.Delta, turn, t0, event.TextData{Text: "hel"}),
		event.New(event.ToolCall, turn, t0, event.ToolCallData{ID: "c1", Name: "history_search",
			// Pretty-printed args: the newlines must not split the line.
			Args: json.RawMessage("{\n  \"query\": \"x\",\n  \"limit\": 5\n}")}),
		{V: 7, Seq: 4, TS: event.Time(t0), Type: event.Assistant, Turn: turn, Data: json.RawMessage(`{"content":"line one\nline two"}`)},
		event.New(event.TurnEnd, turn, t0, event.TurnEndData{Status: event.StatusCompleted, DurationMS: 12}),
		{Seq: 6, TS: event.Time(t0), Type: event.Notice}, // no data
	}
	evs[1].Seq, evs[2].Seq, evs[4].Seq = 2, 3, 5

	path := testPath(t)
	l := openLog(t, Options{Path: path, RotateMB: 1, Fsync: FsyncNever})
	var want []byte
	for _, e := range evs {
		mustAppend(t, l, e)
		want = append(want, wantLine(t, e)...)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != len(evs) {
		t.Fatalf("got %d lines, want %d", len(lines), len(evs))
	}
	for i, line := range lines {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i+1, err, line)
		}
		if v := string(raw["v"]); v != "1" {
			t.Errorf("line %d: v = %s, want 1", i+1, v)
		}
		var e event.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Seq != evs[i].Seq || e.Type != evs[i].Type {
			t.Errorf("line %d: seq %d type %s, want seq %d type %s", i+1, e.Seq, e.Type, evs[i].Seq, evs[i].Type)
		}
	}
}

func TestAppendRejectsInvalidData(t *testing.T) {
	path := testPath(t)
	l := openLog(t, Options{Path: path, RotateMB: 1, Fsync: FsyncAlways})
	bad := event.Event{Seq: 1, TS: event.Time(t0), Type: event.User, Data: json.RawMessage(`{"content":`)}
	err := l.Append(bad)
	if err == nil || !strings.HasPrefix(err.Error(), "append to chat log: ") {
		t.Fatalf("Append(invalid data) = %v, want an \"append to chat log: \" error", err)
	}
	good := userEvent(2, "ok")
	mustAppend(t, l, good)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := wantLine(t, good); !bytes.Equal(got, want) {
		t.Errorf("file = %q, want %q", got, want)
	}
}

func TestAppendRejectsLineOverRotateSize(t *testing.T) {
	path := testPath(t)
	l := openLog(t, Options{Path: path, RotateMB: 1, Fsync: FsyncNever})
	mustAppend(t, l, userEvent(1, "small"))
	if err := l.Append(userEvent(2, strings.Repeat("x", 1<<20))); err == nil {
		t.Fatal("Append(1 MiB content) with RotateMB 1 = nil error, want one")
	}
	mustAppend(t, l, userEvent(3, "small again"))
	got := readAll(t, logFiles(t, path))
	want := append(wantLine(t, userEvent(1, "small")), wantLine(t, userEvent(3, "small again"))...)
	if !bytes.Equal(got, want) {
		t.Errorf("files = %q, want %q", got, want)
	}
}

func TestFsyncModes(t *testing.T) {
	tests := []struct {
		mode                    string
		afterAppends, afterSync int // live-file fsyncs
	}{
		{FsyncAlways, 3, 3}, // Sync has nothing left to do
		{"", 3, 3},          // empty means always
		{FsyncNever, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			l := openLog(t, Options{Path: testPath(t), RotateMB: 1, Fsync: tt.mode})
			for i := range 3 {
				mustAppend(t, l, userEvent(int64(i+1), "hi"))
			}
			if got := l.stats.liveSyncs; got != tt.afterAppends {
				t.Errorf("after 3 appends: %d fsyncs, want %d", got, tt.afterAppends)
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			if got := l.stats.liveSyncs; got != tt.afterSync {
				t.Errorf("after Sync: %d fsyncs, want %d", got, tt.afterSync)
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			if got := l.stats.liveSyncs; got != tt.afterSync {
				t.Errorf("after a second Sync with nothing new: %d fsyncs, want %d", got, tt.afterSync)
			}
		})
	}
}

func TestRotationKeepsEveryEvent(t *testing.T) {
	const n = 3500 // ~1 KB each: 3 rotations at 1 MiB
	content := strings.Repeat("y", 900)
	for _, mode := range []string{FsyncNever, FsyncInterval} {
		t.Run(mode, func(t *testing.T) {
			path := testPath(t)
			// interval: a short period so the syncer runs alongside the appends.
			l := openLog(t, Options{Path: path, RotateMB: 1, Fsync: mode, syncEvery: time.Millisecond})
			var want []byte
			for i := range n {
				e := userEvent(int64(i+1), content)
				mustAppend(t, l, e)
				want = append(want, wantLine(t, e)...)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}

			files := logFiles(t, path)
			if parts := len(files) - 1; parts < 2 {
				t.Fatalf("got %d rotated parts, want at least 2: %v", parts, files)
			}
			if l.stats.rotations != len(files)-1 {
				t.Errorf("Log saw %d rotations, want %d (one per part)", l.stats.rotations, len(files)-1)
			}
			seen := make(map[int64]int)
			var last int64
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for line := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
					var e event.Event
					if err := json.Unmarshal([]byte(line), &e); err != nil {
						t.Fatalf("%s: bad line %q: %v", f, line, err)
					}
					seen[e.Seq]++
					if e.Seq <= last {
						t.Fatalf("%s: seq %d after %d", f, e.Seq, last)
					}
					last = e.Seq
				}
				if fi, err := os.Stat(f); err != nil {
					t.Fatal(err)
				} else if got := fi.Mode().Perm(); got != 0o600 {
					t.Errorf("%s: mode %o, want 600", f, got)
				}
			}
			for seq := int64(1); seq <= n; seq++ {
				if seen[seq] != 1 {
					t.Errorf("seq %d appears %d times, want once", seq, seen[seq])
				}
			}
			if got := readAll(t, files); !bytes.Equal(got, want) {
				t.Errorf("files hold %d bytes, want the %d appended", len(got), len(want))
			}
			if fi, err := os.Stat(filepath.Dir(path)); err != nil {
				t.Fatal(err)
			} else if got := fi.Mode().Perm(); got != 0o700 {
				t.Errorf("directory mode %o, want 700", got)
			}
		})
	}
}

// syncTarget returns the identity of the file the Log fsyncs.
func (l *Log) syncTarget() (os.FileInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fd.Stat()
}

func (l *Log) counters() counters {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

func TestAlwaysSyncFollowsRotation(t *testing.T) {
	path := testPath(t)
	l := openLog(t, Options{Path: path, RotateMB: 1, Fsync: FsyncAlways})
	content := strings.Repeat("z", 100_000) // ~10 per part
	var want []byte
	for i := int64(1); l.counters().rotations < 2; i++ {
		if i > 100 {
			t.Fatal("no second rotation after 100 appends of 100 KB")
		}
		before := l.counters()
		e := userEvent(i, content)
		mustAppend(t, l, e)
		want = append(want, wantLine(t, e)...)
		after := l.counters()

		if after.liveSyncs != before.liveSyncs+1 {
			t.Errorf("append %d: %d live fsyncs, want %d", i, after.liveSyncs, before.liveSyncs+1)
		}
		if after.rotations == before.rotations {
			continue
		}
		// This append rotated.
		if after.partSyncs != before.partSyncs+1 || after.dirSyncs != before.dirSyncs+1 {
			t.Errorf("append %d rotated: part fsyncs %d→%d, dir fsyncs %d→%d, want one more of each",
				i, before.partSyncs, after.partSyncs, before.dirSyncs, after.dirSyncs)
		}
		target, err := l.syncTarget()
		if err != nil {
			t.Fatal(err)
		}
		live, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(target, live) {
			t.Errorf("append %d rotated: the Log still fsyncs the old part, not the live file", i)
		}
		if got := readAll(t, logFiles(t, path)); !bytes.Equal(got, want) {
			t.Errorf("append %d rotated: files hold %d bytes, want the %d appended", i, len(got), len(want))
		}
	}
}

func TestRapidRotationsKeepEveryPart(t *testing.T) {
	// Two 400 KB lines fill a 1 MiB part, so every second append rotates,
	// quicker than lumberjack's millisecond-resolution part names allow.
	path := testPath(t)
	l := openLog(t, Options{Path: path, RotateMB: 1, Fsync: FsyncNever})
	content := strings.Repeat("r", 400_000)
	const n = 12
	var want []byte
	for i := range n {
		e := userEvent(int64(i+1), content)
		mustAppend(t, l, e)
		want = append(want, wantLine(t, e)...)
	}
	files := logFiles(t, path)
	if got, wantParts := len(files)-1, l.counters().rotations; got != wantParts || got < 4 {
		t.Errorf("%d parts on disk, Log saw %d rotations; want equal and at least 4", got, wantParts)
	}
	if got := readAll(t, files); !bytes.Equal(got, want) {
		t.Errorf("files hold %d bytes, want the %d appended", len(got), len(want))
	}
}

func TestSpaceRotationsLeavesTheMillisecond(t *testing.T) {
	l := openLog(t, Options{Path: testPath(t), RotateMB: 1, Fsync: FsyncNever})
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range 20 {
		l.lastRotate = time.Now()
		l.size = l.maxBytes - 10
		l.spaceRotations(10) // this write would rotate
		last, now := l.lastRotate.Truncate(time.Millisecond), time.Now().Truncate(time.Millisecond)
		if !now.After(last) {
			t.Fatalf("try %d: a rotating write may start at %s, in the millisecond of the last rotation %s",
				i, now.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano))
		}
	}
}

func TestIntervalSyncsWithoutAppend(t *testing.T) {
	l := openLog(t, Options{Path: testPath(t), RotateMB: 1, Fsync: FsyncInterval, syncEvery: time.Millisecond})
	mustAppend(t, l, userEvent(1, "hi"))
	select {
	case <-l.synced:
	case <-time.After(10 * time.Second):
		t.Fatal("no background sync within 10 s of an append")
	}
	c := l.counters()
	l.mu.Lock()
	dirty := l.dirty
	l.mu.Unlock()
	if c.liveSyncs < 1 || dirty {
		t.Errorf("after a background sync: %d live fsyncs, dirty %v; want >= 1, false", c.liveSyncs, dirty)
	}
}

func TestTickSyncsOnlyAfterAppend(t *testing.T) {
	// never mode has no syncer, so the test drives tick itself.
	l := openLog(t, Options{Path: testPath(t), RotateMB: 1, Fsync: FsyncNever})
	steps := []struct {
		name   string
		append bool
		want   bool
	}{
		{"fresh log", false, false},
		{"after an append", true, true},
		{"nothing new", false, false},
		{"another append", true, true},
	}
	for i, s := range steps {
		if s.append {
			mustAppend(t, l, userEvent(int64(i+1), "hi"))
		}
		before := l.counters().liveSyncs
		got := l.tick()
		synced := l.counters().liveSyncs - before
		if got != s.want || synced != map[bool]int{false: 0, true: 1}[s.want] {
			t.Errorf("%s: tick() = %v with %d fsyncs, want %v", s.name, got, synced, s.want)
		}
	}
}

func TestOpenRepairsPartialLastLine(t *testing.T) {
	complete := `{"v":1,"seq":1,"ts":"2026-11-22T10:00:00.000Z","type":"notice"}` + "\n"
	tests := []struct {
		name      string
		existing  *string // nil: no file
		afterOpen string
	}{
		{"no file", nil, ""},
		{"empty file", ptr(""), ""},
		{"complete lines", ptr(complete), complete},
		{"partial line", ptr(complete + `{"v":1,"seq":2,"ts":"2026-11-2`), complete + `{"v":1,"seq":2,"ts":"2026-11-2` + "\n"},
		{"partial first line", ptr(`{"v":1`), `{"v":1` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "chat_history.ndjson")
			if tt.existing != nil {
				if err := os.WriteFile(path, []byte(*tt.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l := openLog(t, Options{Path: path, RotateMB: 1, Fsync: FsyncAlways})
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.afterOpen {
				t.Errorf("after Open: %q, want %q", got, tt.afterOpen)
			}
			e := userEvent(3, "next")
			mustAppend(t, l, e)
			got, err = os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.afterOpen + string(wantLine(t, e)); string(got) != want {
				t.Errorf("after Append: %q, want %q", got, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestAppendAfterFailedWriteStartsFreshLine(t *testing.T) {
	path := testPath(t)
	l := openLog(t, Options{Path: path, RotateMB: 1, Fsync: FsyncNever})
	l.mu.Lock()
	l.needNL = true // as after a write that failed partway
	l.mu.Unlock()
	e1, e2 := userEvent(1, "a"), userEvent(2, "b")
	mustAppend(t, l, e1)
	mustAppend(t, l, e2)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\n" + string(wantLine(t, e1)) + string(wantLine(t, e2)); string(got) != want {
		t.Errorf("file = %q, want %q", got, want)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	for _, mode := range []string{FsyncAlways, FsyncInterval, FsyncNever} {
		t.Run(mode, func(t *testing.T) {
			path := testPath(t)
			l, err := Open(Options{Path: path, RotateMB: 1, Fsync: mode})
			if err != nil {
				t.Fatal(err)
			}
			e := userEvent(1, "bye")
			mustAppend(t, l, e)
			if err := l.Close(); err != nil {
				t.Fatalf("first Close: %v", err)
			}
			if err := l.Close(); err != nil {
				t.Errorf("second Close: %v, want nil", err)
			}
			if err := l.Append(userEvent(2, "late")); !errors.Is(err, ErrClosed) {
				t.Errorf("Append after Close = %v, want ErrClosed", err)
			}
			if err := l.Sync(); !errors.Is(err, ErrClosed) {
				t.Errorf("Sync after Close = %v, want ErrClosed", err)
			}
			if l.done != nil {
				select {
				case <-l.done:
				default:
					t.Error("the interval syncer is still running after Close")
				}
			}
			if mode != FsyncAlways && l.stats.liveSyncs != 1 {
				t.Errorf("Close made %d fsyncs of the live file, want 1", l.stats.liveSyncs)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if want := wantLine(t, e); !bytes.Equal(got, want) {
				t.Errorf("file = %q, want %q", got, want)
			}
		})
	}
}

func BenchmarkAppend(b *testing.B) {
	e := event.New(event.User, "t1", t0, event.UserData{Channel: event.ChannelWeb,
		Content: "What did I say about the quarterly report last Tuesday? " + strings.Repeat("word ", 20)})
	for _, mode := range []string{FsyncAlways, FsyncInterval, FsyncNever} {
		b.Run(mode, func(b *testing.B) {
			l := openLog(b, Options{Path: testPath(b), RotateMB: 64, Fsync: mode})
			var seq int64
			for b.Loop() {
				seq++
				e.Seq = seq
				if err := l.Append(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
