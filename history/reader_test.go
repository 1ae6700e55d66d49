package history

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// convo builds a conversation turn by turn, numbering events as the hub does.
type convo struct {
	seq  int64
	turn int
	evs  []event.Event
}

var convoStart = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func (c *convo) add(typ event.Type, turn string, data any) {
	c.seq++
	e := event.New(typ, turn, convoStart.Add(time.Duration(c.seq)*time.Second), data)
	e.Seq = c.seq
	e.V = event.LogVersion
	c.evs = append(c.evs, e)
}

// exchange adds one turn: the input, a tool call if toolOutput is set, the
// reply and the turn's end.
func (c *convo) exchange(channel, from, input, toolOutput, reply string) {
	c.turn++
	turn := fmt.Sprintf("t%d", c.turn)
	c.add(event.User, turn, event.UserData{Channel: channel, From: from, Content: input, ClientMsgID: fmt.Sprintf("c-%d", c.turn)})
	if toolOutput != "" {
		c.add(event.ToolCall, turn, event.ToolCallData{ID: "call-1", Name: "lookup", Args: json.RawMessage(`{"q":"x"}`)})
		c.add(event.ToolResult, turn, event.ToolResultData{ID: "call-1", Name: "lookup", Output: toolOutput})
	}
	c.add(event.Assistant, turn, event.AssistantData{Content: reply})
	c.add(event.TurnEnd, turn, event.TurnEndData{Status: event.StatusCompleted, DurationMS: 1200})
}

// filler adds n ordinary turns.
func (c *convo) filler(n int) {
	channels := []string{event.ChannelWeb, event.ChannelConsole, event.ChannelEmail, event.ChannelWebhook}
	for range n {
		k := c.turn + 1
		ch := channels[k%len(channels)]
		from := ""
		if ch == event.ChannelEmail {
			from = "alice@example.com"
		}
		c.exchange(ch, from,
			fmt.Sprintf("Question %d: what is the weather like in Paris on day %d, and should I pack an umbrella?", k, k%31),
			"",
			fmt.Sprintf("Answer %d: mild with showers in the weather forecast; an umbrella is wise. Reference %x.", k, k*7919))
	}
}

func (c *convo) take() []event.Event {
	evs := c.evs
	c.evs = nil
	return evs
}

func lineOf(t testing.TB, e event.Event) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func linesOf(t testing.TB, evs []event.Event) []byte {
	var b []byte
	for _, e := range evs {
		b = append(b, lineOf(t, e)...)
	}
	return b
}

