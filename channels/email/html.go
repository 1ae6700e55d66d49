package email

import (
	"strconv"
	"strings"

	"golang.org/x/net/html"
)

// htmlToText renders an HTML mail body as plain text for the agent.
//
// It uses golang.org/x/net/html's parser (already in the module graph)
// rather than a hand-written tokenizer: hostile HTML with raw-text
// elements, comments, entities and unbalanced tags is exactly what a
// home-made scanner gets wrong. Nothing is fetched: images, styles and
// frames are dropped, links keep their address in the text.
//
// Dropped with their content: script, style, head, template, noscript,
// iframe, object, svg, math, form controls, blockquotes and Gmail's quote
// container (quoted history), and anything hidden: the hidden attribute,
// aria-hidden="true", or an inline style with display:none,
// visibility:hidden, opacity:0, font-size:0 or a zero (max-)height. Text
// hidden by a stylesheet class is not detected: email text is untrusted
// content for the agent anyway. HTML nested deeper than the parser
// accepts (512 elements) yields no text: no person writes that, and a
// fallback without the tree could not tell hidden text from visible.
func htmlToText(src string) string {
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		return ""
	}
	var t textWriter
	type frame struct {
		n    *html.Node
		exit bool
	}
	stack := []frame{{n: doc}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := f.n
		if f.exit {
			t.close(n)
			continue
		}
		switch n.Type {
		case html.TextNode:
			t.text(n.Data)
			continue
		case html.ElementNode:
			if dropped(n) {
				continue
			}
			t.open(n)
			stack = append(stack, frame{n: n, exit: true})
		case html.DocumentNode:
		default:
			continue // comments, doctype
		}
		// Children in reverse, so that the first is popped first. The
		// explicit stack keeps deep nesting off the goroutine stack.
		var kids []*html.Node
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			kids = append(kids, c)
		}
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, frame{n: kids[i]})
		}
	}
	return normalizeText(t.b.String())
}

var droppedTags = map[string]bool{
	"script": true, "style": true, "head": true, "title": true, "template": true,
	"noscript": true, "iframe": true, "object": true, "embed": true, "svg": true,
	"math": true, "button": true, "select": true, "textarea": true, "input": true,
	"blockquote": true, "img": true, "audio": true, "video": true, "canvas": true,
}

func attr(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && strings.EqualFold(a.Key, name) {
			return a.Val, true
		}
	}
	return "", false
}

// dropped reports whether n and its content are left out.
func dropped(n *html.Node) bool {
	if droppedTags[n.Data] {
		return true
	}
	if _, ok := attr(n, "hidden"); ok {
		return true
	}
	if v, _ := attr(n, "aria-hidden"); strings.EqualFold(strings.TrimSpace(v), "true") {
		return true
	}
	if v, _ := attr(n, "class"); strings.Contains(" "+v+" ", " gmail_quote ") {
		return true
	}
	if v, ok := attr(n, "style"); ok && hiddenStyle(v) {
		return true
	}
	return false
}

// hiddenStyle reports whether an inline style hides its element.
func hiddenStyle(style string) bool {
	for _, decl := range strings.Split(style, ";") {
		k, v, ok := strings.Cut(decl, ":")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "!important")))
		switch k {
		case "display":
			if v == "none" {
				return true
			}
		case "visibility":
			if v == "hidden" || v == "collapse" {
				return true
			}
		case "opacity", "font-size", "max-height", "height", "max-width", "width":
			if zeroLength(v) {
				return true
			}
		}
	}
	return false
}

// zeroLength reports whether a CSS value is a zero number or length
// ("0", "0px", "0.0em", "0%").
func zeroLength(v string) bool {
	num := strings.TrimRight(v, "abcdefghijklmnopqrstuvwxyz%")
	if num == "" {
		return false
	}
	f, err := strconv.ParseFloat(num, 64)
	return err == nil && f == 0
}

var blockTags = map[string]bool{
	"p": true, "div": true, "section": true, "article": true, "header": true, "footer": true,
	"main": true, "aside": true, "nav": true, "h1": true, "h2": true, "h3": true, "h4": true,
	"h5": true, "h6": true, "ul": true, "ol": true, "li": true, "table": true, "tr": true,
	"pre": true, "hr": true, "dl": true, "dt": true, "dd": true, "figure": true, "center": true,
	"address": true, "body": true,
}

// textWriter accumulates rendered text, collapsing whitespace outside <pre>.
type textWriter struct {
	b     strings.Builder
	pre   int
	space bool // a collapsed space is pending
	links []string
}

func (t *textWriter) last() byte {
	s := t.b.String()
	if s == "" {
		return '\n'
	}
	return s[len(s)-1]
}

func (t *textWriter) newline() {
	t.space = false
	if t.last() != '\n' {
		t.b.WriteByte('\n')
	}
}

func (t *textWriter) text(s string) {
	if t.pre > 0 {
		t.b.WriteString(s)
		return
	}
	for _, r := range s {
		if isHTMLSpace(r) {
			t.space = true
			continue
		}
		if t.space && t.last() != '\n' && t.last() != ' ' {
			t.b.WriteByte(' ')
		}
		t.space = false
		t.b.WriteRune(r)
	}
}

func isHTMLSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\u00a0'
}

var paragraphTags = map[string]bool{"p": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true}

func (t *textWriter) open(n *html.Node) {
	switch n.Data {
	case "br":
		t.b.WriteByte('\n')
		t.space = false
	case "li":
		t.newline()
		t.b.WriteString("- ")
	case "pre":
		t.newline()
		t.pre++
	case "a":
		href, _ := attr(n, "href")
		t.links = append(t.links, href)
	default:
		if blockTags[n.Data] {
			t.newline()
		}
	}
	if paragraphTags[n.Data] {
		t.b.WriteByte('\n')
	}
}

func (t *textWriter) close(n *html.Node) {
	switch n.Data {
	case "pre":
		t.pre--
		t.newline()
	case "a":
		href := t.links[len(t.links)-1]
		t.links = t.links[:len(t.links)-1]
		lower := strings.ToLower(href)
		if (strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "mailto:")) &&
			!strings.HasSuffix(t.b.String(), href) {
			t.b.WriteString(" (" + href + ")")
		}
	case "td", "th":
		t.b.WriteByte(' ')
	default:
		if blockTags[n.Data] {
			t.newline()
		}
	}
	if paragraphTags[n.Data] {
		t.b.WriteByte('\n')
	}
}
