package index_test

import (
	"context"
	"testing"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/index"
)

// FuzzParseQuery: ParseQuery never panics; an error is always a
// QueryError; a parsed query has at most MaxQueryTerms terms, none with an
// empty word, and its FTS5 expression — AND and OR — and the whole search
// run against a real in-memory index without error: no input reaches
// SQLite as syntax.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		"sister birthday", `"quarterly report" invoice`, "quart*", "a*", "*", "channel:email invoice",
		"from:ann@example.com", `from:"Ann Smith" x`, "type:memory berlin", "type:robot",
		"before:2026-11-22 after:2026-11-01T10:00:00Z meeting", "before:yesterday", "channel:",
		`NEAR(a b) col:word "unbalanced`, `""`, `" "`, "the my when did", "muller café Müller ß",
		"it's sister's", "10:30 http://x.y/z", "AND OR NOT", "a-b_c.d", "\u0301\u0301", "日本語 テスト",
		"x\x00y", "\xff", "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen",
	} {
		f.Add(s)
	}
	ix, err := index.OpenMemory()
	if err != nil {
		f.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	if err := ix.Add(ctx, sample); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := index.ParseQuery(s)
		if err != nil {
			if !index.IsQueryError(err) {
				t.Fatalf("ParseQuery(%q): %v is not a QueryError", s, err)
			}
			return
		}
		if !utf8.ValidString(s) || len(s) > index.MaxQueryBytes {
			t.Fatalf("ParseQuery(%q) accepted a query it must refuse", s)
		}
		if len(q.Terms) > index.MaxQueryTerms {
			t.Fatalf("ParseQuery(%q): %d terms", s, len(q.Terms))
		}
		for _, term := range q.Terms {
			if len(term.Words) == 0 {
				t.Fatalf("ParseQuery(%q): a term with no words: %+v", s, q.Terms)
			}
			for _, w := range term.Words {
				if w == "" || !utf8.ValidString(w) {
					t.Fatalf("ParseQuery(%q): word %q in %+v", s, w, q.Terms)
				}
			}
		}
		if len(q.Terms) > 0 {
			for _, or := range []bool{false, true} {
				if _, err := ix.MatchForTest(q, or); err != nil {
					t.Fatalf("ParseQuery(%q) = %+v: MATCH (or %v): %v", s, q.Terms, or, err)
				}
			}
		}
		if _, err := ix.Search(ctx, s, index.Options{Limit: 5}); err != nil {
			t.Fatalf("Search(%q): %v", s, err)
		}
	})
}
