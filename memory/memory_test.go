package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func user(ts time.Time, channel, from, content string) event.Event {
	return event.New(event.User, "", ts, event.UserData{Channel: channel, From: from, Content: content})
}

func assistant(ts time.Time, content string) event.Event {
	return event.New(event.Assistant, "", ts, event.AssistantData{Content: content})
}

// chat is a small conversation with tool events mixed in.
func chat() []event.Event {
	return []event.Event{
		user(t0, "web", "", "My flight to Lisbon leaves on 3 May at 07:15."),
		event.New(event.ToolCall, "t1", t0.Add(time.Second), event.ToolCallData{ID: "c1", Name: "history_search", Args: []byte(`{}`)}),
		event.New(event.ToolResult, "t1", t0.Add(time.Second), event.ToolResultData{ID: "c1", Name: "history_search", Output: "nothing"}),
		assistant(t0.Add(2*time.Second), "Noted: Lisbon, 3 May, 07:15."),
		event.New(event.TurnEnd, "t1", t0.Add(2*time.Second), event.TurnEndData{Status: event.StatusCompleted}),
		user(t0.Add(time.Minute), "email", "ann@example.com", "Book a table at Tasca do Chico for 4 people."),
		assistant(t0.Add(time.Minute+time.Second), "I cannot book tables, but Tasca do Chico takes phone reservations."),
	}
}

func fixed(s string) Summarizer {
	return SummarizerFunc(func(context.Context, []event.Event) (string, error) { return s, nil })
}

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "data", "memory"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestModes(t *testing.T) {
	s := open(t)
	if err := s.WriteShortTerm(chat()); err != nil {
		t.Fatalf("WriteShortTerm: %v", err)
	}
	if _, err := s.Consolidate(context.Background(), nil, chat(), "manual", t0); err != nil {
		t.Fatalf("Consolidate: %v", err)
	}
	for _, tc := range []struct {
		path string
		want os.FileMode
	}{
		{s.Dir(), os.ModeDir | 0o700},
		{filepath.Join(s.Dir(), ShortTermFile), 0o600},
		{filepath.Join(s.Dir(), LongTermFile), 0o600},
	} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode(); got != tc.want {
			t.Errorf("mode of %s = %v, want %v", tc.path, got, tc.want)
		}
	}
}

func TestOpenNotADirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(f); err == nil {
		t.Fatal("Open of a regular file succeeded, want an error")
	}
}

func TestMissingFilesReadEmpty(t *testing.T) {
	s := open(t)
	for name, read := range map[string]func() (string, error){
		"LongTerm":           s.LongTerm,
		"ShortTerm":          s.ShortTerm,
		"LongTermForContext": func() (string, error) { return s.LongTermForContext(100) },
	} {
		got, err := read()
		if got != "" || err != nil {
			t.Errorf("%s on a new store = %q, %v; want \"\", nil", name, got, err)
		}
	}
}

func TestConsolidateAppendsDatedSections(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	e1, err := s.Consolidate(ctx, fixed("First summary.\n"), chat(), "idle-timeout", t0)
	if err != nil {
		t.Fatalf("Consolidate 1: %v", err)
	}
	later := time.Date(2026, 11, 22, 16, 45, 30, 0, time.FixedZone("CET", 3600))
	e2, err := s.Consolidate(ctx, fixed("  ## Facts\n- one\n#Tag stays\n### Deep stays\n"), chat()[:4], "manual", later)
	if err != nil {
		t.Fatalf("Consolidate 2: %v", err)
	}
	got, err := s.LongTerm()
	if err != nil {
		t.Fatal(err)
	}
	want := "## 2026-11-22 10:00 UTC — idle-timeout (2 exchanges)\n\nFirst summary.\n" +
		"\n## 2026-11-22 15:45 UTC — manual (1 exchange)\n\n### Facts\n- one\n#Tag stays\n### Deep stays\n"
	if got != want {
		t.Fatalf("long_term.md =\n%s\nwant\n%s", got, want)
	}
	if e1.Heading != "2026-11-22 10:00 UTC — idle-timeout (2 exchanges)" || e1.Summary != "First summary." || e1.Fallback || e1.Err != nil {
		t.Errorf("first Entry = %+v", e1)
	}
	if e2.Heading != "2026-11-22 15:45 UTC — manual (1 exchange)" || e2.Fallback {
		t.Errorf("second Entry = %+v", e2)
	}
}

