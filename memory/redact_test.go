package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	const msg = "Remember: the wifi password is quokkablue, and the door code is 1234."
	for _, tc := range []struct {
		name, text, erased string
		kept               string
		quoted             bool
	}{
		{"unrelated", "Likes green tea.", msg, "Likes green tea.", false},
		{"common words only", "What is the time zone? It is the same.", msg, "What is the time zone? It is the same.", false},
		{"one sentence of several", "Lives in Lisbon. The wifi password is quokkablue at home. Has a cat.", msg,
			"Lives in Lisbon. Has a cat.", true},
		{"a quote cut short", "- user: the wifi password is quokk…\n- assistant: noted", msg, "- assistant: noted", true},
		{"the whole item", "the wifi password is quokkablue", msg, "", true},
		{"case and punctuation aside", "THE WIFI PASSWORD — IS QUOKKABLUE!", msg, "", true},
		{"a short message whole", "The code: zanzibar quokka. Other.", "zanzibar quokka", "Other.", true},
		{"a short message in part", "zanzibar alone", "zanzibar quokka", "zanzibar alone", false},
		{"empty message", "anything", "  ", "anything", false},
	} {
		kept, quoted := Redact(tc.text, tc.erased)
		if kept != tc.kept || quoted != tc.quoted {
			t.Errorf("%s: Redact(%q) = %q, %v; want %q, %v", tc.name, tc.text, kept, quoted, tc.kept, tc.quoted)
		}
	}
}

func TestRedactFile(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	text := "# Short-term context\n\n### user · web · 2026-11-22 10:00:00 UTC\n\nthe wifi password is quokkablue\n\n### assistant · 2026-11-22 10:00:01 UTC\n\nNoted.\n"
	if err := os.WriteFile(filepath.Join(dir, ShortTermFile), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	changed, err := s.RedactFile(ShortTermFile, "the wifi password is quokkablue")
	if err != nil || !changed {
		t.Fatalf("RedactFile = %v, %v", changed, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ShortTermFile))
	if strings.Contains(string(b), "quokkablue") || !strings.Contains(string(b), "Noted.") {
		t.Errorf("short_term.md after: %q", b)
	}
	if changed, err := s.RedactFile(LongTermFile, "x y z w"); changed || err != nil {
		t.Errorf("RedactFile of a missing file = %v, %v", changed, err)
	}
}
