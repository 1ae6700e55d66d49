// Package memory keeps the assistant's two memory files: short_term.md, the
// current context as Markdown, and long_term.md, the dated summaries that
// resets consolidate into it (DESIGN.md rule 8). It imports only event of
// ours.
package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// File names inside the memory directory.
const (
	ShortTermFile = "short_term.md"
	LongTermFile  = "long_term.md"
)

const (
	dirPerm  = 0o700
	filePerm = 0o600

	// ExtractiveChars caps the offline summary Consolidate falls back to.
	ExtractiveChars = 2000
	// maxSummaryChars caps what a Summarizer may add to long_term.md in one
	// consolidation; a longer summary is cut with "…".
	maxSummaryChars = 16000
	// omittedNote starts LongTermForContext's result when older sections
	// did not fit.
	omittedNote = "(Older long-term memory was left out here for space.)\n\n"
)

// ErrEmptySummary is Entry.Err when a Summarizer returned only whitespace.
var ErrEmptySummary = errors.New("summarizer returned an empty summary")

// Summarizer is implemented by agent backends that can summarise a
// conversation with their model. Summarize gets the outgoing context, user
// and assistant events oldest first, and returns Markdown; it must return
// promptly once ctx is cancelled.
type Summarizer interface {
	Summarize(ctx context.Context, transcript []event.Event) (string, error)
}

// SummarizerFunc lets an ordinary function be a Summarizer, for wiring in
// main (agent backends may not import this package).
type SummarizerFunc func(ctx context.Context, transcript []event.Event) (string, error)

// Summarize calls f.
func (f SummarizerFunc) Summarize(ctx context.Context, transcript []event.Event) (string, error) {
	return f(ctx, transcript)
}

var _ Summarizer = SummarizerFunc(nil)

// Entry is one consolidation as appended to long_term.md.
type Entry struct {
	// Heading is the section heading, without the leading "## ", as in
	// "2026-11-22 10:00 UTC — idle-timeout (3 exchanges)".
	Heading string
	// Summary is the section body.
	Summary string
	// Fallback is true when Summary is the offline Extractive summary: there
	// was no Summarizer, or it failed or returned nothing.
	Fallback bool
	// Err is why the Summarizer was not used (its error, or
	// ErrEmptySummary); nil when it succeeded or there was none.
	Err error
}

// Store reads and writes the memory files in one directory. It is safe for
// concurrent use: writers are serialised by a mutex, and every write
// replaces its file atomically, so readers need no lock and see either the
// old content or the new. Consolidate may therefore run on a goroutine of
// its own while turns read LongTermForContext.
type Store struct {
	dir string
	mu  sync.Mutex // serialises writers; held only around read-modify-write, never while summarising
}

// Open returns the Store for dir, creating the directory (0700) if needed.
// The files are created 0600 on first write.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("open memory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("open memory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open memory: %s is not a directory", dir)
	}
	return &Store{dir: dir}, nil
}

// Dir returns the memory directory.
func (s *Store) Dir() string { return s.dir }

// LongTerm returns the whole of long_term.md, or "" if it does not exist yet.
func (s *Store) LongTerm() (string, error) {
	return s.read(LongTermFile)
}

// ShortTerm returns short_term.md, or "" if it does not exist yet.
func (s *Store) ShortTerm() (string, error) {
	return s.read(ShortTermFile)
}

func (s *Store) read(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return string(b), nil
}

// LongTermForContext returns the newest part of long-term memory that fits
// in maxBytes, for a turn's context. When older memory has to be left out,
// the cut falls on a section heading where one fits, else on a line
// boundary, and the result starts with a note saying that something was
// left out; the note counts towards maxBytes. If not even the note fits,
// the result is "". maxBytes <= 0 means no limit.
func (s *Store) LongTermForContext(maxBytes int) (string, error) {
	lt, err := s.LongTerm()
	if err != nil {
		return "", err
	}
	return newestWithin(lt, maxBytes), nil
}

// newestWithin cuts text as LongTermForContext describes.
func newestWithin(text string, maxBytes int) string {
	if maxBytes <= 0 || len(text) <= maxBytes {
		return text
	}
	budget := maxBytes - len(omittedNote)
	if budget <= 0 {
		return ""
	}
	from := len(text) - budget // the earliest byte we may keep
	tail := text[from:]
	var kept string
	switch {
	case strings.HasPrefix(tail, "## ") && text[from-1] == '\n':
		kept = tail
	case strings.Contains(tail, "\n## "):
		kept = tail[strings.Index(tail, "\n## ")+1:]
	case strings.Contains(tail, "\n"):
		// One section bigger than the budget: keep its newest lines.
		kept = tail[strings.Index(tail, "\n")+1:]
	default:
		// A single line bigger than the budget: keep its end, on a rune
		// boundary.
		for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
			tail = tail[1:]
		}
		kept = tail
	}
	return omittedNote + kept
}

// WriteShortTerm replaces short_term.md with the current context rendered
// as Markdown: the user and assistant events of events, oldest first, each
// with its role, channel, sender and time. Other event types are skipped.
func (s *Store) WriteShortTerm(events []event.Event) error {
	data := renderShortTerm(events)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := atomicfile.Write(filepath.Join(s.dir, ShortTermFile), []byte(data), filePerm); err != nil {
		return fmt.Errorf("write short-term memory: %w", err)
	}
	return nil
}

