package index_test

import (
	"strings"
	"testing"
)

// A snippet starts and ends on whole words: FTS5 cuts between tokens, and
// the tokenizer splits "don't", "e-mail" and "3.14" into several.
func TestSnippetWholeWords(t *testing.T) {
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 6)
	long := filler + "We can't ship the e-mail integration before the re-design of the office's wi-fi, so the pipeline's 3.14 release waits; after that the kitchen's don't-touch list and everyone's favourite café reopen with plumbers' help, ending\u00a0here " + filler
	ix := openIndex(t, convo(long, "ok"))
	for _, q := range []string{"plumbers", "integration", "pipeline", "favourite", "kitchen", "release", "office"} {
		res := search(t, ix, q)
		if len(res.Hits) == 0 {
			t.Fatalf("%s: no hit", q)
		}
		snip := res.Hits[0].Snippet
		plain := strings.NewReplacer("«", "", "»", "").Replace(snip)
		if !strings.HasPrefix(plain, "…") || !strings.HasSuffix(plain, "…") {
			t.Fatalf("%s: snippet %q is not cut on both sides; the test needs a longer text", q, snip)
		}
		// Every word of the snippet is a whole word of the content.
		words := strings.Fields(strings.Trim(plain, "…"))
		content := " " + strings.Join(strings.Fields(long), " ") + " "
		for i, w := range words {
			if !strings.Contains(content, " "+w+" ") && !(i == len(words)-1 && strings.Contains(content, " "+w+"\u00a0")) {
				t.Errorf("%s: snippet %q has a cut word %q", q, snip, w)
			}
		}
	}
}
