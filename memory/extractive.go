package memory

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Limits that keep Extractive linear and bounded on hostile input (a pasted
// 1 MiB log, thousands of one-word lines).
const (
	maxScanBytes       = 64 << 10 // of each message; the rest is not read
	maxMessageSentence = 400      // sentences considered per message
	maxSentenceRunes   = 300      // a longer sentence is cut at a word with "…"
	minUsefulRunes     = 12       // shortest cut-down sentence worth writing
	minRelativeScore   = 0.2      // of the best sentence's score, to be picked
)

// Weights on a sentence's tf-idf score. Memory is for what the person told
// the assistant, so their statements count most; the rest mark sentences
// that carry facts worth keeping (numbers, names, "remember …").
const (
	weightUserStatement = 1.6  // the person stated something: the core of memory
	weightUserQuestion  = 1.15 // the person asked: says what mattered, but less than a fact
	weightAsked         = 0.6  // the assistant asked back: rarely a fact
	weightNumber        = 1.3  // dates, times, amounts, flight numbers
	weightName          = 1.2  // a capitalised name mid-sentence
	weightCue           = 1.25 // "remember", "always", "prefer", … said outright
	weightFirstPerson   = 1.15 // the person about themselves ("I", "my")
	weightShort         = 0.6  // under three words: "sounds good", "ok then"
	minWordsUnweighted  = 3
)

// Extractive is the offline summary: it picks the most informative
// sentences of the user and assistant events in transcript and returns them
// in chronological order as Markdown bullets, one per message, as in
//
//   - user (web): My flight to Lisbon is on 3 May at 07:15.
//   - assistant: I will remind you on 2 May. … The hotel is booked.
//
// where " … " joins sentences that were not next to each other. It needs no
// model, and the same transcript always gives the same text.
//
// Sentences are scored by their content words, each weighted by how often
// it comes up in the conversation and how few messages it is in (so a
// reply's boilerplate does not crowd out the facts); user statements, and
// sentences with numbers, names, addresses or "remember"-like cues, count
// more; questions and repeated assistant phrasing count less. Fenced code
// blocks are skipped, and only the first 64 KiB of each message is read.
//
// The result has at most maxChars characters (runes), with no trailing
// newline; maxChars <= 0 means ExtractiveChars. It is "" when there is
// nothing to say or maxChars is too small for even one short bullet.
func Extractive(transcript []event.Event, maxChars int) string {
	if maxChars <= 0 {
		maxChars = ExtractiveChars
	}
	msgs := extractMessages(conversation(transcript))
	cands := scoreSentences(msgs)
	if len(cands) == 0 {
		return ""
	}

	chosen := choose(cands, msgs, maxChars)
	if len(chosen) == 0 {
		return ""
	}
	return bullets(cands, msgs, chosen)
}

// choose picks the candidates that go into a summary of at most maxChars
// runes: best first, none below a fraction of the best, no near-duplicates;
// in chronological order. nil: nothing worth saying fits.
func choose(cands []candidate, msgs []message, maxChars int) []int {
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch sa, sb := cands[a].score, cands[b].score; {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return a - b // earlier first on a tie
	})

	if cands[order[0]].score <= 0 {
		return nil // only boilerplate
	}
	// Filler that merely fits is left out: a sentence must score at least
	// a fraction of the best one.
	floor := cands[order[0]].score * minRelativeScore
	used := 0
	var chosen []int
	hasBullet := make(map[int]bool) // message index → already has a bullet
	for _, ci := range order {
		c := &cands[ci]
		if c.score <= 0 || c.score < floor {
			break
		}
		if nearDuplicate(c, cands, chosen) {
			continue
		}
		cost := utf8.RuneCountInString(c.text)
		if hasBullet[c.msg] {
			cost += utf8.RuneCountInString(" … ")
		} else {
			cost += utf8.RuneCountInString(bulletPrefix(msgs[c.msg].label)) + 1 // + newline
		}
		if used+cost > maxChars {
			continue
		}
		used += cost
		chosen = append(chosen, ci)
		hasBullet[c.msg] = true
	}
	if len(chosen) == 0 {
		// Nothing fits whole: cut the best sentence down to the budget.
		c := &cands[order[0]]
		room := maxChars - utf8.RuneCountInString(bulletPrefix(msgs[c.msg].label))
		if room < minUsefulRunes {
			return nil
		}
		c.text = cutRunes(c.text, room)
		chosen = append(chosen, order[0])
	}
	slices.Sort(chosen) // candidates are in chronological order
	return chosen
}

