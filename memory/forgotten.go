package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Forgotten items. When an item is deleted (forgotten by a person, by the
// agent, or by an erase), the store keeps not its text but the hashes of
// its distinctive words (Forgotten), so that what is written from the
// conversation afterwards — a consolidation, short_term.md, the next
// turns' context — can be checked for it and cut (ForgottenSet.Cut) while
// items.json holds no word of it. The rule, in words: a sentence is cut
// when it holds half or more of a forgotten item's distinctive words, or
// any one of them that is "strong" (has a digit, or is 8 letters or more:
// a password, a name, a number). Distinctive words are the item's words of
// 3 letters or more that are not common English words (stopWords). It
// cuts more than it must rather than less: a summary sentence about the
// wifi that does not give the password may go too.

// maxForgotten caps the forgotten items kept (the oldest go first).
const maxForgotten = 1000

// Forgotten is what the store keeps of a deleted item: hashes of its
// distinctive words (see wordHash), the strong ones also in Strong.
type Forgotten struct {
	ID     string   `json:"id"`
	Words  []string `json:"words"`
	Strong []string `json:"strong,omitempty"`
}

// ForgottenSet is every forgotten item's words; the zero value cuts
// nothing.
type ForgottenSet []Forgotten

// forgetText turns a deleted item's text into its Forgotten (ok false when
// it has no distinctive word).
func forgetText(id, text string) (Forgotten, bool) {
	f := Forgotten{ID: id}
	for _, w := range distinctive(text) {
		h := wordHash(w)
		if slices.Contains(f.Words, h) {
			continue
		}
		f.Words = append(f.Words, h)
		if strong(w) {
			f.Strong = append(f.Strong, h)
		}
	}
	return f, len(f.Words) > 0
}

// wordHash is the hash kept of a forgotten word: 64 bits of SHA-256 of a
// label and the word. It is not a secret keeper — a short word can be
// found by trying words — but items.json no longer holds the text.
func wordHash(w string) string {
	sum := sha256.Sum256([]byte("frontdesk forgotten word\x00" + w))
	return hex.EncodeToString(sum[:8])
}

// distinctive returns the words of text that can tell it apart.
func distinctive(text string) []string {
	var out []string
	for _, w := range words(text) {
		if utf8.RuneCountInString(w) >= 3 && !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

func strong(w string) bool {
	return utf8.RuneCountInString(w) >= 8 || strings.ContainsFunc(w, unicode.IsDigit)
}

// stopWords are common words that tell no item apart.
var stopWords = setOf(
	"the", "and", "that", "this", "these", "those", "with", "from", "for", "into", "onto", "about",
	"are", "was", "were", "been", "being", "have", "has", "had", "not", "but", "all", "any", "can",
	"will", "would", "should", "could", "may", "might", "must", "you", "your", "yours", "our", "ours",
	"their", "they", "them", "its", "his", "her", "hers", "she", "him", "who", "whom", "what", "when",
	"where", "which", "why", "how", "there", "here", "than", "then", "some", "such", "only", "just",
	"very", "more", "most", "other", "same", "each", "out", "get", "got", "let", "say", "said", "says",
	"one", "two", "also", "too", "yes", "now", "please", "remember", "remembers", "remembered", "note",
	"user", "users", "assistant", "always", "never", "use", "uses", "used", "like", "likes", "know",
	"knows", "tell", "told", "said", "does", "did", "done", "make", "made", "want", "wants", "need",
	"needs", "thing", "things", "fact", "facts", "way", "day", "today", "over", "under", "again")

// Forgotten returns a copy of the forgotten items' words.
func (s *Items) Forgotten() ForgottenSet {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.file.Forgotten)
}

// forget records the deleted item it (the store's lock held).
func (s *Items) forget(it Item) {
	f, ok := forgetText(it.ID, it.Text)
	if !ok {
		return
	}
	// A store rebuilt from the log deletes the item again: once is kept.
	s.file.Forgotten = slices.DeleteFunc(s.file.Forgotten, func(o Forgotten) bool { return o.ID == f.ID })
	s.file.Forgotten = append(s.file.Forgotten, f)
	if over := len(s.file.Forgotten) - maxForgotten; over > 0 {
		s.file.Forgotten = slices.Delete(s.file.Forgotten, 0, over)
	}
}

// cuts reports whether sentence gives away a forgotten item.
func (fs ForgottenSet) cuts(sentence string) bool {
	if len(fs) == 0 {
		return false
	}
	have := map[string]bool{}
	for _, w := range distinctive(sentence) {
		have[wordHash(w)] = true
	}
	if len(have) == 0 {
		return false
	}
	for _, f := range fs {
		n := 0
		for _, h := range f.Words {
			if have[h] {
				n++
			}
		}
		if n > 0 && (2*n >= len(f.Words) || slices.ContainsFunc(f.Strong, func(h string) bool { return have[h] })) {
			return true
		}
	}
	return false
}

// Cut returns text without the sentences that give away a forgotten item
// (see the rule above) and how many it cut. A line all of whose sentences
// are cut goes whole; other lines keep their order and their other
// sentences.
func (fs ForgottenSet) Cut(text string) (string, int) {
	if len(fs) == 0 || text == "" {
		return text, 0
	}
	cut := 0
	var out []string
	for _, line := range strings.Split(text, "\n") {
		ss := splitKeep(line)
		kept := ss[:0]
		for _, s := range ss {
			if fs.cuts(s) {
				cut++
				continue
			}
			kept = append(kept, s)
		}
		if len(kept) == 0 && len(ss) > 0 {
			continue
		}
		out = append(out, strings.TrimRight(strings.Join(kept, ""), " "))
	}
	if cut == 0 {
		return text, 0
	}
	return strings.Join(out, "\n"), cut
}

// CutEvents returns evs with the forgotten items cut from the content of
// each user and assistant event (copies; evs is not changed), and how many
// sentences it cut.
func (fs ForgottenSet) CutEvents(evs []event.Event) ([]event.Event, int) {
	if len(fs) == 0 {
		return evs, 0
	}
	out := make([]event.Event, len(evs))
	total := 0
	for i, e := range evs {
		out[i] = e
		var n int
		switch e.Type {
		case event.User:
			var d event.UserData
			if e.Decode(&d) == nil {
				if d.Content, n = fs.Cut(d.Content); n > 0 {
					out[i].Data, _ = json.Marshal(d)
				}
			}
		case event.Assistant:
			var d event.AssistantData
			if e.Decode(&d) == nil {
				if d.Content, n = fs.Cut(d.Content); n > 0 {
					out[i].Data, _ = json.Marshal(d)
				}
			}
		}
		total += n
	}
	return out, total
}
