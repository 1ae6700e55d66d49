package memory

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
)

// demoReply mimics the demo backend's templated answer, which quotes the
// input and repeats the same boilerplate every turn.
func demoReply(content string, remembered int) string {
	return fmt.Sprintf("You said “%s” (%d words). I am the frontdesk demo assistant: I run offline without a language model, so I can only reflect your words back. "+
		"I remember %d earlier exchanges in this conversation, and every connected client sees this reply stream in word by word. "+
		"Set agent.backend in config.yaml to use a real model.", content, len(strings.Fields(content)), remembered)
}

func demoChat() []event.Event {
	inputs := []string{
		"Hi there!",
		"My name is Ann Keller and I work at Globex in Rotterdam.",
		"Please remember that my flight to Lisbon is on 3 May at 07:15.",
		"ok thanks",
		"I'm allergic to peanuts, so keep that in mind for restaurants.",
		"The trip budget is 1200 EUR and my colleague Bob joins on 5 May.",
	}
	var tr []event.Event
	for i, in := range inputs {
		ts := t0.Add(time.Duration(i) * time.Minute)
		tr = append(tr, user(ts, "web", "", in), assistant(ts.Add(time.Second), demoReply(in, i)))
	}
	return tr
}

func TestExtractiveEmpty(t *testing.T) {
	tests := map[string][]event.Event{
		"nil":                nil,
		"no conversation":    {event.New(event.Notice, "", t0, event.TextData{Text: "The current request was canceled."})},
		"whitespace":         {user(t0, "web", "", " \n\t "), assistant(t0, "")},
		"punctuation":        {user(t0, "web", "", "?!… --- ..."), assistant(t0, "👍")},
		"only stop words":    {user(t0, "web", "", "ok, thanks!"), assistant(t0, "You are welcome.")},
		"only a code block":  {user(t0, "web", "", "```\nfunc main() { panic(1) }\n```")},
		"undecodable events": {{Type: event.User, Data: []byte(`"not an object"`)}, {Type: event.Assistant}},
	}
	for name, tr := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Extractive(tr, 500); got != "" {
				t.Fatalf("Extractive = %q, want \"\"", got)
			}
		})
	}
}

func TestExtractivePicksFactsInOrder(t *testing.T) {
	got := Extractive(demoChat(), 400)
	t.Logf("summary:\n%s", got)
	facts := []string{
		"- user (web): My name is Ann Keller and I work at Globex in Rotterdam.",
		"- user (web): Please remember that my flight to Lisbon is on 3 May at 07:15.",
		"- user (web): I'm allergic to peanuts",
		"- user (web): The trip budget is 1200 EUR and my colleague Bob joins on 5 May.",
	}
	last := -1
	for _, f := range facts {
		i := strings.Index(got, f)
		if i < 0 {
			t.Fatalf("summary lacks %q", f)
		}
		if i < last {
			t.Fatalf("%q is out of chronological order", f)
		}
		last = i
	}
	for _, noise := range []string{"demo assistant", "agent.backend", "Hi there", "ok thanks", "You said"} {
		if strings.Contains(got, noise) {
			t.Errorf("summary keeps boilerplate or filler %q", noise)
		}
	}
}

func TestExtractivePrefersUserFactsUnderTightBudget(t *testing.T) {
	tr := []event.Event{
		assistant(t0, "Hello, how can I help you today with anything at all?"),
		user(t0.Add(time.Second), "console", "", "Our office moves to Keizersgracht 123 on 14 March."),
		assistant(t0.Add(2*time.Second), "That sounds like an exciting change for everybody involved."),
	}
	got := Extractive(tr, 80)
	want := "- user (console): Our office moves to Keizersgracht 123 on 14 March."
	if got != want {
		t.Fatalf("Extractive(80) = %q, want %q", got, want)
	}
}

func TestExtractiveJoinsSentencesOfOneMessage(t *testing.T) {
	tr := []event.Event{
		user(t0, "email", "ann@example.com", "The migration window is Sunday 02:00 to 04:00 CET. Hello. Jana from ops approves the migration window."),
	}
	got := Extractive(tr, 500)
	want := "- user (email, ann@example.com): The migration window is Sunday 02:00 to 04:00 CET. … Jana from ops approves the migration window."
	if got != want {
		t.Fatalf("Extractive =\n%q\nwant\n%q", got, want)
	}
}

