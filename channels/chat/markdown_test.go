package chat_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
)

func TestRender(t *testing.T) {
	md := "# Plan\n**bold** and *it* and `a<b` and [site](https://x.org/?a=1&b=2) snake_case_name 2 * 3\n```go\nif a < b {}\n```"
	for _, c := range []struct {
		style chat.Style
		want  string
	}{
		{chat.StyleHTML, "<b>Plan</b>\n<b>bold</b> and <i>it</i> and <code>a&lt;b</code> and <a href=\"https://x.org/?a=1&amp;b=2\">site</a> snake_case_name 2 * 3\n<pre><code class=\"language-go\">if a &lt; b {}</code></pre>"},
		{chat.StyleSlack, "*Plan*\n*bold* and _it_ and `a&lt;b` and <https://x.org/?a=1&b=2|site> snake_case_name 2 * 3\n```\nif a &lt; b {}\n```"},
		{chat.StylePlain, "Plan\nbold and it and a<b and site (https://x.org/?a=1&b=2) snake_case_name 2 * 3\nif a < b {}"},
	} {
		if got := chat.Render(md, c.style); got != c.want {
			t.Errorf("style %d:\n got %q\nwant %q", c.style, got, c.want)
		}
	}
}

// TestSplit: parts within the limit, the words all kept in order, a code
// block cut in two closed and reopened.
func TestSplit(t *testing.T) {
	md := strings.Repeat("word ", 100) + "\n```\n" + strings.Repeat("code line\n", 40) + "```\nend"
	parts := chat.Split(md, 120)
	var words []string
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > 120 {
			t.Fatalf("part %d has %d runes", i, n)
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Fatalf("part %d leaves a code block open: %q", i, p)
		}
		words = append(words, strings.Fields(strings.ReplaceAll(p, "```", ""))...)
	}
	if want := strings.Fields(strings.ReplaceAll(md, "```", "")); strings.Join(words, " ") != strings.Join(want, " ") {
		t.Fatalf("words changed:\n%v", words)
	}
	if got := chat.Split("short", 4000); len(got) != 1 || got[0] != "short" {
		t.Fatalf("Split(short) = %q", got)
	}
}
