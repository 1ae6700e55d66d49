package index

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Query limits: a query is what a person types or a model writes, not a
// document; past these it is a mistake, and FTS5's cost grows with terms.
const (
	MaxQueryBytes = 1024
	MaxQueryTerms = 16
)

// QueryError is a query that cannot be run; its text says how to fix it.
type QueryError struct{ Msg string }

func (e *QueryError) Error() string { return e.Msg }

func queryErr(format string, a ...any) error { return &QueryError{fmt.Sprintf(format, a...)} }

// IsQueryError reports whether err is the caller's query's fault.
func IsQueryError(err error) bool {
	var qe *QueryError
	return errors.As(err, &qe)
}

// Query is a parsed search query. The syntax (Syntax says it in prose):
//
//   - words, in any order, all of which must match (stemmed, case and
//     accents folded); common words ("the", "my", "is") are left out
//     unless the query has nothing else;
//   - "an exact phrase";
//   - prefix* (at least two letters before the star);
//   - filters channel:NAME, from:ADDRESS, type:user|assistant|memory,
//     before:DATE and after:DATE (2026-11-22 or RFC 3339; before is
//     exclusive, after inclusive).
//
// Anything else — FTS5 operators such as NEAR( or col:, stray quotes,
// punctuation — is taken as plain words: the parser quotes every term,
// so no input reaches SQLite as syntax.
type Query struct {
	Terms   []Term
	Channel string
	From    string
	Type    string
	Before  time.Time
	After   time.Time
}

// Term is one word or phrase of a query.
type Term struct {
	Words  []string // lower-cased tokens; more than one is a phrase
	Prefix bool     // the last word is a prefix
	Stop   bool     // a common word, left out of the match when others exist
}

// Syntax describes the query language for the agent's tool description
// and the help texts.
const Syntax = `Words in any order must all match (stemmed: "birthday" finds "birthdays"; case and accents ignored); ` +
	`when no message has them all, the best partial matches are returned and mode says "or". ` +
	`"exact phrase" in double quotes; prefix* for word starts; filters channel:web|console|email|webhook, ` +
	`from:ADDRESS, type:user|assistant|memory (memory = older long-term memory sections), ` +
	`before:2026-11-22 and after:2026-11-01 (or RFC 3339 times). Use a few distinctive keywords, not a sentence.`

// ParseQuery parses s. It fails only for input no search can use: too
// long, not UTF-8, a bad filter value, or nothing to search for.
func ParseQuery(s string) (Query, error) {
	var q Query
	if len(s) > MaxQueryBytes {
		return q, queryErr("query is too long (%d bytes; at most %d): use a few keywords", len(s), MaxQueryBytes)
	}
	if !utf8.ValidString(s) {
		return q, queryErr("query is not valid UTF-8")
	}
	rest := s
	for {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			break
		}
		var tok string
		var quoted bool
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				// An unbalanced quote: the rest is plain words.
				tok, rest = rest[1:], ""
			} else {
				tok, rest, quoted = rest[1:1+end], rest[2+end:], true
			}
		} else {
			end := strings.IndexFunc(rest, unicode.IsSpace)
			if end < 0 {
				end = len(rest)
			}
			tok, rest = rest[:end], rest[end:]
		}
		if !quoted {
			ok, err := q.filter(tok, &rest)
			if err != nil {
				return q, err
			}
			if ok {
				continue
			}
		}
		q.addTerms(tok, quoted)
	}
	if len(q.Terms) > MaxQueryTerms {
		return q, queryErr("query has %d terms; at most %d: use a few distinctive keywords", len(q.Terms), MaxQueryTerms)
	}
	if len(q.Terms) == 0 && !q.hasFilter() {
		return q, queryErr("query has no words to search for")
	}
	return q, nil
}

func (q *Query) hasFilter() bool {
	return q.Channel != "" || q.From != "" || q.Type != "" || !q.Before.IsZero() || !q.After.IsZero()
}

