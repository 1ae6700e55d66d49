package index_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/index"
)

var t0 = time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)

// convo builds user/assistant events from alternating texts, one turn per
// pair, an hour apart, with a turn_end after each reply.
func convo(texts ...string) []event.Event {
	var evs []event.Event
	seq := int64(0)
	add := func(typ event.Type, turn string, data any) {
		seq++
		e := event.New(typ, turn, t0.Add(time.Duration(seq)*time.Hour), data)
		e.Seq = seq
		evs = append(evs, e)
	}
	for i := 0; i < len(texts); i += 2 {
		turn := fmt.Sprintf("t%d", seq+1)
		ch, from := event.ChannelWeb, ""
		if strings.HasPrefix(texts[i], "MAIL ") {
			ch, from = event.ChannelEmail, "Ann@Example.com"
		}
		add(event.User, turn, event.UserData{Channel: ch, From: from, Content: strings.TrimPrefix(texts[i], "MAIL ")})
		if i+1 < len(texts) {
			add(event.Assistant, turn, event.AssistantData{Content: texts[i+1]})
		}
		add(event.TurnEnd, turn, event.TurnEndData{Status: event.StatusCompleted})
	}
	return evs
}

func openIndex(t *testing.T, evs []event.Event) *index.Index {
	t.Helper()
	ix, why, err := index.Open(filepath.Join(t.TempDir(), index.FileName))
	if err != nil || why != "" {
		t.Fatalf("open: %v %q", err, why)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Add(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	return ix
}

func search(t *testing.T, ix *index.Index, q string) index.Result {
	t.Helper()
	res, err := ix.Search(context.Background(), q, index.Options{Limit: 5, Now: t0.Add(1000 * time.Hour)})
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	return res
}

var sample = convo(
	"My sister's birthday is on the 14th of March", "Noted: your sister's birthday is March 14.",
	"Dr. Müller's practice moved to Lindenstraße 12", "Got it, Dr. Müller is now at Lindenstraße 12.",
	"The plumber says the kitchen pipe is leaking again", "I'll remind you to call the plumber.",
	"the quarterly report is due on the 3rd", "Quarterly report: due on the 3rd.",
	"MAIL Please send the invoice for October", "I've drafted the invoice email.",
	"What should I cook tonight?", "How about a risotto with mushrooms?",
	"Book a table at the café for Friday", "Booked the café for Friday at 8.",
)

func TestSearchSemantics(t *testing.T) {
	ix := openIndex(t, sample)
	for _, tc := range []struct {
		name, q  string
		wantTurn string // of the first hit: the fact or its acknowledgement
		wantMode string
	}{
		{"word order", "birthday sister", "t1", index.ModeAnd},
		{"plural", "birthdays", "t1", index.ModeAnd},
		{"possessive", "sister's birthday", "t1", index.ModeAnd},
		{"question words dropped", "when is my sister's birthday", "t1", index.ModeAnd},
		{"diacritics folded", "muller", "t4", index.ModeAnd},
		{"diacritics in query", "MÜLLER LINDENSTRASSE lindenstraße", "t4", index.ModeOr}, // ß is not ss
		{"stem", "pipe leaks", "t7", index.ModeAnd},
		{"reversed phrase words", "report quarterly", "t10", index.ModeAnd},
		{"exact phrase", `"quarterly report"`, "t10", index.ModeAnd},
		{"prefix", "quart*", "t10", index.ModeAnd},
		{"cafe without accent", "cafe friday", "t19", index.ModeAnd},
		{"or fallback", "plumber zeppelin", "t7", index.ModeOr},
		{"channel filter", "invoice channel:email", "t13", index.ModeAnd},
		{"from filter", "from:ann@example.com invoice", "t13", index.ModeAnd},
		{"type filter", "invoice type:assistant", "t13", index.ModeAnd},
		{"filters only", "channel:email", "t13", index.ModeAnd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := search(t, ix, tc.q)
			if res.Mode != tc.wantMode {
				t.Errorf("mode %q, want %q", res.Mode, tc.wantMode)
			}
			if len(res.Hits) == 0 {
				t.Fatalf("no hits")
			}
			if h := res.Hits[0]; h.Turn != tc.wantTurn {
				t.Errorf("first hit %s seq %d (%q), want one of %s", h.Turn, h.Seq, h.Snippet, tc.wantTurn)
			}
		})
	}
}

func TestHitFields(t *testing.T) {
	ix := openIndex(t, sample)
	res := search(t, ix, "invoice october")
	h := res.Hits[0]
	if h.Seq != 13 || h.Type != "user" || h.Channel != "email" || h.From != "Ann@Example.com" || h.Turn != "t13" {
		t.Errorf("hit %+v", h)
	}
	if !strings.Contains(h.Snippet, index.MarkStart+"invoice"+index.MarkEnd) || !strings.Contains(h.Snippet, index.MarkStart+"October"+index.MarkEnd) {
		t.Errorf("snippet %q does not mark the terms", h.Snippet)
	}
	if !h.TS.Equal(t0.Add(13*time.Hour)) || h.Score <= 0 {
		t.Errorf("ts %v score %v", h.TS, h.Score)
	}
	// The reply carries its input's channel.
	res = search(t, ix, "drafted invoice")
	if h := res.Hits[0]; h.Seq != 14 || h.Type != "assistant" || h.Channel != "email" || h.From != "" {
		t.Errorf("assistant hit %+v", h)
	}
}

// A reply indexed in a later batch than its input still gets its channel.
func TestReplyChannelAcrossBatches(t *testing.T) {
	evs := convo("MAIL please send the invoice", "I've drafted the invoice email.")
	ix := openIndex(t, evs[:1])
	if err := ix.Add(context.Background(), evs[1:]); err != nil {
		t.Fatal(err)
	}
	res := search(t, ix, "drafted invoice type:assistant")
	if len(res.Hits) != 1 || res.Hits[0].Channel != "email" {
		t.Errorf("hits %+v, want the reply with channel email", res.Hits)
	}
}

func TestExcludeTurnAndDates(t *testing.T) {
	ix := openIndex(t, sample)
	res, err := ix.Search(context.Background(), "birthday", index.Options{ExcludeTurn: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 0 {
		t.Errorf("the excluded turn's messages were hits: %+v", res.Hits)
	}
	day := t0.Format("2006-01-02")
	for q, want := range map[string]int{
		"birthday before:" + day: 0,
		"birthday after:" + day:  2,
		"birthday before:" + t0.Add(90*time.Minute).Format(time.RFC3339): 1,
	} {
		if got := len(search(t, ix, q).Hits); got != want {
			t.Errorf("%s: %d hits, want %d", q, got, want)
		}
	}
}

func TestRecencyBreaksTies(t *testing.T) {
	ix := openIndex(t, convo("dentist appointment", "ok", "dentist appointment", "ok"))
	res := search(t, ix, "dentist appointment")
	if len(res.Hits) != 2 || res.Hits[0].Seq != 4 || res.Hits[1].Seq != 1 {
		t.Errorf("hits %+v: want the newer equal match first", res.Hits)
	}
	// A clearly better old match beats a weak new one.
	ix = openIndex(t, convo("the dentist appointment is on Monday at nine", "ok", "dentist", "ok",
		strings.Repeat("something else entirely ", 20)+"appointment", "ok"))
	if res := search(t, ix, "dentist appointment"); res.Hits[0].Seq != 1 {
		t.Errorf("first hit %+v, want seq 1", res.Hits[0])
	}
}

// Hostile and odd queries: a clear error or plain words, never an SQL
// error string, never a crash.
func TestHostileQueries(t *testing.T) {
	ix := openIndex(t, sample)
	for _, tc := range []struct {
		q       string
		wantErr string // "" means it must run
	}{
		{`NEAR(birthday sister)`, ""},
		{`content:birthday`, ""},
		{`col:birthday`, ""},
		{`"unbalanced quote birthday`, ""},
		{`birthday" sister`, ""},
		{`birthday AND OR NOT sister`, ""},
		{`* ^ - + ( ) { } :`, "no words"},
		{`the of and is`, ""}, // only common words: searched as they are
		{`''; DROP TABLE docs; --`, ""},
		{`type:robot birthday`, "type:robot"},
		{`before:yesterday birthday`, "before:yesterday"},
		{`from: birthday`, "from: needs a value"},
		{strings.Repeat("birthday ", 2000), "too long"},
		{"birthday \xff\xfe", "UTF-8"},
		{"alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec", "terms"},
		{"", "no words"},
		{`"" sister`, ""},
		{`a*`, ""},
		{`sister*`, ""},
		{"\x00\x01 birthday", ""},
	} {
		res, err := ix.Search(context.Background(), tc.q, index.Options{})
		name := tc.q
		if len(name) > 40 {
			name = name[:40]
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want one saying %q", name, err, tc.wantErr)
		case err != nil && !index.IsQueryError(err):
			t.Errorf("%q: %v is not a query error", name, err)
		case err != nil && strings.Contains(strings.ToLower(err.Error()), "sql"):
			t.Errorf("%q: error %q leaks SQL", name, err)
		}
		_ = res
	}
	// The index is intact afterwards.
	if res := search(t, ix, "birthday sister"); len(res.Hits) == 0 {
		t.Fatal("index damaged by hostile queries")
	}
}

func TestAddSkipsWhatIsIndexed(t *testing.T) {
	ix := openIndex(t, sample[:6])
	// Overlapping batch: seqs 1..6 again and more.
	if err := ix.Add(context.Background(), sample); err != nil {
		t.Fatal(err)
	}
	st, err := ix.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, e := range sample {
		if e.Type == event.User || e.Type == event.Assistant {
			want++
		}
	}
	if st.Docs != int64(want) || st.LastSeq != sample[len(sample)-1].Seq {
		t.Errorf("stats %+v, want %d docs, last seq %d", st, want, sample[len(sample)-1].Seq)
	}
}

func TestMemorySections(t *testing.T) {
	ix := openIndex(t, sample)
	ctx := context.Background()
	docs := []index.Doc{
		{TS: t0, Content: "## 2026-10-01 — manual\nThe user's dog is called Biscuit and eats twice a day."},
		{TS: t0.Add(24 * time.Hour), Content: "## 2026-10-02 — idle\nDiscussed the quarterly report deadline."},
	}
	if err := ix.SetMemory(ctx, docs, "h1"); err != nil {
		t.Fatal(err)
	}
	res := search(t, ix, "dog biscuit")
	if len(res.Hits) != 1 || res.Hits[0].Type != index.TypeMemory || res.Hits[0].Seq != 0 {
		t.Fatalf("memory hits %+v", res.Hits)
	}
	if res := search(t, ix, "quarterly type:memory"); len(res.Hits) != 1 {
		t.Errorf("type:memory: %+v", res.Hits)
	}
	// Replacing memory forgets the old sections in the full-text table too.
	if err := ix.SetMemory(ctx, docs[1:], "h2"); err != nil {
		t.Fatal(err)
	}
	if res := search(t, ix, "biscuit"); len(res.Hits) != 0 {
		t.Errorf("old memory still found: %+v", res.Hits)
	}
	if h, _ := ix.MemoryHash(ctx); h != "h2" {
		t.Errorf("hash %q", h)
	}
	// UpdateMemory stores what changed, with its own hash.
	if err := ix.UpdateMemory(ctx, docs); err != nil {
		t.Fatal(err)
	}
	h1, _ := ix.MemoryHash(ctx)
	if res := search(t, ix, "biscuit"); len(res.Hits) != 1 || h1 == "h2" {
		t.Errorf("after UpdateMemory: %d hits, hash %q", len(res.Hits), h1)
	}
}

func TestDamagedIndexIsRebuilt(t *testing.T) {
	for name, damage := range map[string]func(path string) error{
		"garbage": func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("not a database ", 1000)), 0o600) },
		"truncated": func(p string) error {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			return os.Truncate(p, fi.Size()/3)
		},
		"older schema": func(p string) error {
			ix, _, err := index.Open(p)
			if err != nil {
				return err
			}
			defer ix.Close()
			return ix.ForceSchemaVersionForTest(0)
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), index.FileName)
			ix, _, err := index.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			var many []string
			for i := range 400 {
				many = append(many, fmt.Sprintf("message number %d about the garden", i))
			}
			if err := ix.Add(context.Background(), convo(many...)); err != nil {
				t.Fatal(err)
			}
			ix.Close()
			if err := damage(path); err != nil {
				t.Fatal(err)
			}
			// Read-only use refuses to trust it, or finds it unreadable.
			if ro, err := index.OpenReadOnly(path); err == nil {
				_, serr := ro.Search(context.Background(), "garden", index.Options{})
				ro.Close()
				if name != "truncated" && serr == nil {
					t.Errorf("read-only open trusted a damaged index")
				}
			}
			ix, why, err := index.Open(path)
			if err != nil {
				t.Fatalf("open damaged: %v", err)
			}
			defer ix.Close()
			if name != "truncated" && why == "" {
				t.Errorf("no rebuild reason")
			}
			if name == "truncated" && why == "" {
				// SQLite may open a truncated file; the damage shows on use
				// (the Follower rebuilds then, see follow_test.go).
				_, err := ix.Search(context.Background(), "garden", index.Options{Limit: 500})
				if err == nil {
					st, _ := ix.Stats(context.Background())
					if st.Docs == 400 {
						t.Skip("truncation left every page readable")
					}
				}
				return
			}
			if st, err := ix.Stats(context.Background()); err != nil || st.Docs != 0 || st.LastSeq != 0 {
				t.Errorf("rebuilt index: %+v %v", st, err)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v %v", fi.Mode(), err)
			}
		})
	}
}

func TestReadOnlyAndMemoryIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), index.FileName)
	if _, err := index.OpenReadOnly(path); !os.IsNotExist(err) {
		t.Fatalf("missing index: %v", err)
	}
	ix, _, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(context.Background(), sample); err != nil {
		t.Fatal(err)
	}
	ro, err := index.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	if res := search(t, ro, "sister birthday"); len(res.Hits) == 0 {
		t.Error("read-only index finds nothing")
	}
	later := convo("x", "y")
	for i := range later {
		later[i].Seq += 100
	}
	if err := ro.Add(context.Background(), later); err == nil {
		t.Error("read-only index accepted a write")
	}
	ro.Close()
	ix.Close()

	mem, err := index.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if err := mem.Add(context.Background(), sample); err != nil {
		t.Fatal(err)
	}
	got := search(t, mem, "muller")
	if !slices.ContainsFunc(got.Hits, func(h index.Hit) bool { return h.Seq == 4 }) {
		t.Errorf("memory index: %+v", got.Hits)
	}
}

// A query matching more than RankWindow messages ranks the newest
// RankWindow of them and says so; memory sections are ranked all the same.
func TestBroadQueryRanksTheNewestWindow(t *testing.T) {
	t.Parallel() // independent: its own data directory
	var texts []string
	for i := range index.RankWindow + 500 {
		texts = append(texts, fmt.Sprintf("weather report number %d", i), "ok")
	}
	ix := openIndex(t, convo(texts...))
	ctx := context.Background()
	if err := ix.SetMemory(ctx, []index.Doc{{TS: t0, Content: "weather"}}, "h"); err != nil {
		t.Fatal(err)
	}
	res, err := ix.Search(ctx, "weather", index.Options{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Broad || len(res.Hits) != index.RankWindow {
		t.Fatalf("broad %v, %d hits; want the window, the memory section in it", res.Broad, len(res.Hits))
	}
	oldest := int64(1 << 62)
	for _, h := range res.Hits {
		if h.Type != index.TypeMemory {
			oldest = min(oldest, h.Seq)
		}
	}
	if want := int64(3*501 + 1); oldest != want { // the memory section and 4,999 newest turns are in
		t.Errorf("oldest ranked seq %d, want %d", oldest, want)
	}
	if res.Hits[0].Type != index.TypeMemory {
		t.Errorf("the one-word memory section should rank first: %+v", res.Hits[0])
	}
	if res := search(t, ix, "weather number 4711"); res.Broad {
		t.Error("a narrow query reported broad")
	}
}

// Attachment names are searchable, and a message of files alone is indexed.
func TestAttachmentNamesIndexed(t *testing.T) {
	evs := convo("here are the numbers", "thanks")
	evs[0] = event.New(event.User, evs[0].Turn, evs[0].TS.Std(), event.UserData{Channel: event.ChannelWeb, Content: "here are the numbers",
		Attachments: []event.Attachment{{SHA256: strings.Repeat("a", 64), Name: "quarterly-invoice.pdf", Type: "application/pdf", Size: 10}}})
	evs[0].Seq = 1
	only := event.New(event.User, "t9", t0.Add(9*time.Hour), event.UserData{Channel: event.ChannelWeb,
		Attachments: []event.Attachment{{SHA256: strings.Repeat("b", 64), Name: "holiday-photo.png", Type: "image/png", Size: 10}}})
	only.Seq = 9
	ix := openIndex(t, append(evs, only))
	for q, want := range map[string]int64{"invoice": 1, "holiday photo": 9} {
		res := search(t, ix, q)
		if len(res.Hits) != 1 || res.Hits[0].Seq != want {
			t.Errorf("search %q: %+v, want seq %d", q, res.Hits, want)
		}
	}
}
