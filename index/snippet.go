package index

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxWordTail is how far wholeWords reaches to finish a cut word; a longer
// run without a space (a URL, a hash) stays cut.
const maxWordTail = 40

// wholeWords makes a snippet from FTS5's snippet() start and end on whole
// words. snippet() cuts between tokens, and the tokenizer splits words at
// apostrophes, hyphens and dots — "don't" is "don" and "t", "3.14" is "3"
// and "14" — so a cut could leave "…t have" or "version 3…". The cut parts
// are found again in the content and finished up to the next white space.
// snip's text between its marks and ellipses is a verbatim copy of
// content, which is how it is found; if it is not (it always should be),
// snip is returned as it is.
func wholeWords(snip, content string) string {
	const ell = "…"
	plain := strings.NewReplacer(MarkStart, "", MarkEnd, "").Replace(snip)
	lead, trail := strings.HasPrefix(plain, ell), strings.HasSuffix(plain, ell)
	core := strings.TrimSuffix(strings.TrimPrefix(plain, ell), ell)
	if (!lead && !trail) || core == "" {
		return snip
	}
	at := strings.Index(content, core)
	if at < 0 {
		return snip
	}
	if lead {
		before := content[:at]
		start := 0
		if i := strings.LastIndexFunc(before, unicode.IsSpace); i >= 0 {
			_, size := utf8.DecodeRuneInString(before[i:])
			start = i + size
		}
		if word := before[start:]; word != "" && len(word) <= maxWordTail {
			if start > 0 {
				word = ell + word
			}
			snip = word + strings.TrimPrefix(snip, ell)
		}
	}
	if trail {
		after := content[at+len(core):]
		end := strings.IndexFunc(after, unicode.IsSpace)
		if end < 0 {
			end = len(after)
		}
		if word := after[:end]; word != "" && len(word) <= maxWordTail {
			if end < len(strings.TrimRightFunc(after, unicode.IsSpace)) {
				word += ell
			}
			snip = strings.TrimSuffix(snip, ell) + word
		}
	}
	return snip
}
