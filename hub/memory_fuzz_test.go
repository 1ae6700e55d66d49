package hub

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/memory"
)

// FuzzCleanMemoryText: whatever a door sends as an item's text is either
// refused as bad input or comes out valid UTF-8, trimmed, without control
// characters but newlines and tabs, within the limit, and unchanged by a
// second cleaning.
func FuzzCleanMemoryText(f *testing.F) {
	for _, s := range []string{"The user's car is a blue Volvo.", "  a\r\nb\x07\t ", "\xff\xfe", "", "\u200b", strings.Repeat("é", memory.MaxItemChars+1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := cleanMemoryText(in)
		if err != nil {
			if !errors.Is(err, ErrEmptyMemory) && !errors.Is(err, ErrMemoryTooLong) {
				t.Fatalf("clean(%q): unexpected error %v", in, err)
			}
			return
		}
		if !utf8.ValidString(out) || out != strings.TrimSpace(out) || out == "" || utf8.RuneCountInString(out) > memory.MaxItemChars {
			t.Fatalf("clean(%q) = %q", in, out)
		}
		for _, r := range out {
			if unicode.IsControl(r) && r != '\n' && r != '\t' {
				t.Fatalf("clean(%q) = %q keeps control character %U", in, out, r)
			}
		}
		if again, err := cleanMemoryText(out); err != nil || again != out {
			t.Fatalf("clean(clean(%q)) = %q, %v; want %q", in, again, err, out)
		}
	})
}