func gzipBytes(t testing.TB, b []byte, flushEvery int) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	for len(b) > 0 {
		n := min(len(b), flushEvery)
		zw.Write(b[:n])
		zw.Flush() // complete blocks, so that a cut stream still yields data
		b = b[n:]
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// gunzipPrefix returns what a gzip stream yields before it breaks off.
func gunzipPrefix(t testing.TB, gz []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err == nil {
		t.Fatal("the cut stream decompressed without error")
	}
	return b
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fixture is a chat log of six files with every kind of damage, and what a
// reader should make of it.
type fixture struct {
	path    string
	valid   []event.Event // every readable event, in seq order
	skipped int           // malformed and partial lines plus damaged parts
	files   int           // files a full read reads (a plain+gz pair is one)
	partOf  map[int64]string
}

func partName(dir string, hour int, gz bool) string {
	n := filepath.Join(dir, fmt.Sprintf("chat_history-2026-11-22T%02d-00-00.000.ndjson", hour))
	if gz {
		n += ".gz"
	}
	return n
}

// Special contents, placed in various parts.
const (
	specialQuarterly = "Quarterly report is due on Friday; remind me."
	specialUpper     = "Sure. The QUARTERLY numbers look fine to me."
	specialEcole     = "J'étais à l'école hier, puis au café."
	specialEscapes   = `AT&T said <b>"hi"</b> from C:\temp\new`
	specialKelvin    = "Water boils at 373 \u212Aelvin, that's all."
	specialLongS     = "The Congreſs met."
	specialMultiline = "first line\nsecond line\twith a tab"
	toolOnly         = "zebrafish-toolonly appears only in tool output"
)

var specialLong = strings.Repeat("lorem ipsum dolor sit amet ", 40) + "NEEDLE in the middle " + strings.Repeat("consectetur adipiscing elit ", 40)

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	fx := &fixture{path: filepath.Join(dir, "chat_history.ndjson"), partOf: map[int64]string{}}
	var c convo
	keep := func(evs []event.Event, name string) {
		fx.valid = append(fx.valid, evs...)
		for _, e := range evs {
			fx.partOf[e.Seq] = filepath.Base(name)
		}
	}

	// A (10:00): plain.
	c.filler(3)
	c.exchange(event.ChannelWeb, "", specialQuarterly, "", "Noted: the quarterly report, Friday.")
	c.filler(6)
	a := c.take()
	writeFile(t, partName(dir, 10, false), linesOf(t, a))
	keep(a, partName(dir, 10, false))
	fx.files++

	// B (11:00): gzipped.
	c.filler(2)
	c.exchange(event.ChannelWebhook, "ci-bot", specialEscapes, "", "Escapes noted.")
	c.exchange(event.ChannelWeb, "", "use the tool please", toolOnly+" and quarterly", "The tool ran.")
	c.filler(6)
	b := c.take()
	writeFile(t, partName(dir, 11, true), gzipBytes(t, linesOf(t, b), 1<<20))
	keep(b, partName(dir, 11, true))
	fx.files++

	// C (12:00): both plain and gzipped, the same lines: read once.
	c.filler(2)
	c.exchange(event.ChannelEmail, "bob@example.com", "How hot does water boil?", "", specialKelvin)
	c.exchange(event.ChannelConsole, "", specialLongS, "", "History noted.")
	c.filler(6)
	cc := c.take()
	writeFile(t, partName(dir, 12, false), append([]byte("garbage before the first event\n"), linesOf(t, cc)...))
	fx.skipped++
	writeFile(t, partName(dir, 12, true), gzipBytes(t, linesOf(t, cc), 1<<20))
	keep(cc, partName(dir, 12, false))
	fx.files++

	// D (13:00): gzipped, cut mid-stream.
	c.filler(30)
	c.exchange(event.ChannelWeb, "", "zanzibar-in-the-lost-tail", "", "It is lost.")
	c.filler(10)
	d := c.take()
	dLines := linesOf(t, d)
	full := gzipBytes(t, dLines, 2048)
	cut := full[:len(full)*6/10]
	writeFile(t, partName(dir, 13, true), cut)
	got := gunzipPrefix(t, cut)
	if !bytes.HasPrefix(dLines, got) || len(got) < 1000 || len(got) > len(dLines)*8/10 {
		t.Fatalf("cut stream yields %d of %d bytes", len(got), len(dLines))
	}
	whole := bytes.Count(got, []byte("\n"))
	keep(d[:whole], partName(dir, 13, true))
	fx.skipped++ // the damaged part
	if !bytes.HasSuffix(got, []byte("\n")) {
		fx.skipped++ // its last, cut line
	}
	fx.files++

	// E (14:00): plain, with a malformed line and a partial last line.
	c.filler(2)
	c.exchange(event.ChannelWeb, "", specialMultiline, "", specialUpper)
	c.filler(2)
	e := c.take()
	c.filler(1)
	cutTurn := c.take()
	var eb []byte
	eb = append(eb, linesOf(t, e[:5])...)
	eb = append(eb, "{not json at all\n"...)
	eb = append(eb, linesOf(t, e[5:])...)
	eb = append(eb, linesOf(t, cutTurn[:2])...)
	last := lineOf(t, cutTurn[2])
	eb = append(eb, last[:len(last)/2]...) // a crash mid-append
	writeFile(t, partName(dir, 14, false), eb)
	keep(e, partName(dir, 14, false))
	keep(cutTurn[:2], partName(dir, 14, false))
	fx.skipped += 2
	fx.files++

	// The live file, its last line being appended.
	c.filler(2)
	c.exchange(event.ChannelEmail, "claire@example.com", specialEcole, "", "Très bien.")
	c.exchange(event.ChannelWeb, "", "Make it long", "", specialLong)
	c.filler(3)
	live := c.take()
	c.exchange(event.ChannelWeb, "", "this input never finished: partialword", "", "")
	pending := lineOf(t, c.take()[0])
	writeFile(t, fx.path, append(linesOf(t, live), pending[:len(pending)-20]...))
	keep(live, fx.path)
	fx.skipped++
	fx.files++
	return fx
}

func eventSeqs(evs []event.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func sameEvents(t *testing.T, got, want []event.Event) {
	t.Helper()
	if !slices.Equal(eventSeqs(got), eventSeqs(want)) {
		t.Fatalf("got seqs %v\nwant %v", eventSeqs(got), eventSeqs(want))
	}
	for i := range got {
		if g, w := lineOf(t, got[i]), lineOf(t, want[i]); !bytes.Equal(g, w) {
			t.Fatalf("event %d:\ngot  %s\nwant %s", got[i].Seq, g, w)
		}
	}
}

func TestRecent(t *testing.T) {
	fx := newFixture(t)
	r := NewReader(fx.path)
	n := len(fx.valid)
	tests := []struct {
		n           int
		wantSkipped int
	}{
		{0, 0},
		{1, 1}, // the live file's partial line
		{20, 1},
		{n - 5, fx.skipped},
		{n, fx.skipped},
		{n + 10, fx.skipped},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			got, st, err := r.Recent(tc.n)
			if err != nil {
				t.Fatal(err)
			}
			want := fx.valid[max(0, n-tc.n):]
			sameEvents(t, got, want)
			if st.Skipped != tc.wantSkipped {
				t.Errorf("skipped %d, want %d", st.Skipped, tc.wantSkipped)
			}
		})
	}
	// ReadTail is Recent.
	evs, skipped, err := ReadTail(fx.path, 7)
	if err != nil || skipped != 1 || !slices.Equal(eventSeqs(evs), eventSeqs(fx.valid[n-7:])) {
		t.Errorf("ReadTail: %v, skipped %d, err %v", eventSeqs(evs), skipped, err)
	}
}