func TestConsolidateGivesSummarizerTheConversation(t *testing.T) {
	s := open(t)
	var got []event.Type
	sum := SummarizerFunc(func(_ context.Context, tr []event.Event) (string, error) {
		for _, e := range tr {
			got = append(got, e.Type)
		}
		return "ok", nil
	})
	if _, err := s.Consolidate(context.Background(), sum, chat(), "manual", t0); err != nil {
		t.Fatal(err)
	}
	want := []event.Type{event.User, event.Assistant, event.User, event.Assistant}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("summarizer got %v, want %v", got, want)
	}
}

func TestConsolidateFallback(t *testing.T) {
	boom := errors.New("model unavailable")
	tests := []struct {
		name    string
		sum     Summarizer
		wantErr error
	}{
		{"no summarizer", nil, nil},
		{"summarizer fails", SummarizerFunc(func(context.Context, []event.Event) (string, error) { return "partial", boom }), boom},
		{"summarizer returns nothing", fixed(" \n\t"), ErrEmptySummary},
		{"summarizer returns empty", fixed(""), ErrEmptySummary},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			e, err := s.Consolidate(context.Background(), tc.sum, chat(), "idle-timeout", t0)
			if err != nil {
				t.Fatalf("Consolidate: %v", err)
			}
			if !e.Fallback {
				t.Errorf("Fallback = false, want true")
			}
			if !errors.Is(e.Err, tc.wantErr) || (tc.wantErr == nil && e.Err != nil) {
				t.Errorf("Err = %v, want %v", e.Err, tc.wantErr)
			}
			want := Extractive(chat(), ExtractiveChars)
			if e.Summary != want || want == "" {
				t.Errorf("Summary = %q, want the extractive %q", e.Summary, want)
			}
			lt, _ := s.LongTerm()
			if !strings.HasSuffix(lt, "\n\n"+want+"\n") {
				t.Errorf("long_term.md = %q, want it to end with the extractive summary", lt)
			}
		})
	}
}

func TestConsolidateCancelledSummarizer(t *testing.T) {
	s := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	sum := SummarizerFunc(func(ctx context.Context, _ []event.Event) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	type result struct {
		e   Entry
		err error
	}
	done := make(chan result, 1)
	go func() {
		e, err := s.Consolidate(ctx, sum, chat(), "idle-timeout", t0)
		done <- result{e, err}
	}()
	<-started
	cancel()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("Consolidate: %v", r.err)
		}
		if !r.e.Fallback || !errors.Is(r.e.Err, context.Canceled) {
			t.Fatalf("Entry = %+v, want Fallback with context.Canceled", r.e)
		}
		lt, _ := s.LongTerm()
		if !strings.Contains(lt, r.e.Summary) || r.e.Summary == "" {
			t.Fatalf("long_term.md %q lacks the fallback summary", lt)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Consolidate did not return after its context was cancelled")
	}
}

func TestConsolidateNothingToSay(t *testing.T) {
	s := open(t)
	only := []event.Event{event.New(event.Notice, "", t0, event.TextData{Text: "hi"})}
	for _, tr := range [][]event.Event{nil, only} {
		called := false
		sum := SummarizerFunc(func(context.Context, []event.Event) (string, error) { called = true; return "x", nil })
		e, err := s.Consolidate(context.Background(), sum, tr, "idle-timeout", t0)
		if err != nil || e != (Entry{}) || called {
			t.Fatalf("Consolidate(%d events) = %+v, %v (summarizer called %v); want zero Entry, nil, not called", len(tr), e, err, called)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), LongTermFile)); !os.IsNotExist(err) {
		t.Fatalf("long_term.md exists after empty consolidations (stat err %v)", err)
	}
	// Only whitespace: a section is still written, saying so.
	e, err := s.Consolidate(context.Background(), nil, []event.Event{user(t0, "web", "", "   ")}, "manual", t0)
	if err != nil || e.Summary == "" {
		t.Fatalf("Consolidate(whitespace) = %+v, %v; want a non-empty placeholder summary", e, err)
	}
}

