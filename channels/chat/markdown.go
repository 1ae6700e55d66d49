package chat

import (
	"html"
	"strings"
	"unicode/utf8"
)

// Style is a platform's markup.
type Style int

// Styles Render produces.
const (
	// StyleHTML is the HTML subset Telegram (parse_mode HTML) and Matrix
	// (formatted_body) accept: b, i, s, code, pre, a.
	StyleHTML Style = iota
	// StyleSlack is Slack's mrkdwn.
	StyleSlack
	// StylePlain drops the markup.
	StylePlain
)

// Render turns the assistant's Markdown into style: fenced code blocks,
// `code`, **bold**, *italic* and _italic_, ~~strike~~, [links](url) and
// # headings (bold). Everything else is text, escaped as style needs.
func Render(md string, style Style) string {
	var b strings.Builder
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if i > 0 {
			b.WriteByte('\n')
		}
		line := lines[i]
		if fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
			var code []string
			j := i + 1
			for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
				code = append(code, lines[j])
			}
			writeBlock(&b, strings.TrimSpace(fence), strings.Join(code, "\n"), style)
			i = j // the closing fence (or the end)
			continue
		}
		if h := strings.TrimLeft(line, "#"); len(h) < len(line) && len(line)-len(h) <= 6 && strings.HasPrefix(h, " ") {
			wrap(&b, style, "b", inline(strings.TrimSpace(h), style))
			continue
		}
		b.WriteString(inline(line, style))
	}
	return b.String()
}

func writeBlock(b *strings.Builder, lang, code string, style Style) {
	switch style {
	case StyleHTML:
		if lang != "" {
			b.WriteString(`<pre><code class="language-` + html.EscapeString(lang) + `">`)
		} else {
			b.WriteString("<pre><code>")
		}
		b.WriteString(html.EscapeString(code))
		b.WriteString("</code></pre>")
	case StyleSlack:
		b.WriteString("```\n" + slackEscape(code) + "\n```")
	default:
		b.WriteString(code)
	}
}

// wrap writes s (already rendered) in tag's markup.
func wrap(b *strings.Builder, style Style, tag, s string) {
	switch style {
	case StyleHTML:
		b.WriteString("<" + tag + ">" + s + "</" + tag + ">")
	case StyleSlack:
		m := map[string]string{"b": "*", "i": "_", "s": "~", "code": "`"}[tag]
		b.WriteString(m + s + m)
	default:
		b.WriteString(s)
	}
}

// spans are the inline markers, longest first.
var spans = []struct{ open, tag string }{
	{"**", "b"}, {"__", "b"}, {"~~", "s"}, {"`", "code"}, {"*", "i"}, {"_", "i"},
}

// inline renders one line's inline markup.
func inline(s string, style Style) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if n, ok := link(&b, s[i:], style); ok {
			i += n
			continue
		}
		if n, ok := span(&b, s[i:], style); ok {
			i += n
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(escape(string(r), style))
		i += size
	}
	return b.String()
}

// span renders a marked span at the start of s, if one is there.
func span(b *strings.Builder, s string, style Style) (int, bool) {
	for _, sp := range spans {
		if !strings.HasPrefix(s, sp.open) {
			continue
		}
		end := strings.Index(s[len(sp.open):], sp.open)
		inner := ""
		if end > 0 {
			inner = s[len(sp.open) : len(sp.open)+end]
		}
		// Not a span: an empty one, one opening or closing on a space
		// (2 * 3), or a snake_case word.
		if inner == "" || strings.TrimSpace(inner) != inner ||
			(sp.open == "_" && len(s) > len(inner)+2 && isWord(s[len(inner)+2])) {
			return 0, false
		}
		if sp.tag == "code" {
			wrap(b, style, "code", escape(inner, style))
		} else {
			wrap(b, style, sp.tag, inline(inner, style))
		}
		return len(sp.open)*2 + len(inner), true
	}
	return 0, false
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// link renders [text](url) at the start of s, if one is there.
func link(b *strings.Builder, s string, style Style) (int, bool) {
	if !strings.HasPrefix(s, "[") {
		return 0, false
	}
	mid := strings.Index(s, "](")
	if mid < 0 {
		return 0, false
	}
	end := strings.IndexByte(s[mid:], ')')
	if end < 0 {
		return 0, false
	}
	text, url := s[1:mid], s[mid+2:mid+end]
	if text == "" || strings.ContainsAny(url, " \n") || !(strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "mailto:")) {
		return 0, false
	}
	switch style {
	case StyleHTML:
		b.WriteString(`<a href="` + html.EscapeString(url) + `">` + inline(text, style) + "</a>")
	case StyleSlack:
		b.WriteString("<" + url + "|" + slackEscape(text) + ">")
	default:
		b.WriteString(text + " (" + url + ")")
	}
	return mid + end + 1, true
}

func escape(s string, style Style) string {
	switch style {
	case StyleHTML:
		return html.EscapeString(s)
	case StyleSlack:
		return slackEscape(s)
	}
	return s
}

// slackEscape escapes the three characters mrkdwn reserves.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Split cuts md into parts of at most max runes, at a paragraph, line or
// word boundary where one is near; a code block cut in two is closed at
// the end of one part and opened again at the start of the next.
func Split(md string, max int) []string {
	if max < 64 {
		max = 64
	}
	var parts []string
	open := false // a code block runs into this part
	for md != "" {
		limit := max - 8 // room to close and open a fence
		if open {
			md = "```\n" + md
		}
		if utf8.RuneCountInString(md) <= max {
			parts = append(parts, md)
			break
		}
		cut := cutAt(md, limit)
		part := strings.TrimRight(md[:cut], " \n")
		md = strings.TrimLeft(md[cut:], " \n")
		open = strings.Count(part, "```")%2 == 1
		if open {
			part += "\n```"
		}
		parts = append(parts, part)
	}
	return parts
}

// cutAt is the byte offset to cut md at: within limit runes, at the last
// blank line, line end or space in the second half, else at limit.
func cutAt(md string, limit int) int {
	end := len(md)
	n := 0
	for i := range md {
		if n == limit {
			end = i
			break
		}
		n++
	}
	window := md[:end]
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(window, sep); i > end/2 {
			return i + len(sep)
		}
	}
	return end
}