func TestRangeBySeq(t *testing.T) {
	fx := newFixture(t)
	r := NewReader(fx.path)
	first, last := fx.valid[0].Seq, fx.valid[len(fx.valid)-1].Seq
	// A seq lost in part D's damaged tail.
	var lost int64
	for s := first; s < last; s++ {
		if _, ok := fx.partOf[s]; !ok {
			lost = s
			break
		}
	}
	if lost == 0 {
		t.Fatal("fixture lost no seq")
	}
	tests := []struct {
		name     string
		from, to Bound
		limit    int
	}{
		{"all", Bound{}, Bound{}, 0},
		{"one", Bound{Seq: 5}, Bound{Seq: 5}, 0},
		{"first part", Bound{Seq: first}, Bound{Seq: 12}, 0},
		{"across parts", Bound{Seq: 30}, Bound{Seq: 130}, 0},
		{"open start", Bound{}, Bound{Seq: 44}, 0},
		{"open end", Bound{Seq: last - 3}, Bound{}, 0},
		{"from a lost seq", Bound{Seq: lost}, Bound{}, 0},
		{"to a lost seq", Bound{}, Bound{Seq: lost}, 0},
		{"limited", Bound{Seq: 10}, Bound{Seq: 100}, 25},
		{"limit exactly met", Bound{Seq: 10}, Bound{Seq: 34}, 25},
		{"past the end", Bound{Seq: last + 1}, Bound{}, 0},
		{"inverted", Bound{Seq: 50}, Bound{Seq: 40}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, truncated, _, err := r.Range(context.Background(), tc.from, tc.to, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var want []event.Event
			for _, e := range fx.valid {
				if (tc.from.Seq == 0 || e.Seq >= tc.from.Seq) && (tc.to.Seq == 0 || e.Seq <= tc.to.Seq) {
					want = append(want, e)
				}
			}
			wantTrunc := tc.limit > 0 && len(want) > tc.limit
			if wantTrunc {
				want = want[:tc.limit]
			}
			sameEvents(t, got, want)
			if truncated != wantTrunc {
				t.Errorf("truncated %v, want %v", truncated, wantTrunc)
			}
		})
	}
}