// bullets writes the chosen sentences as one bullet per message; sentences
// of one message are joined by a space when adjacent, else by " … ".
func bullets(cands []candidate, msgs []message, chosen []int) string {
	var b strings.Builder
	for i, ci := range chosen {
		c := cands[ci]
		switch {
		case i > 0 && cands[chosen[i-1]].msg == c.msg:
			if chosen[i-1] == ci-1 && cands[ci-1].msg == c.msg && cands[ci-1].pos+1 == c.pos {
				b.WriteString(" ")
			} else {
				b.WriteString(" … ")
			}
		default:
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(bulletPrefix(msgs[c.msg].label))
		}
		b.WriteString(c.text)
	}
	return b.String()
}

func bulletPrefix(label string) string { return "- " + label + ": " }

// message is one user or assistant event, ready for scoring.
type message struct {
	label     string // "user (web)", "user (email, ann@example.com)", "assistant"
	user      bool
	sentences []string
}

func extractMessages(conv []event.Event) []message {
	msgs := make([]message, 0, len(conv))
	for _, e := range conv {
		var m message
		d, _ := e.Message()
		switch e.Type {
		case event.User:
			m.user = true
			var tags []string
			if ch := oneLine(d.Channel); ch != "" {
				tags = append(tags, ch)
			}
			if from := oneLine(d.From); from != "" {
				tags = append(tags, from)
			}
			m.label = "user"
			if len(tags) > 0 {
				m.label += " (" + strings.Join(tags, ", ") + ")"
			}
		case event.Assistant:
			m.label = "assistant"
		}
		m.sentences = splitSentences(d.Content)
		msgs = append(msgs, m)
	}
	return msgs
}

// splitSentences returns the prose sentences of a message: Markdown list,
// quote and heading markers removed, fenced code skipped, whitespace
// collapsed, each cut to maxSentenceRunes.
func splitSentences(content string) []string {
	if len(content) > maxScanBytes {
		content = content[:maxScanBytes]
		for len(content) > 0 && !utf8.RuneStart(content[len(content)-1]) {
			content = content[:len(content)-1]
		}
		content = strings.ToValidUTF8(content, "") // drop a rune cut in half
	}
	var out []string
	inFence := false
	for line := range strings.Lines(content) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			inFence = !inFence
			continue
		}
		if inFence || line == "" {
			continue
		}
		line = stripMarkers(line)
		for _, s := range sentencesOf(line) {
			s = strings.Join(strings.Fields(s), " ")
			if s == "" || !hasLetterOrDigit(s) {
				continue
			}
			out = append(out, cutAtWord(s, maxSentenceRunes))
			if len(out) == maxMessageSentence {
				return out
			}
		}
	}
	return out
}

// stripMarkers removes leading Markdown block markers and emphasis.
func stripMarkers(line string) string {
	for {
		before := line
		line = strings.TrimLeft(line, "#>")
		line = strings.TrimSpace(line)
		for _, p := range []string{"- ", "* ", "+ ", "• "} {
			line = strings.TrimPrefix(line, p)
		}
		// "1. " or "12) "
		if i := strings.IndexFunc(line, func(r rune) bool { return r < '0' || r > '9' }); i > 0 && i+1 < len(line) &&
			(line[i] == '.' || line[i] == ')') && line[i+1] == ' ' {
			line = line[i+2:]
		}
		if line == before {
			break
		}
	}
	line = strings.ReplaceAll(line, "**", "")
	line = strings.ReplaceAll(line, "__", "")
	return line
}

// abbreviations whose trailing period does not end a sentence.
var abbreviations = map[string]bool{
	"e.g": true, "i.e": true, "mr": true, "mrs": true, "ms": true, "dr": true,
	"vs": true, "st": true, "no": true, "approx": true, "ca": true, "cf": true,
}

// sentencesOf splits one line after '.', '!', '?', '…' (and their CJK
// forms) followed by a space or the end, keeping the punctuation.
func sentencesOf(line string) []string {
	var out []string
	start := 0
	for i, r := range line {
		switch r {
		case '.', '!', '?', '…', '。', '！', '？':
		default:
			continue
		}
		end := i + utf8.RuneLen(r)
		cjk := r == '。' || r == '！' || r == '？'
		if end < len(line) && !cjk && line[end] != ' ' && line[end] != '\t' {
			continue // "3.5", "example.com", "?!"
		}
		if r == '.' {
			word := line[start:i]
			if j := strings.LastIndexAny(word, " \t(\"'“"); j >= 0 {
				word = word[j+1:]
			}
			if abbreviations[strings.ToLower(word)] || (utf8.RuneCountInString(word) == 1 && unicode.IsUpper([]rune(word)[0])) {
				continue // "e.g. ", "Dr. ", "J. Smith"
			}
		}
		out = append(out, line[start:end])
		start = end
	}
	if start < len(line) {
		out = append(out, line[start:])
	}
	return out
}