// mixedChat is the demo chat, the chat with tools, and a 20 KiB paste.
func mixedChat() []event.Event {
	var prose strings.Builder
	for i := 0; prose.Len() < 20<<10; i++ {
		fmt.Fprintf(&prose, "Server node%d reported load %d at step %d. ", i%97, i%13, i)
	}
	tr := append(demoChat(), chat()...)
	return append(tr, user(t0, "webhook", "", prose.String()), assistant(t0, "Ünïcödé — "+strings.Repeat("ßü ", 3000)))
}

func TestExtractiveWithinMaxChars(t *testing.T) {
	tr := mixedChat()
	for _, max := range []int{-5, 0, 1, 11, 20, 40, 60, 100, 250, 1000, 2000, 10000} {
		got := Extractive(tr, max)
		limit := max
		if max <= 0 {
			limit = ExtractiveChars
		}
		if n := utf8.RuneCountInString(got); n > limit {
			t.Errorf("Extractive(max %d) has %d runes", max, n)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Extractive(max %d) is not valid UTF-8", max)
		}
		if max >= 60 && got == "" {
			t.Errorf("Extractive(max %d) = \"\", want at least one bullet", max)
		}
		for _, line := range strings.Split(got, "\n") {
			if line != "" && !strings.HasPrefix(line, "- user (") && !strings.HasPrefix(line, "- assistant: ") {
				t.Errorf("Extractive(max %d) line %q is not a labelled bullet", max, line)
			}
		}
	}
}

func TestExtractiveDeterministic(t *testing.T) {
	tr := mixedChat()
	for _, max := range []int{100, 700, 2000} {
		first := Extractive(tr, max)
		for range 20 {
			if got := Extractive(tr, max); got != first {
				t.Fatalf("Extractive(max %d) changed between calls:\n%s\n---\n%s", max, first, got)
			}
		}
	}
}

// bigChat has messages far over 512 KiB: a long prose paste, one line with
// no spaces, multi-byte text straddling the scan limit, and many lines.
func bigChat() []event.Event {
	var prose strings.Builder
	for i := 0; prose.Len() < 700<<10; i++ {
		fmt.Fprintf(&prose, "Server node%d reported load %d at step %d. ", i%97, i%13, i)
		if i%10 == 0 {
			prose.WriteString("\n")
		}
	}
	return []event.Event{
		user(t0, "web", "", prose.String()),
		assistant(t0, strings.Repeat("x", 600<<10)),
		user(t0, "webhook", "ci", strings.Repeat("ünï ", 200<<10)),
		assistant(t0, strings.Repeat("Line of output.\n", 50<<10)),
		user(t0, "web", "", "```\n"+strings.Repeat("code code code\n", 40<<10)),
	}
}

func TestExtractiveHugeMessages(t *testing.T) {
	tr := bigChat()
	got := Extractive(tr, 1500)
	if again := Extractive(tr, 1500); again != got {
		t.Fatalf("Extractive of huge messages is not deterministic")
	}
	if n := utf8.RuneCountInString(got); n == 0 || n > 1500 {
		t.Fatalf("Extractive of huge messages has %d runes, want 1..1500", n)
	}
	for _, line := range strings.Split(got, "\n") {
		if utf8.RuneCountInString(line) > maxSentenceRunes*6 {
			t.Errorf("a bullet of %d runes", utf8.RuneCountInString(line))
		}
	}
	if strings.Contains(got, "code code") {
		t.Errorf("summary quotes a fenced code block: %q", got)
	}
}

func TestSentencesOf(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"One. Two! Three? Four", []string{"One.", " Two!", " Three?", " Four"}},
		{"Version 3.5 is out. See example.com now.", []string{"Version 3.5 is out.", " See example.com now."}},
		{"Bring e.g. apples. Ask Dr. Smith and J. Doe.", []string{"Bring e.g. apples.", " Ask Dr. Smith and J. Doe."}},
		{"Wait… what?! OK", []string{"Wait…", " what?!", " OK"}},
		{"第一句。第二句", []string{"第一句。", "第二句"}},
		{"", nil},
	}
	for _, tc := range tests {
		got := sentencesOf(tc.in)
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
			t.Errorf("sentencesOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSplitSentencesMarkdown(t *testing.T) {
	in := "# Plan\n\n- **Backup** first.\n2. Upgrade to v16.\n> Quoted advice here.\n```sh\npg_upgrade --link\n```\nDone."
	got := splitSentences(in)
	want := []string{"Plan", "Backup first.", "Upgrade to v16.", "Quoted advice here.", "Done."}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("splitSentences = %q, want %q", got, want)
	}
}

func BenchmarkExtractive(b *testing.B) {
	tr := append(demoChat(), bigChat()...)
	b.ReportAllocs()
	for b.Loop() {
		Extractive(tr, ExtractiveChars)
	}
}