func TestRangeByTime(t *testing.T) {
	fx := newFixture(t)
	r := NewReader(fx.path)
	at := func(i int) time.Time { return fx.valid[i].TS.Std() }
	tests := []struct {
		name     string
		from, to Bound
	}{
		{"inclusive both ends", Bound{Time: at(10)}, Bound{Time: at(50)}},
		{"between events", Bound{Time: at(10).Add(500 * time.Millisecond)}, Bound{Time: at(50).Add(-time.Millisecond)}},
		{"one instant", Bound{Time: at(77)}, Bound{Time: at(77)}},
		{"open end", Bound{Time: at(len(fx.valid) - 4)}, Bound{}},
		{"seq to time", Bound{Seq: 3}, Bound{Time: at(20)}},
		{"other zone", Bound{Time: at(100).In(time.FixedZone("X", 5*3600))}, Bound{Seq: fx.valid[120].Seq}},
		{"before everything", Bound{}, Bound{Time: convoStart}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, _, err := r.Range(context.Background(), tc.from, tc.to, 0)
			if err != nil {
				t.Fatal(err)
			}
			var want []event.Event
			for _, e := range fx.valid {
				if !tc.from.before(e.Seq, e.TS.Std()) && !tc.to.after(e.Seq, e.TS.Std()) {
					want = append(want, e)
				}
			}
			sameEvents(t, got, want)
		})
	}
}

// A range whose caller went away (an HTTP client, a cancelled tool call)
// stops instead of reading the whole log for nobody.
func TestRangeStopsWhenContextEnds(t *testing.T) {
	fx := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	evs, _, _, err := NewReader(fx.path).Range(ctx, Bound{}, Bound{}, 0)
	if !errors.Is(err, context.Canceled) || len(evs) != 0 {
		t.Errorf("got %d events, err %v; want none and context.Canceled", len(evs), err)
	}
}

