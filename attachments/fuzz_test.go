package attachments

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzSanitizeName: whatever a client sends as a name, the stored one is
// one valid UTF-8 path element without control or formatting characters.
func FuzzSanitizeName(f *testing.F) {
	for _, s := range []string{"cat.png", "../../x", `C:\a\b.txt`, "", "..", "a\x00b", "gpj\u202e.exe", strings.Repeat("é", 300), "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := SanitizeName(name)
		if got == "" || got == "." || got == ".." || len(got) > maxNameBytes || !utf8.ValidString(got) ||
			strings.ContainsAny(got, `/\`) || got != strings.TrimSpace(got) {
			t.Fatalf("SanitizeName(%q) = %q", name, got)
		}
		for _, r := range got {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("SanitizeName(%q) = %q keeps %U", name, got, r)
			}
		}
	})
}

// FuzzSniff: no bytes and no name make an SVG type or an image type the
// bytes do not carry.
func FuzzSniff(f *testing.F) {
	f.Add([]byte("<svg xmlns=\"http://www.w3.org/2000/svg\"><script/></svg>"), "x.svg")
	f.Add([]byte("\x89PNG\r\n\x1a\n"), "x.png")
	f.Add([]byte("# hi"), "x.md")
	f.Fuzz(func(t *testing.T, head []byte, name string) {
		if len(head) > sniffLen {
			head = head[:sniffLen]
		}
		got := Sniff(head, name)
		if strings.Contains(got, "svg") {
			t.Fatalf("Sniff(%q, %q) = %q", head, name, got)
		}
		if strings.HasPrefix(got, "image/") && Sniff(head, "") != got {
			t.Fatalf("Sniff(%q, %q) = %q: the name made it an image", head, name, got)
		}
	})
}