// candidate is one sentence with its score. Candidates are kept in
// chronological order: by message, then position in the message.
type candidate struct {
	msg, pos int
	text     string
	words    []string // distinct content words, in order of appearance
	score    float64
}

// sentenceFeatures are what weights a sentence beyond its words' tf-idf.
type sentenceFeatures struct {
	question, number, name, firstPerson, cue, template bool
}

// scoreSentences makes every distinct sentence of msgs a candidate and
// scores it: the tf-idf of its content words, normalised by length, times
// the weights its features earn.
func scoreSentences(msgs []message) []candidate {
	cands, feats, tf, df := collectSentences(msgs)
	n := float64(len(msgs))
	for i := range cands {
		c := &cands[i]
		var sum float64
		for _, w := range c.words {
			sum += (1 + math.Log(float64(tf[w]))) * math.Log(1+n/float64(df[w]))
		}
		c.score = sum / math.Sqrt(float64(len(c.words))) * weight(feats[i], msgs[c.msg].user, len(c.words))
	}
	return cands
}

// assistantRepeats counts, per normalised assistant sentence, the messages
// it is in: said the same way in several replies, it is boilerplate.
func assistantRepeats(msgs []message) map[string]int {
	keys := make(map[string]int)
	for _, m := range msgs {
		if m.user {
			continue
		}
		inMsg := make(map[string]bool)
		for _, s := range m.sentences {
			k := templateKey(s)
			if !inMsg[k] {
				inMsg[k] = true
				keys[k]++
			}
		}
	}
	return keys
}

// collectSentences returns the candidates (the first of repeated
// sentences), their features, and the term and document frequencies of
// their content words (tf across distinct sentences, df across messages).
func collectSentences(msgs []message) (cands []candidate, feats []sentenceFeatures, tf, df map[string]int) {
	seen := make(map[string]bool) // role + normalised sentence → already a candidate
	assistantKeys := assistantRepeats(msgs)
	tf, df = make(map[string]int), make(map[string]int)
	for mi, m := range msgs {
		inMsg := make(map[string]bool)
		for pi, s := range m.sentences {
			// Keep the first of repeated sentences: the user's exact
			// repeats, and the assistant's repeated phrasing (boilerplate).
			key := templateKey(s)
			dup := "u\x00" + strings.ToLower(s)
			if !m.user {
				dup = "a\x00" + key
			}
			if seen[dup] {
				continue
			}
			seen[dup] = true
			words, f := sentenceWords(s)
			if len(words) == 0 {
				continue // "ok, thanks!"
			}
			for _, w := range words {
				tf[w]++
				if !inMsg[w] {
					inMsg[w] = true
					df[w]++
				}
			}
			f.template = !m.user && assistantKeys[key] > 1
			cands = append(cands, candidate{msg: mi, pos: pi, text: s, words: words})
			feats = append(feats, f)
		}
	}
	return cands, feats, tf, df
}

// sentenceWords returns s's distinct content words in order and the
// features its words and shape show.
func sentenceWords(s string) (words []string, f sentenceFeatures) {
	for _, t := range tokens(s) {
		switch {
		case firstPerson[t]:
			f.firstPerson = true
		case cues[t]:
			f.cue = true
		}
		if !isContentWord(t) || slices.Contains(words, t) {
			continue
		}
		words = append(words, t)
	}
	f.question = strings.HasSuffix(s, "?") || strings.HasSuffix(s, "？")
	f.number = strings.ContainsFunc(s, unicode.IsDigit)
	f.name = hasName(s)
	return words, f
}

// weight is the product of the weights a sentence earns (see the weight
// constants); a template sentence earns nothing.
func weight(f sentenceFeatures, user bool, nWords int) float64 {
	if f.template {
		// Said (near enough) the same way in several replies: the
		// backend's boilerplate, not something this conversation said.
		return 0
	}
	w := 1.0
	switch {
	case user && !f.question:
		w *= weightUserStatement
	case user:
		w *= weightUserQuestion
	case f.question:
		w *= weightAsked
	}
	if f.number {
		w *= weightNumber
	}
	if f.name {
		w *= weightName
	}
	if f.cue {
		w *= weightCue
	}
	if user && f.firstPerson {
		w *= weightFirstPerson
	}
	if nWords < minWordsUnweighted {
		w *= weightShort
	}
	return w
}