func TestRangeReadsOnlyPartsInRange(t *testing.T) {
	fx := newFixture(t)
	r := NewReader(fx.path)
	// Within part A, which is clean: the damage elsewhere goes unseen.
	got, _, st, err := r.Range(context.Background(), Bound{Seq: 3}, Bound{Seq: 9}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 || st.Parts != 1 || st.Skipped != 0 {
		t.Errorf("got %d events, stats %+v; want 7 events from 1 part, none skipped", len(got), st)
	}
	// Everything reads every file once and counts all the damage.
	got, _, st, err = r.Range(context.Background(), Bound{}, Bound{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(fx.valid) || st.Parts != fx.files || st.Skipped != fx.skipped {
		t.Errorf("got %d events, stats %+v; want %d events, %d parts, %d skipped", len(got), st, len(fx.valid), fx.files, fx.skipped)
	}
}

func TestRangeRejectsBadBounds(t *testing.T) {
	r := NewReader(filepath.Join(t.TempDir(), "chat_history.ndjson"))
	if _, _, _, err := r.Range(context.Background(), Bound{Seq: 1, Time: convoStart}, Bound{}, 0); err == nil {
		t.Error("a bound with both seq and time: no error")
	}
	if _, _, _, err := r.Range(context.Background(), Bound{}, Bound{Seq: -1}, 0); err == nil {
		t.Error("a negative seq: no error")
	}
}

func TestParseBound(t *testing.T) {
	tests := []struct {
		in      string
		want    Bound
		wantErr bool
	}{
		{"", Bound{}, false},
		{"  ", Bound{}, false},
		{"42", Bound{Seq: 42}, false},
		{" 7 ", Bound{Seq: 7}, false},
		{"0", Bound{}, false},
		{"000", Bound{}, false},
		{"-3", Bound{}, true},
		{"99999999999999999999", Bound{}, true},
		{"2026-11-22T10:00:00Z", Bound{Time: convoStart}, false},
		{"2026-11-22T11:00:00.5+01:00", Bound{Time: convoStart.Add(500 * time.Millisecond)}, false},
		{"2026-11-22", Bound{}, true},
		{"yesterday", Bound{}, true},
	}
	for _, tc := range tests {
		got, err := ParseBound(tc.in)
		if (err != nil) != tc.wantErr || got.Seq != tc.want.Seq || !got.Time.Equal(tc.want.Time) {
			t.Errorf("ParseBound(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err == nil {
			back, err := ParseBound(got.String())
			if err != nil || back.Seq != got.Seq || !back.Time.Equal(got.Time) {
				t.Errorf("ParseBound(%q).String() = %q does not parse back", tc.in, got.String())
			}
		}
	}
}

func TestReadersOnEmptyLog(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty", "chat_history.ndjson")
	os.MkdirAll(filepath.Dir(empty), 0o700)
	writeFile(t, empty, nil)
	blank := filepath.Join(dir, "blank", "chat_history.ndjson")
	os.MkdirAll(filepath.Dir(blank), 0o700)
	writeFile(t, blank, []byte("\n\n  \n"))
	for name, path := range map[string]string{
		"missing dir":  filepath.Join(dir, "none", "chat_history.ndjson"),
		"missing file": filepath.Join(dir, "chat_history.ndjson"),
		"empty file":   empty,
		"blank lines":  blank,
	} {
		t.Run(name, func(t *testing.T) {
			r := NewReader(path)
			evs, st, err := r.Recent(10)
			if err != nil || len(evs) != 0 || st.Skipped != 0 {
				t.Errorf("Recent: %v, %+v, %v", evs, st, err)
			}
			evs, trunc, st, err := r.Range(context.Background(), Bound{}, Bound{}, 0)
			if err != nil || len(evs) != 0 || trunc || st.Skipped != 0 {
				t.Errorf("Range: %v, %v, %+v, %v", evs, trunc, st, err)
			}
			if evs, err := r.Since(1, 10); err != nil || len(evs) != 0 {
				t.Errorf("Since: %v, %v", evs, err)
			}
		})
	}
}

func TestReadersFollowTheLog(t *testing.T) {
	// A real Log rotating at 1 MiB; one part is gzipped afterwards (and
	// another kept both ways), as a user might.
	path := testPath(t)
	l := openLog(t, Options{Path: path, RotateMB: 1, Fsync: FsyncNever})
	var c convo
	pad := strings.Repeat("padding words to fill the part ", 40)
	for i := range 1400 {
		c.exchange(event.ChannelWeb, "", fmt.Sprintf("question %d %s", i, pad), "", fmt.Sprintf("answer %d %s", i, pad))
	}
	c.exchange(event.ChannelWeb, "", "the magic word is Xylophone", "", "ok")
	all := c.take()
	for _, e := range all {
		mustAppend(t, l, e)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := logFiles(t, path)
	if len(files) < 4 {
		t.Fatalf("%d files, want at least 3 parts and the live file", len(files))
	}
	for i, f := range files[:2] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, f+".gz", gzipBytes(t, b, 1<<30))
		if i == 0 {
			os.Remove(f)
		}
	}

	r := NewReader(path)
	evs, _, st, err := r.Range(context.Background(), Bound{}, Bound{}, 0)
	if err != nil || st.Skipped != 0 || st.Parts != len(files) {
		t.Fatalf("Range: stats %+v, err %v; want %d parts", st, err, len(files))
	}
	sameEvents(t, evs, all)
	recent, _, err := r.Recent(50)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, recent, all[len(all)-50:])
	since, err := r.Since(all[9].Seq, 2) // the oldest part, gzipped
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, since, all[9:11])
	since, err = r.Since(all[len(all)-3].Seq, 10)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, since, all[len(all)-3:])
}