func TestConsolidateConcurrentWithReads(t *testing.T) {
	s := open(t)
	const writers, readers = 8, 4
	var wg sync.WaitGroup
	reads := make(chan string, 1000)
	stop := make(chan struct{})
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				lt, err := s.LongTerm()
				if err != nil {
					t.Errorf("LongTerm: %v", err)
					return
				}
				if _, err := s.LongTermForContext(300); err != nil {
					t.Errorf("LongTermForContext: %v", err)
					return
				}
				select {
				case reads <- lt:
				default:
				}
			}
		}()
	}
	var ww sync.WaitGroup
	for i := range writers {
		ww.Add(1)
		go func() {
			defer ww.Done()
			sum := fixed(fmt.Sprintf("summary %d", i))
			if _, err := s.Consolidate(context.Background(), sum, chat(), "idle-timeout", t0); err != nil {
				t.Errorf("Consolidate %d: %v", i, err)
			}
		}()
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	close(reads)

	final, err := s.LongTerm()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(final, "\n## ") + 1; n != writers || !strings.HasPrefix(final, "## ") {
		t.Fatalf("long_term.md has %d sections, want %d:\n%s", n, writers, final)
	}
	for i := range writers {
		if !strings.Contains(final, fmt.Sprintf("\n\nsummary %d\n", i)) {
			t.Errorf("long_term.md lacks summary %d", i)
		}
	}
	// Appends are serialised and atomic, so every read saw a prefix of the
	// final file, never a torn or lost write.
	for lt := range reads {
		if !strings.HasPrefix(final, lt) {
			t.Fatalf("a concurrent read saw %q, not a prefix of the final file", lt)
		}
	}
}