// filter takes tok if it is a known key:value filter. A quoted value
// (from:"Ann Smith") continues into rest.
func (q *Query) filter(tok string, rest *string) (bool, error) {
	key, val, ok := strings.Cut(tok, ":")
	if !ok {
		return false, nil
	}
	key = strings.ToLower(key)
	switch key {
	case "channel", "from", "type", "before", "after":
	default:
		return false, nil // "col:x", "http://…", "10:30" are words
	}
	if strings.HasPrefix(val, `"`) {
		v := val[1:] + *rest
		if end := strings.IndexByte(v, '"'); end >= 0 {
			val, *rest = v[:end], v[end+1:]
		} else {
			val, *rest = v, ""
		}
	}
	val = strings.TrimSpace(val)
	if val == "" {
		return true, queryErr("%s: needs a value (e.g. %s)", key, filterExample[key])
	}
	switch key {
	case "channel":
		q.Channel = strings.ToLower(val)
	case "from":
		q.From = strings.ToLower(val)
	case "type":
		switch v := strings.ToLower(val); v {
		case "user", "assistant", TypeMemory:
			q.Type = v
		default:
			return true, queryErr("type:%s: use type:user, type:assistant or type:memory", val)
		}
	case "before", "after":
		t, err := parseWhen(val)
		if err != nil {
			return true, queryErr("%s:%s: want a date (2026-11-22) or an RFC 3339 time (2026-11-22T10:00:00Z)", key, val)
		}
		if key == "before" {
			q.Before = t
		} else {
			q.After = t
		}
	}
	return true, nil
}

var filterExample = map[string]string{
	"channel": "channel:email", "from": "from:ann@example.com", "type": "type:user",
	"before": "before:2026-11-22", "after": "after:2026-11-01",
}

func parseWhen(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Parse("2006-01-02", s)
}

// addTerms splits text into words the way the index's tokenizer does
// (letters, digits and marks; everything else separates) and adds them:
// one phrase term if quoted, else a term per word. A possessive "'s" is
// dropped, since the tokenizer would make it a lone "s".
func (q *Query) addTerms(text string, phrase bool) {
	prefix := !phrase && strings.HasSuffix(text, "*")
	words := tokenize(text)
	if len(words) == 0 {
		return
	}
	if phrase && len(words) > 1 {
		q.Terms = append(q.Terms, Term{Words: words})
		return
	}
	for i, w := range words {
		t := Term{Words: []string{w}, Stop: isStop(w)}
		// Only the word the star touches is a prefix, and only one long
		// enough to narrow anything down.
		if prefix && i == len(words)-1 && utf8.RuneCountInString(w) >= 2 {
			t.Prefix, t.Stop = true, false
		}
		if !q.has(t) {
			q.Terms = append(q.Terms, t)
		}
	}
}

func (q *Query) has(t Term) bool {
	for _, o := range q.Terms {
		if o.Prefix == t.Prefix && strings.Join(o.Words, " ") == strings.Join(t.Words, " ") {
			return true
		}
	}
	return false
}

func tokenize(s string) []string {
	s = strings.NewReplacer("'s ", " ", "’s ", " ").Replace(s + " ")
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
}

// match returns the FTS5 MATCH expression: every term quoted (so nothing
// is FTS5 syntax), joined by AND, or by OR for the partial-match fallback.
// Common words are left out when other terms exist.
func (q Query) match(or bool) string {
	terms := q.Terms
	if q.hasContent() {
		terms = terms[:0:0]
		for _, t := range q.Terms {
			if !t.Stop {
				terms = append(terms, t)
			}
		}
	}
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		s := `"` + strings.Join(t.Words, " ") + `"`
		if t.Prefix {
			s += "*"
		}
		parts = append(parts, s)
	}
	if or {
		return strings.Join(parts, " OR ")
	}
	return strings.Join(parts, " AND ")
}

// hasContent reports whether the query has a term that is not a common
// word.
func (q Query) hasContent() bool {
	for _, t := range q.Terms {
		if !t.Stop {
			return true
		}
	}
	return false
}

// searchable returns the number of terms match uses.
func (q Query) searchable() int {
	if !q.hasContent() {
		return len(q.Terms)
	}
	n := 0
	for _, t := range q.Terms {
		if !t.Stop {
			n++
		}
	}
	return n
}

func isStop(w string) bool {
	if utf8.RuneCountInString(w) == 1 {
		return true
	}
	_, ok := stopWords[w]
	return ok
}

// stopWords are English function words: they carry no topic, and as AND
// terms they only lose matches ("when is my sister's birthday" must find
// "sister birthday 14 March").
var stopWords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`a about above after again all am an and any are as at be because been
		before being below between both but by can could did do does doing down during each few for from
		further had has have having he her here hers herself him himself his how i if in into is it its
		itself just me more most my myself no nor not now of off on once only or other our ours ourselves
		out over own same she should so some such than that the their theirs them themselves then there
		these they this those through to too under until up very was we were what when where which while
		who whom why will with would you your yours yourself yourselves again also ever please tell told
		say said did does remember`) {
		m[w] = struct{}{}
	}
	return m
}()