func TestReadersDuringAppends(t *testing.T) {
	// Readers run while the Log appends and rotates: every answer is a
	// contiguous run of seqs (the log holds every seq), never an error.
	path := testPath(t)
	l := openLog(t, Options{Path: path, RotateMB: 1, Fsync: FsyncNever})
	content := strings.Repeat("x", 900)
	const total = 4000
	done := make(chan struct{})
	var appendErr error
	go func() {
		defer close(done)
		for i := range total {
			e := userEvent(int64(i+1), content)
			if err := l.Append(e); err != nil {
				appendErr = err
				return
			}
		}
	}()
	contiguous := func(evs []event.Event) bool {
		for i := 1; i < len(evs); i++ {
			if evs[i].Seq != evs[i-1].Seq+1 {
				return false
			}
		}
		return true
	}
	r := NewReader(path)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			evs, _, err := r.Recent(100)
			if err != nil || !contiguous(evs) {
				report("Recent: %v, seqs %v", err, eventSeqs(evs))
			}
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			evs, _, _, err := r.Range(context.Background(), Bound{Seq: 500}, Bound{}, 0)
			if err != nil || !contiguous(evs) || len(evs) > 0 && evs[0].Seq != 500 {
				report("Range: %v, %d events", err, len(evs))
			}
			since, err := r.Since(1, 0)
			if err != nil || !contiguous(since) || len(since) > 0 && since[0].Seq != 1 {
				report("Since: %v, %d events", err, len(since))
			}
		}
	})
	<-done
	wg.Wait()
	if appendErr != nil {
		t.Fatal(appendErr)
	}
	for _, p := range problems[:min(len(problems), 5)] {
		t.Error(p)
	}
	since, err := r.Since(1, 0)
	if err != nil || len(since) != total {
		t.Errorf("after the appends: %d events, %v; want %d", len(since), err, total)
	}
}

func TestScanLineAgreesOnLogLines(t *testing.T) {
	fx := newFixture(t)
	for _, e := range fx.valid {
		line := bytes.TrimSuffix(lineOf(t, e), []byte("\n"))
		if _, ok := scanLine(line); !ok {
			t.Fatalf("scanLine rejects a line the Log writes: %s", line)
		}
		if got, ok := decodeLine(line); !ok || !reflect.DeepEqual(got, e) {
			t.Fatalf("decodeLine = %+v, %v; want %+v", got, ok, e)
		}
		k, ok := lineKey(line, true)
		if !ok || k.seq != e.Seq || !k.ts.Equal(e.TS.Std()) {
			t.Fatalf("lineKey = %+v, %v; want %d %v", k, ok, e.Seq, e.TS.Std())
		}
	}
}

func TestReadGzDamage(t *testing.T) {
	dir := t.TempDir()
	lines := bytes.Repeat([]byte(`{"v":1,"seq":1,"type":"notice"}`+"\n"), 2000)
	good := gzipBytes(t, lines, 4096)
	tests := []struct {
		name        string
		b           []byte
		wantDamaged bool
	}{
		{"whole", good, false},
		{"cut", good[:len(good)/2], true},
		{"not gzip", []byte("plain text, not gzip"), true},
		{"empty", nil, true},
		{"trailing junk", append(slices.Clone(good), "junk"...), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".gz")
			writeFile(t, p, tc.b)
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			data, damaged, err := readGz(f, nil)
			if err != nil || damaged != tc.wantDamaged || !bytes.HasPrefix(lines, data) {
				t.Errorf("%d bytes, damaged %v, err %v; want damaged %v and a prefix of the lines", len(data), damaged, err, tc.wantDamaged)
			}
			if !tc.wantDamaged && len(data) != len(lines) {
				t.Errorf("%d bytes, want %d", len(data), len(lines))
			}
		})
	}
}