func TestLongTermForContext(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	for i, body := range []string{"alpha facts", "beta facts", "gamma facts"} {
		if _, err := s.Consolidate(ctx, fixed(body), chat(), "idle-timeout", t0.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	full, _ := s.LongTerm()
	sections := strings.SplitAfter(full, "facts\n")
	last, lastTwo := sections[2], sections[1]+sections[2]
	tests := []struct {
		name     string
		maxBytes int
		want     string
	}{
		{"no limit", 0, full},
		{"negative is no limit", -1, full},
		{"fits", len(full), full},
		{"two newest sections", len(omittedNote) + len(lastTwo) - 1, omittedNote + strings.TrimPrefix(lastTwo, "\n")},
		{"cut at the heading", len(omittedNote) + len(lastTwo) - 2, omittedNote + strings.TrimPrefix(last, "\n")},
		{"newest section", len(omittedNote) + len(last) + 5, omittedNote + strings.TrimPrefix(last, "\n")},
		{"not even the note", len(omittedNote), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.LongTermForContext(tc.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("LongTermForContext(%d) =\n%q\nwant\n%q", tc.maxBytes, got, tc.want)
			}
		})
	}
}

func TestNewestWithinInvariants(t *testing.T) {
	text := "## 2026-11-20 09:00 UTC — manual (1 exchange)\n\n- user (web): Grüße aus Köln — ünïcödé everywhere.\n" +
		"\n## 2026-11-21 09:00 UTC — idle-timeout (3 exchanges)\n\n" + strings.Repeat("- a long line of memory\n", 20) +
		"\n## 2026-11-22 09:00 UTC — idle-timeout (1 exchange)\n\n" + strings.Repeat("ß", 300) + "\n"
	for max := 1; max <= len(text)+2; max++ {
		got := newestWithin(text, max)
		if len(got) > max {
			t.Fatalf("newestWithin(%d) is %d bytes", max, len(got))
		}
		if got == text {
			continue
		}
		kept, ok := strings.CutPrefix(got, omittedNote)
		if !ok {
			if got != "" {
				t.Fatalf("newestWithin(%d) = %q: cut without the note", max, got)
			}
			continue
		}
		if !strings.HasSuffix(text, kept) || !strings.HasPrefix(text[len(text)-len(kept):], kept) {
			t.Fatalf("newestWithin(%d) kept %q, not the end of the text", max, kept)
		}
		if !strings.HasPrefix(kept, "## ") && strings.Contains(text[len(text)-(max-len(omittedNote)):], "\n## ") {
			t.Fatalf("newestWithin(%d) = %q: a heading fitted but the cut is not on one", max, got)
		}
		if !utf8.ValidString(kept) {
			t.Fatalf("newestWithin(%d) cut a rune in half", max)
		}
	}
}

func TestWriteShortTerm(t *testing.T) {
	s := open(t)
	if err := s.WriteShortTerm([]event.Event{user(t0, "web", "", "old")}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteShortTerm(chat()); err != nil {
		t.Fatal(err)
	}
	got, err := s.ShortTerm()
	if err != nil {
		t.Fatal(err)
	}
	want := `# Short-term context

2 exchanges, 2026-11-22 10:00 UTC to 2026-11-22 10:01 UTC.

### user · web · 2026-11-22 10:00:00 UTC

My flight to Lisbon leaves on 3 May at 07:15.

### assistant · 2026-11-22 10:00:02 UTC

Noted: Lisbon, 3 May, 07:15.

### user · email · ann@example.com · 2026-11-22 10:01:00 UTC

Book a table at Tasca do Chico for 4 people.

### assistant · 2026-11-22 10:01:01 UTC

I cannot book tables, but Tasca do Chico takes phone reservations.
`
	if got != want {
		t.Fatalf("short_term.md =\n%s\nwant\n%s", got, want)
	}
	entries, err := os.ReadDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != ShortTermFile {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("memory dir holds %v, want only %s (no temp files left behind)", names, ShortTermFile)
	}

	if err := s.WriteShortTerm(nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ShortTerm(); !strings.Contains(got, "Empty") {
		t.Fatalf("short_term.md for no events = %q, want it to say it is empty", got)
	}
}

func TestContextNoteNamesHistoryTools(t *testing.T) {
	for _, tool := range []string{"history_search", "history_get_recent", "history_get_range"} {
		if !strings.Contains(ContextNote(), tool) {
			t.Errorf("ContextNote() = %q, want it to name %s", ContextNote(), tool)
		}
	}
}

func TestSections(t *testing.T) {
	text := "Notes kept by hand.\n\n## 2026-11-22 10:00 UTC — idle-timeout (2 exchanges)\n\nalpha facts\n### a demoted heading\n\n## not a time\nbeta\n"
	got := Sections(text)
	if len(got) != 3 {
		t.Fatalf("%d sections: %+v", len(got), got)
	}
	if got[0].Heading != "" || got[0].Text != "Notes kept by hand." {
		t.Errorf("preamble %+v", got[0])
	}
	want := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if got[1].Heading != "2026-11-22 10:00 UTC — idle-timeout (2 exchanges)" || !got[1].Time.Equal(want) ||
		!strings.HasSuffix(got[1].Text, "### a demoted heading") {
		t.Errorf("section %+v", got[1])
	}
	if got[2].Heading != "not a time" || !got[2].Time.IsZero() || got[2].Text != "## not a time\nbeta" {
		t.Errorf("section %+v", got[2])
	}
	if len(Sections("")) != 0 {
		t.Error("empty text has sections")
	}
}

// A section that could not be written is kept by the caller and lands
// whole, once, when the file can be written again; summarising writes
// nothing.
func TestAppendLongTermAfterAFailedWrite(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := Summarize(context.Background(), fixed("Remember the milk."), chat(), "manual", t0)
	path := filepath.Join(s.Dir(), LongTermFile)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Summarize wrote %s (%v)", path, err)
	}
	// A directory in its place: the file cannot be replaced, as root or not.
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendLongTerm(e); err == nil {
		t.Fatal("AppendLongTerm succeeded over a directory")
	}
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendLongTerm(e); err != nil {
		t.Fatal(err)
	}
	lt, _ := s.LongTerm()
	if lt != e.Section() || strings.Count(lt, "## ") != 1 || !strings.Contains(lt, "Remember the milk.") {
		t.Fatalf("long_term.md:\n%s\nwant the one section:\n%s", lt, e.Section())
	}
}