// Consolidate summarises transcript (see Summarize) and appends the
// summary to long_term.md (see AppendLongTerm). A transcript with no user
// or assistant events appends nothing and returns the zero Entry. The
// error is non-nil only when the file could not be read or written; the
// Entry is filled in even then, so a caller may retry AppendLongTerm with
// it without summarising again.
func (s *Store) Consolidate(ctx context.Context, sum Summarizer, transcript []event.Event, reason string, now time.Time) (Entry, error) {
	e := Summarize(ctx, sum, transcript, reason, now)
	if e.Heading == "" {
		return e, nil
	}
	return e, s.AppendLongTerm(e)
}

// Summarize makes the long-term memory section for transcript, headed with
// now (in UTC), reason and the number of exchanges (user inputs):
//
//	## 2026-11-22 10:00 UTC — idle-timeout (3 exchanges)
//
//	<summary>
//
// Only the user and assistant events of transcript count; those are what
// sum gets. The summary comes from sum; when sum is nil, fails or returns
// only whitespace, the offline Extractive summary is used instead and
// Entry.Fallback is set, so a cancelled ctx still gives a section. Headings
// inside the summary are demoted so that every "## " line in the file is a
// consolidation. A transcript with no user or assistant events gives the
// zero Entry. It writes nothing.
func Summarize(ctx context.Context, sum Summarizer, transcript []event.Event, reason string, now time.Time) Entry {
	conv := conversation(transcript)
	if len(conv) == 0 {
		return Entry{}
	}
	var e Entry
	exchanges := 0
	for _, ev := range conv {
		if ev.Type == event.User {
			exchanges++
		}
	}
	reason = strings.Join(strings.Fields(reason), " ")
	if reason == "" {
		reason = "reset"
	}
	e.Heading = fmt.Sprintf("%s — %s (%d %s)", now.UTC().Format(headingTime), reason, exchanges, plural(exchanges, "exchange", "exchanges"))

	if sum != nil {
		text, err := sum.Summarize(ctx, conv)
		switch {
		case err != nil:
			e.Err = err
		case strings.TrimSpace(text) == "":
			e.Err = ErrEmptySummary
		default:
			e.Summary = cleanSummary(text)
		}
	}
	if e.Summary == "" {
		e.Fallback = true
		e.Summary = Extractive(conv, ExtractiveChars)
		if e.Summary == "" {
			e.Summary = "(No text worth keeping.)"
		}
	}
	return e
}

// Section is e as AppendLongTerm writes it: its heading line, a blank
// line and the summary.
func (e Entry) Section() string {
	return "## " + e.Heading + "\n\n" + e.Summary + "\n"
}

// AppendLongTerm appends e as a section to long_term.md: the file is read,
// appended to in memory and replaced atomically, so a failed write leaves
// it as it was and the same Entry may be appended again later. Concurrent
// calls append one after the other.
func (s *Store) AppendLongTerm(e Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.LongTerm()
	if err != nil {
		return fmt.Errorf("append to long-term memory: %w", err)
	}
	sec := e.Section()
	var b strings.Builder
	b.Grow(len(old) + len(sec) + 2)
	b.WriteString(old)
	if old != "" {
		if !strings.HasSuffix(old, "\n") {
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	b.WriteString(sec)
	if err := atomicfile.Write(filepath.Join(s.dir, LongTermFile), []byte(b.String()), filePerm); err != nil {
		return fmt.Errorf("append to long-term memory: %w", err)
	}
	return nil
}

// ContextNote is the sentence added to the agent's context after a reset.
func ContextNote() string {
	return "Older conversation was consolidated into long-term memory; use history_search (keywords; add type:memory to search the long-term memory items), history_get_recent or history_get_range to look further back."
}

// conversation returns the user and assistant events of events.
func conversation(events []event.Event) []event.Event {
	var out []event.Event
	for _, e := range events {
		if e.Type == event.User || e.Type == event.Assistant {
			out = append(out, e)
		}
	}
	return out
}

// cleanSummary trims a Summarizer's text, caps its length and demotes its
// level 1 and 2 headings to level 3, so that the file's "## " lines stay
// the consolidation headings LongTermForContext cuts at.
func cleanSummary(text string) string {
	text = strings.TrimSpace(strings.ReplaceAll(text, "\r\n", "\n"))
	if utf8.RuneCountInString(text) > maxSummaryChars {
		text = string([]rune(text)[:maxSummaryChars-1]) + "…"
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if h := strings.TrimLeft(l, "#"); len(l)-len(h) <= 2 && len(h) < len(l) && (h == "" || h[0] == ' ' || h[0] == '\t') {
			lines[i] = "###" + h
		}
	}
	return strings.Join(lines, "\n")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Section is one consolidation in long_term.md: its "## " heading line
// (without the "## ") and everything up to the next one.
type Section struct {
	Heading string
	// Time is when it was written, from the heading; zero if the heading
	// was edited into another shape.
	Time time.Time
	// Text is the whole section, heading included.
	Text string
}

// Sections splits long-term memory text into its sections, oldest first.
// Text before the first heading (a hand-written preamble) is a section
// with an empty heading.
func Sections(text string) []Section {
	var out []Section
	add := func(s string) {
		if strings.TrimSpace(s) == "" {
			return
		}
		sec := Section{Text: strings.TrimSpace(s)}
		if h, ok := strings.CutPrefix(sec.Text, "## "); ok {
			sec.Heading, _, _ = strings.Cut(h, "\n")
			if len(sec.Heading) >= len(headingTime) {
				sec.Time, _ = time.Parse(headingTime, sec.Heading[:len(headingTime)])
			}
		}
		out = append(out, sec)
	}
	for {
		i := strings.Index(text, "\n## ")
		if i < 0 {
			add(text)
			return out
		}
		add(text[:i+1])
		text = text[i+1:]
	}
}

// headingTime is how a section heading starts.
const headingTime = "2006-01-02 15:04 MST"