// FuzzReadLine checks the fast line reader against encoding/json: when
// scanLine is sure, decodeLine must agree with decodeLineJSON exactly.
func FuzzReadLine(f *testing.F) {
	var c convo
	c.exchange(event.ChannelEmail, "a@b.c", specialEscapes, "tool out", specialKelvin)
	c.exchange(event.ChannelWeb, "", specialMultiline, "", specialEcole)
	for _, e := range c.take() {
		f.Add(bytes.TrimSuffix(lineOf(f, e), []byte("\n")))
	}
	for _, s := range []string{
		`{"v":1,"seq":3,"ts":"2026-11-22T10:00:00Z","type":"user","data":{"content":"hi","Content":"x"}}`,
		`{"seq":3,"SEQ":4,"type":"user"}`,
		`{"seq":3,"type":"assistant","data":{"content":null,"partial":1}}`,
		`{"seq":1e2,"type":"user"}`,
		`{"seq":3,"type":"us\u0065r","data":{"content":"a\u00e9\ud800"}}`,
		`{"seq":3,"type":"user","data":"text"}`,
		` {"seq":9,"type":"notice","ts":"2026-11-22T10:00:00.123+01:00"} `,
		`{"seq":3,"type":"user","data":{"content":"` + "\xff\xfe" + `"}}`,
		`{"v":1,"seq":12`,
		`[1,2]`,
		`{"v":null,"seq":5,"type":"x","data":null}`,
		`{"seq":5,"type":"x","data": [1, {"a":2}] ,"turn":null}`,
		`{"v":1,"seq":5,"ts":"2026-11-22T10:00:00+00:00","type":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, evOK := decodeLine(line)
		wantEv, wantEvOK := decodeLineJSON(line)
		if evOK != wantEvOK || !reflect.DeepEqual(ev, wantEv) {
			t.Fatalf("decodeLine: %+v %v\njson:       %+v %v", ev, evOK, wantEv, wantEvOK)
		}
		if _, ok := scanLine(line); ok && !json.Valid(line) {
			t.Fatalf("scanLine accepts invalid JSON %q", line)
		}
		// lineKey may accept the Log's own layout on sight; otherwise it
		// agrees with decodeLine.
		e, eValid := wantEv, wantEvOK
		k, ok := lineKey(line, true)
		if !bytes.HasPrefix(line, canonPrefix) && ok != eValid {
			t.Fatalf("lineKey ok %v, decodeLine valid %v", ok, eValid)
		}
		if ok && eValid && (k.seq != e.Seq || !k.ts.Equal(e.TS.Std())) {
			t.Fatalf("lineKey %+v, decodeLine %d %v", k, e.Seq, e.TS.Std())
		}
	})
}

func TestPartTwinAfterListing(t *testing.T) {
	// A part gzipped (plain removed) between listing and reading is read
	// from its .gz twin.
	dir := t.TempDir()
	var c convo
	c.filler(3)
	evs := c.take()
	plain := partName(dir, 10, false)
	writeFile(t, plain, linesOf(t, evs))
	p := part{path: plain}
	os.Remove(plain)
	writeFile(t, plain+".gz", gzipBytes(t, linesOf(t, evs), 1<<20))
	f, gz, err := p.open()
	if err != nil || !gz {
		t.Fatalf("open: gz %v, err %v", gz, err)
	}
	f.Close()
	os.Remove(plain + ".gz")
	if _, _, err := p.open(); !errors.Is(err, errPartGone) {
		t.Errorf("open of a vanished part: %v, want errPartGone", err)
	}
}
