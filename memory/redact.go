package memory

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// quoteWords is how many consecutive words of an erased message a piece
// of text must hold to quote it: enough that common phrases ("what is
// the") do not match, few enough that a sentence cut short still does.
// A message of fewer words quotes only whole.
const quoteWords = 4

// Redact removes from text every line and sentence that quotes erased
// (an erased message's content): one that holds quoteWords consecutive
// words of it (case and punctuation aside), or all of its words when it
// has fewer. It returns what is left, trimmed ("" when nothing is), and
// whether anything was removed.
func Redact(text, erased string) (kept string, quoted bool) {
	grams := ngrams(words(erased))
	if len(grams) == 0 {
		return text, false
	}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		var keep []string
		for _, s := range splitKeep(line) {
			if quotes(s, grams) {
				quoted = true
				continue
			}
			keep = append(keep, s)
		}
		l := strings.TrimRight(strings.Join(keep, ""), " \t")
		if strings.TrimSpace(strings.Trim(l, "-*•:")) == "" && len(keep) < len(splitKeep(line)) {
			continue // a bullet left with nothing after its marker
		}
		out = append(out, l)
	}
	if !quoted {
		return text, false
	}
	kept = strings.TrimSpace(strings.Join(out, "\n"))
	if !hasWordChar(kept) {
		kept = ""
	}
	return kept, true
}

// words splits s into lower-case words of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// ngrams are the runs of quoteWords words of w (w whole when shorter).
func ngrams(w []string) map[string]bool {
	n := min(quoteWords, len(w))
	out := map[string]bool{}
	for i := 0; i+n <= len(w) && n > 0; i++ {
		out[strings.Join(w[i:i+n], " ")] = true
	}
	return out
}

// quotes reports whether s holds one of grams (all the same length).
func quotes(s string, grams map[string]bool) bool {
	w := words(s)
	for k := range grams {
		n := len(strings.Fields(k))
		for i := 0; i+n <= len(w); i++ {
			if grams[strings.Join(w[i:i+n], " ")] {
				return true
			}
		}
		break // every gram has the same length
	}
	return false
}

// splitKeep splits a line into sentences, each keeping its end mark and
// the spaces after it, so that joining them gives the line back.
func splitKeep(line string) []string {
	var out []string
	start := 0
	rs := []rune(line)
	for i, r := range rs {
		if (r == '.' || r == '!' || r == '?') && (i+1 == len(rs) || rs[i+1] == ' ') {
			j := i + 1
			for j < len(rs) && rs[j] == ' ' {
				j++
			}
			out = append(out, string(rs[start:j]))
			start = j
		}
	}
	if start < len(rs) {
		out = append(out, string(rs[start:]))
	}
	return out
}

func hasWordChar(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// RedactFile removes from the memory file name (short_term.md,
// long_term.md) every line and sentence that quotes erased (see Redact),
// replacing the file atomically. It reports whether anything was
// removed; a missing file is left alone.
func (s *Store) RedactFile(name, erased string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	text, err := s.read(name)
	if err != nil || text == "" {
		return false, err
	}
	kept, quoted := Redact(text, erased)
	if !quoted {
		return false, nil
	}
	if kept != "" {
		kept += "\n"
	}
	if err := atomicfile.Write(filepath.Join(s.dir, name), []byte(kept), filePerm); err != nil {
		return true, fmt.Errorf("rewrite %s: %w", name, err)
	}
	return true, nil
}