// nearDuplicate reports whether c says mostly what a chosen sentence says:
// at least 70% of the smaller word set is shared.
func nearDuplicate(c *candidate, cands []candidate, chosen []int) bool {
	for _, ci := range chosen {
		o := &cands[ci]
		shared := 0
		for _, w := range c.words {
			if slices.Contains(o.words, w) {
				shared++
			}
		}
		if small := min(len(c.words), len(o.words)); small > 0 && float64(shared) >= 0.7*float64(small) {
			return true
		}
	}
	return false
}

// templateKey normalises a sentence so that the same phrasing with
// different quotes, numbers or plurals compares equal: "You said “hi” (1
// word)." and "You said “hello there” (2 words)." share a key.
func templateKey(s string) string {
	var b strings.Builder
	quote := rune(0)
	for _, r := range strings.ToLower(s) {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
			continue
		case r == '“':
			quote = '”'
			continue
		case r == '«':
			quote = '»'
			continue
		case r == '"':
			quote = '"'
			continue
		case unicode.IsDigit(r):
			r = '#'
		}
		b.WriteRune(r)
	}
	words := strings.Fields(b.String())
	for i, w := range words {
		words[i] = strings.TrimSuffix(w, "s") // "1 word", "2 words"
	}
	return strings.Join(words, " ")
}

// tokens returns the lower-cased words of s: runs of letters and digits.
func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

func isContentWord(t string) bool {
	if stopwords[t] {
		return false
	}
	return utf8.RuneCountInString(t) >= 3 || strings.ContainsFunc(t, unicode.IsDigit)
}

// hasName reports whether s has a capitalised word after its first word
// (other than "I"), an acronym, an e-mail address or a URL.
func hasName(s string) bool {
	if strings.Contains(s, "@") || strings.Contains(s, "://") {
		return true
	}
	for i, w := range strings.Fields(s) {
		w = strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		r, _ := utf8.DecodeRuneInString(w)
		if w == "" || w == "I" || !unicode.IsUpper(r) {
			continue
		}
		if i > 0 || (utf8.RuneCountInString(w) > 1 && strings.ToUpper(w) == w) {
			return true
		}
	}
	return false
}

func hasLetterOrDigit(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
}

// cutAtWord shortens s to at most n runes, at a space where one is near,
// ending with "…".
func cutAtWord(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n-1]
	if i := strings.LastIndexByte(string(r), ' '); i > len(string(r))*2/3 {
		return strings.TrimRight(string(r)[:i], " ,;:") + "…"
	}
	return string(r) + "…"
}

// cutRunes shortens s to at most n runes (n >= 1), ending with "…".
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return cutAtWord(s, n)
}

var firstPerson = setOf("i", "i'm", "im", "my", "me", "mine", "we", "our", "us")

// cues mark sentences people say when they want something kept.
var cues = setOf("remember", "important", "prefer", "prefers", "always", "never",
	"deadline", "due", "birthday", "allergic", "name", "called", "lives", "live",
	"works", "work", "favourite", "favorite", "decided", "agreed", "todo", "must")

var stopwords = setOf(
	"a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
	"are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
	"but", "by", "can", "could", "did", "do", "does", "doing", "don", "done", "down", "during",
	"each", "else", "even", "ever", "few", "for", "from", "further", "get", "got", "had", "has",
	"have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how",
	"however", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "let", "like",
	"ll", "may", "me", "might", "more", "most", "much", "must", "my", "myself", "no", "nor",
	"not", "now", "of", "off", "ok", "okay", "on", "once", "one", "only", "or", "other", "our",
	"ours", "ourselves", "out", "over", "own", "please", "re", "really", "said", "same", "say",
	"says", "see", "she", "should", "so", "some", "still", "such", "sure", "than", "thank",
	"thanks", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these",
	"they", "thing", "things", "think", "this", "those", "through", "to", "too", "under",
	"until", "up", "us", "use", "ve", "very", "want", "was", "way", "we", "well", "were",
	"what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would",
	"yes", "yet", "you", "your", "yours", "yourself", "yourselves",
	// pleasantries
	"hello", "hey", "hi", "bye", "goodbye", "welcome", "sorry", "great", "nice", "cool",
	"fine", "awesome", "perfect", "cheers", "glad", "happy", "help",
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
