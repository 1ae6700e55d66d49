package history

import (
	"bytes"
	"compress/gzip"
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
	"unicode/utf8"

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

func hitSeqs(hits []Hit) []int64 {
	out := make([]int64, len(hits))
	for i, h := range hits {
		out[i] = h.Seq
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
			got, truncated, _, err := r.Range(tc.from, tc.to, tc.limit)
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
			got, _, _, err := r.Range(tc.from, tc.to, 0)
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

func TestRangeReadsOnlyPartsInRange(t *testing.T) {
	fx := newFixture(t)
	r := NewReader(fx.path)
	// Within part A, which is clean: the damage elsewhere goes unseen.
	got, _, st, err := r.Range(Bound{Seq: 3}, Bound{Seq: 9}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 || st.Parts != 1 || st.Skipped != 0 {
		t.Errorf("got %d events, stats %+v; want 7 events from 1 part, none skipped", len(got), st)
	}
	// Everything reads every file once and counts all the damage.
	got, _, st, err = r.Range(Bound{}, Bound{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(fx.valid) || st.Parts != fx.files || st.Skipped != fx.skipped {
		t.Errorf("got %d events, stats %+v; want %d events, %d parts, %d skipped", len(got), st, len(fx.valid), fx.files, fx.skipped)
	}
}

func TestRangeRejectsBadBounds(t *testing.T) {
	r := NewReader(filepath.Join(t.TempDir(), "chat_history.ndjson"))
	if _, _, _, err := r.Range(Bound{Seq: 1, Time: convoStart}, Bound{}, 0); err == nil {
		t.Error("a bound with both seq and time: no error")
	}
	if _, _, _, err := r.Range(Bound{}, Bound{Seq: -1}, 0); err == nil {
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

// foldContains is the test's own reading of Search's contract: some run of
// s's runes equals q under strings.EqualFold.
func foldContains(s, q string) bool {
	n := utf8.RuneCountInString(q)
	for i := range s {
		j, k := i, 0
		for k < n && j < len(s) {
			_, size := utf8.DecodeRuneInString(s[j:])
			j += size
			k++
		}
		if k == n && strings.EqualFold(s[i:j], q) {
			return true
		}
	}
	return false
}

// contentOf returns the content of a user or assistant event.
func contentOf(t testing.TB, e event.Event) (string, bool) {
	switch e.Type {
	case event.User:
		var d event.UserData
		if err := e.Decode(&d); err != nil {
			t.Fatal(err)
		}
		return d.Content, true
	case event.Assistant:
		var d event.AssistantData
		if err := e.Decode(&d); err != nil {
			t.Fatal(err)
		}
		return d.Content, true
	}
	return "", false
}

// wantHits is what Search should return, by brute force.
func wantHits(t testing.TB, evs []event.Event, q string, limit int) []int64 {
	var out []int64
	for i := len(evs) - 1; i >= 0; i-- {
		if c, ok := contentOf(t, evs[i]); ok && foldContains(c, q) {
			out = append(out, evs[i].Seq)
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

var searchQueries = []struct {
	name, q string
	limit   int
	atLeast int // hits the fixture surely holds
}{
	{"ascii any case", "quarterly", 0, 3},
	{"upper query", "QUARTERLY REPORT", 0, 1},
	{"accented upper", "ÉCOLE", 0, 1},
	{"accented lower", "école", 0, 1},
	{"html escaped", "<b>", 0, 1},
	{"ampersand", "at&t", 0, 1},
	{"quote", `"hi"`, 0, 1},
	{"backslash", `c:\temp\NEW`, 0, 1},
	{"newline", "line\nsecond", 0, 1},
	{"tab", "line\twith", 0, 1},
	{"kelvin by k", "373 kelvin", 0, 1},
	{"long s by s", "CONGRESS", 0, 1},
	{"escape text is not content", "u003c", 0, 0},
	{"tool output only", "zebrafish", 0, 0},
	{"turn_end status", "completed", 0, 0},
	{"member name", "content", 0, 0},
	{"type value", "assistant", 0, 0},
	{"sender", "alice@example.com", 0, 0},
	{"lost in damaged gz", "zanzibar", 0, 0},
	{"partial line", "partialword", 0, 0},
	{"malformed line", "not json", 0, 0},
	{"common, limited", "weather", 7, 7},
	{"common, all", "Umbrella", 0, 100},
	{"long content", "needle", 0, 1},
	{"single letter", "Q", 5, 5},
	{"replacement char", "\uFFFD", 0, 0},
}

func TestSearch(t *testing.T) {
	fx := newFixture(t)
	for _, tc := range searchQueries {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []*Reader{
				NewReader(fx.path),
				{path: fx.path, window: 64, workers: 1},
				{path: fx.path, window: 300, workers: 3},
			} {
				hits, st, err := r.Search(tc.q, tc.limit)
				if err != nil {
					t.Fatal(err)
				}
				want := wantHits(t, fx.valid, tc.q, tc.limit)
				if got := hitSeqs(hits); !slices.Equal(got, want) {
					t.Fatalf("window %d, workers %d: got %v, want %v", r.window, r.workers, got, want)
				}
				if len(hits) < tc.atLeast {
					t.Fatalf("%d hits, want at least %d", len(hits), tc.atLeast)
				}
				// A full read sees each part's damage (the malformed
				// line only when it holds the query's bytes).
				if tc.limit == 0 && (st.Parts != fx.files || st.Skipped < fx.skipped-2) {
					t.Errorf("stats %+v, want %d parts, at least %d skipped", st, fx.files, fx.skipped-2)
				}
			}
		})
	}
}

func TestSearchHitFields(t *testing.T) {
	fx := newFixture(t)
	r := NewReader(fx.path)
	byseq := map[int64]event.Event{}
	for _, e := range fx.valid {
		byseq[e.Seq] = e
	}

	hits, _, err := r.Search("école", 5)
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits %+v, err %v", hits, err)
	}
	h := hits[0]
	e := byseq[h.Seq]
	if h.Type != "user" || h.Channel != event.ChannelEmail || h.From != "claire@example.com" || h.Turn != e.Turn ||
		!h.TS.Equal(e.TS.Std()) || h.Snippet != specialEcole {
		t.Errorf("hit %+v, want user email claire@example.com turn %s at %v, snippet %q", h, e.Turn, e.TS.Std(), specialEcole)
	}

	b, err := json.Marshal(h)
	if want := fmt.Sprintf(`"ts":"%s"`, e.TS.Std().UTC().Format("2006-01-02T15:04:05.000Z")); err != nil || !strings.Contains(string(b), want) {
		t.Errorf("hit JSON %s, want %s", b, want)
	}

	// An assistant hit names the channel its turn came from.
	hits, _, err = r.Search("kelvin", 5)
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits %+v, err %v", hits, err)
	}
	if h := hits[0]; h.Type != "assistant" || h.Channel != event.ChannelEmail || h.From != "" || h.Snippet != specialKelvin {
		t.Errorf("assistant hit %+v, want channel email, no from, snippet %q", h, specialKelvin)
	}
	for _, window := range []int{0, 200} {
		r := &Reader{path: fx.path, window: window}
		hits, _, _ = r.Search("an umbrella is wise", 0)
		for _, h := range hits {
			if h.Channel == "" {
				t.Errorf("window %d: assistant hit %d has no channel", window, h.Seq)
			}
		}
	}

	// Whitespace is flattened; a long content is cut around the match.
	hits, _, _ = r.Search("SECOND LINE", 1)
	if len(hits) != 1 || hits[0].Snippet != "first line second line with a tab" {
		t.Errorf("multiline snippet %+v", hits)
	}
	hits, _, _ = r.Search("needle", 1)
	if len(hits) != 1 {
		t.Fatalf("needle: %+v", hits)
	}
	s := hits[0].Snippet
	n := utf8.RuneCountInString(s)
	if !strings.HasPrefix(s, "…") || !strings.HasSuffix(s, "…") || !strings.Contains(s, "NEEDLE in the middle") ||
		n < SnippetRunes || n > SnippetRunes+2 {
		t.Errorf("snippet %q (%d runes), want ~%d runes around NEEDLE, cut both sides", s, n, SnippetRunes)
	}
}

func TestSearchStopsAtLimit(t *testing.T) {
	fx := newFixture(t)
	// The live file alone holds 5 weather hits: no older part is read.
	r := &Reader{path: fx.path, workers: 1}
	hits, st, err := r.Search("weather", 5)
	if err != nil || len(hits) != 5 {
		t.Fatalf("hits %v, err %v", hitSeqs(hits), err)
	}
	if st.Parts != 1 {
		t.Errorf("read %d parts, want 1", st.Parts)
	}
	if want := wantHits(t, fx.valid, "weather", 5); !slices.Equal(hitSeqs(hits), want) {
		t.Errorf("got %v, want %v", hitSeqs(hits), want)
	}
}

func TestSearchRejectsEmptyQuery(t *testing.T) {
	if _, _, err := NewReader(filepath.Join(t.TempDir(), "x.ndjson")).Search("", 10); err == nil {
		t.Error("empty query: no error")
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
			evs, trunc, st, err := r.Range(Bound{}, Bound{}, 0)
			if err != nil || len(evs) != 0 || trunc || st.Skipped != 0 {
				t.Errorf("Range: %v, %v, %+v, %v", evs, trunc, st, err)
			}
			hits, st, err := r.Search("x", 10)
			if err != nil || len(hits) != 0 || st.Skipped != 0 {
				t.Errorf("Search: %v, %+v, %v", hits, st, err)
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
	evs, _, st, err := r.Range(Bound{}, Bound{}, 0)
	if err != nil || st.Skipped != 0 || st.Parts != len(files) {
		t.Fatalf("Range: stats %+v, err %v; want %d parts", st, err, len(files))
	}
	sameEvents(t, evs, all)
	recent, _, err := r.Recent(50)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, recent, all[len(all)-50:])
	hits, _, err := r.Search("xylophone", 10)
	if err != nil || len(hits) != 1 || hits[0].Seq != all[len(all)-3].Seq {
		t.Errorf("Search: %+v, %v", hits, err)
	}
	hits, _, err = r.Search("Question 3 ", 0) // the oldest part, gzipped
	if err != nil || len(hits) != 1 || hits[0].Seq != all[9].Seq {
		t.Errorf("Search in the .gz part: %+v, %v", hits, err)
	}
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
			evs, _, _, err := r.Range(Bound{Seq: 500}, Bound{}, 0)
			if err != nil || !contiguous(evs) || len(evs) > 0 && evs[0].Seq != 500 {
				report("Range: %v, %d events", err, len(evs))
			}
			hits, _, err := r.Search("XXX", 0)
			if err != nil {
				report("Search: %v", err)
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Seq != hits[i-1].Seq-1 {
					report("Search: seq %d after %d", hits[i].Seq, hits[i-1].Seq)
					break
				}
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
	hits, _, err := r.Search("xxx", 0)
	if err != nil || len(hits) != total {
		t.Errorf("after the appends: %d hits, %v; want %d", len(hits), err, total)
	}
}

func TestScanLineAgreesOnLogLines(t *testing.T) {
	fx := newFixture(t)
	for _, e := range fx.valid {
		line := bytes.TrimSuffix(lineOf(t, e), []byte("\n"))
		f, ok := scanLine(line)
		if !ok {
			t.Fatalf("scanLine rejects a line the Log writes: %s", line)
		}
		got, valid := f.message(line)
		want, wantValid := decodeMessage(line)
		if valid != wantValid || got != want {
			t.Fatalf("scanLine: %+v %v\ndecode:   %+v %v", got, valid, want, wantValid)
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
// scanLine is sure, it must agree with decodeMessage exactly.
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
		want, wantValid := decodeMessage(line)
		fs, ok := scanLine(line)
		if ok {
			got, valid := fs.message(line)
			if valid != wantValid || got.seq != want.seq || got.typ != want.typ || got.turn != want.turn ||
				!got.ts.Equal(want.ts) || got.channel != want.channel || got.from != want.from || got.content != want.content {
				t.Fatalf("scanLine: %+v %v\ndecode:   %+v %v", got, valid, want, wantValid)
			}
			if !json.Valid(line) {
				t.Fatalf("scanLine accepts invalid JSON %q", line)
			}
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

// FuzzSearch checks that Search's byte-level prefilter never loses a
// message that holds the query, whatever the two hold.
func FuzzSearch(f *testing.F) {
	for _, s := range [][2]string{
		{specialEscapes, "<B>"}, {specialKelvin, "k"}, {specialEcole, "ÉCOLE"}, {specialLongS, "ss"},
		{"a\u2028b", "A\u2028"}, {"Straße", "STRASSE"}, {"ΣΊΣΥΦΟΣ", "σίσυφος"}, {"x\x00y", "\x00"},
		{"tab\there", "\t"}, {`\\u003c`, `\u003c`}, {"bad \xff utf8", "\uFFFD"}, {"ǅ", "ǆ"},
	} {
		f.Add(s[0], s[1], false)
	}
	f.Fuzz(func(t *testing.T, content, q string, assistant bool) {
		if q == "" {
			return
		}
		var c convo
		if assistant {
			c.exchange(event.ChannelWeb, "", "input", "", content)
		} else {
			c.exchange(event.ChannelWeb, "", content, "", "reply")
		}
		evs := c.take()
		data := linesOf(t, evs)
		qc, err := compileQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		s := lineSearch{q: qc}
		hits := s.block(data, nil)
		// Invalid UTF-8 in the query means U+FFFD, byte by byte.
		want := wantHits(t, evs, string([]rune(q)), 0)
		slices.Reverse(want)
		if got := hitSeqs(hits); !slices.Equal(got, want) {
			t.Fatalf("content %q, query %q: hits %v, want %v", content, q, got, want)
		}
	})
}

func TestFoldIndexAndSnippet(t *testing.T) {
	tests := []struct {
		s, q        string
		want        string // the match
		wantSnippet string
	}{
		{"Hello World", "WORLD", "World", "Hello World"},
		{"école", "ÉCOLE", "école", "école"},
		{"\u212Aelvin", "kelvin", "\u212Aelvin", "\u212Aelvin"},
		{"abc", "abcd", "", ""},
		{"tab\tand\nnewline", "and", "and", "tab and newline"},
	}
	for _, tc := range tests {
		var q []rune
		for _, r := range tc.q {
			q = append(q, canon(r))
		}
		ms, me := foldIndex(tc.s, q)
		if tc.want == "" {
			if ms != -1 {
				t.Errorf("foldIndex(%q, %q) = %d, want none", tc.s, tc.q, ms)
			}
			continue
		}
		if ms < 0 || tc.s[ms:me] != tc.want {
			t.Errorf("foldIndex(%q, %q) = %d:%d, want %q", tc.s, tc.q, ms, me, tc.want)
			continue
		}
		if got := snippet(tc.s, ms, me); got != tc.wantSnippet {
			t.Errorf("snippet = %q, want %q", got, tc.wantSnippet)
		}
	}
	// A match longer than the snippet is itself cut.
	long := strings.Repeat("é", 300)
	got := snippet(long, 0, len(long))
	if utf8.RuneCountInString(got) != SnippetRunes+1 || !strings.HasSuffix(got, "…") {
		t.Errorf("long match snippet has %d runes", utf8.RuneCountInString(got))
	}
	// Near the start, the room before goes after.
	s := "abc needle " + strings.Repeat("z", 400)
	got = snippet(s, 4, 10)
	if !strings.HasPrefix(got, "abc needle zz") || utf8.RuneCountInString(got) != SnippetRunes+1 {
		t.Errorf("snippet near start = %q", got)
	}
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
