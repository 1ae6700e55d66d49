package index

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Ranking. In "and" mode every hit holds every term, so BM25's idf part
// is the same for all of them and only its length normalisation (and term
// frequency) tells them apart. The score is BM25's per-term weight with
// the term frequency taken as 1 — chat messages seldom repeat a word, and
// counting repeats would need FTS5's bm25(), whose bookkeeping costs about
// 1.5 µs a match and a pass over every posting of every term in a pure-Go
// SQLite — raised by up to RecencyBoost for recent messages:
//
//	score = (k1 + 1) / (1 + k1 × (1 − b + b × words / avgWords))
//	        × (1 + RecencyBoost × 2^(−age / RecencyHalfLife))
//
// with BM25's usual k1 = 1.2 and b = 0.75: a short message that says just
// the thing beats a long one that mentions it in passing. In "or" mode
// hits hold different terms, so the rare terms must weigh more: there the
// score is FTS5's full bm25() (negated) times the same recency factor.
// A message from today gets ×1.25, one a month old ×1.125, one a year old
// ×1.0: recency breaks near-ties between equally good matches (the newest
// of two "dentist appointment" messages first) but never lifts a weak
// match over a clearly better one. Equal scores go newest first.
const (
	RecencyBoost    = 0.25
	RecencyHalfLife = 30 * 24 * time.Hour
	bm25K1          = 1.2
	bm25B           = 0.75
)

// RankWindow bounds the work of a broad query. BM25 costs about 1.5 µs a
// match here (a pure-Go SQLite), so a word in every tenth message of a
// million would take 100 ms to rank. When more than RankWindow messages
// match, only the newest RankWindow of them are ranked, and the result
// says so (Result.Broad): such a query is too broad to rank usefully, and
// another word narrows it. Memory sections have ids above every seq, so
// they are always in the window.
const RankWindow = 5000

// Snippet marks: a hit's snippet wraps each matched term in these, and
// cuts at word boundaries with "…".
const (
	MarkStart = "«"
	MarkEnd   = "»"
)

// snippetTokens is how many words a snippet shows around the matches.
const snippetTokens = 24

// Hit is one search result.
type Hit struct {
	Seq     int64     `json:"seq"` // 0 for a memory section
	TS      time.Time `json:"ts"`
	Turn    string    `json:"turn,omitempty"`
	Type    string    `json:"type"` // user, assistant or memory
	Channel string    `json:"channel,omitempty"`
	From    string    `json:"from,omitempty"`
	// Snippet is the matching part of the content, matched terms between
	// MarkStart and MarkEnd.
	Snippet string  `json:"snippet"`
	Score   float64 `json:"score"`
	// Found says how a hybrid search found the hit: FoundWords,
	// FoundMeaning (no word of the query matched: the snippet is the
	// start of the text, nothing marked) or FoundBoth. Empty in a search
	// by keywords only: every hit was found by its words.
	Found string `json:"found,omitempty"`
	// Item is a memory hit's item id, the "[id]" its text starts with
	// (memory.Doc); empty for messages.
	Item string `json:"item,omitempty"`
}

// How a hybrid search found a hit (Hit.Found).
const (
	FoundWords   = "words"
	FoundMeaning = "meaning"
	FoundBoth    = "words+meaning"
)

// MarshalJSON writes TS as events do, in UTC with milliseconds.
func (h Hit) MarshalJSON() ([]byte, error) {
	type plain Hit
	return json.Marshal(struct {
		plain
		TS event.Time `json:"ts"`
	}{plain(h), event.Time(h.TS)})
}

// Modes of a Result.
const (
	ModeAnd = "and" // every term matched
	ModeOr  = "or"  // no message had every term: the best partial matches
)

// Result is a search's answer.
type Result struct {
	Hits []Hit  `json:"hits"`
	Mode string `json:"mode"`
	// Indexing is set when the index had not caught up with the chat log:
	// the newest messages may be missing from Hits.
	Indexing *Progress `json:"indexing,omitempty"`
	// Broad says more than RankWindow messages matched: the hits are the
	// best of the newest RankWindow. Add a word to narrow the search.
	Broad bool `json:"broad,omitempty"`
	// Semantic is set when search by meaning is configured and the query
	// has words: SemanticHybrid, or SemanticUnavailable when the
	// embeddings server did not answer in time and the hits are by
	// keywords only. Empty without embeddings.
	Semantic string `json:"semantic,omitempty"`
	// Embedding is set while some documents have no vector yet (they are
	// found by their words only).
	Embedding *EmbedProgress `json:"embedding,omitempty"`
}

// Progress says how far the index is behind the chat log.
type Progress struct {
	IndexedSeq int64 `json:"indexed_seq"`
	LogSeq     int64 `json:"log_seq"`
	// Checking is set while the index, just opened, is being checked for
	// damage (Index.Check): the hits come from a file not yet verified.
	Checking bool `json:"checking,omitempty"`
}

// Options shape a search.
type Options struct {
	// Limit is the most hits returned. Default 20.
	Limit int
	// ExcludeTurn leaves out the messages of this turn: the running turn's
	// own input is never a hit for its own tool call.
	ExcludeTurn string
	// Now is the time recency is measured from. Default time.Now().
	Now time.Time
}

// Search runs query (see Query for the syntax). It returns a *QueryError
// for a query it cannot run and ErrCorrupt-wrapped errors when the index
// is damaged; never a raw SQL error for a query's sake.
func (ix *Index) Search(ctx context.Context, query string, opts Options) (Result, error) {
	q, err := ParseQuery(query)
	if err != nil {
		return Result{}, err
	}
	return ix.SearchQuery(ctx, q, opts)
}

// SearchQuery runs a parsed query: every term (AND) first, and if nothing
// matches and there is more than one term, any of them (OR).
func (ix *Index) SearchQuery(ctx context.Context, q Query, opts Options) (Result, error) {
	if opts.Limit <= 0 {
		opts.Limit = 20
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	res := Result{Mode: ModeAnd}
	if len(q.Terms) == 0 {
		hits, err := ix.filtered(ctx, q, opts)
		res.Hits = hits
		return res, err
	}
	hits, broad, err := ix.ranked(ctx, q, q.match(false), false, opts)
	if err != nil {
		return res, err
	}
	if len(hits) == 0 && q.searchable() > 1 {
		res.Mode = ModeOr
		hits, broad, err = ix.ranked(ctx, q, q.match(true), true, opts)
	}
	res.Hits, res.Broad = hits, broad
	return res, err
}

// where adds the filters of q and opts to a query over docs aliased d.
func where(q Query, opts Options, sql *strings.Builder, args *[]any) {
	if q.Channel != "" {
		sql.WriteString(" AND d.channel = ?")
		*args = append(*args, q.Channel)
	}
	if q.From != "" {
		sql.WriteString(" AND lower(d.sender) = ?")
		*args = append(*args, q.From)
	}
	if q.Type != "" {
		sql.WriteString(" AND d.type = ?")
		*args = append(*args, q.Type)
	}
	if !q.Before.IsZero() {
		sql.WriteString(" AND d.ts < ?")
		*args = append(*args, q.Before.UnixMilli())
	}
	if !q.After.IsZero() {
		sql.WriteString(" AND d.ts >= ?")
		*args = append(*args, q.After.UnixMilli())
	}
	if opts.ExcludeTurn != "" {
		sql.WriteString(" AND d.turn != ?")
		*args = append(*args, opts.ExcludeTurn)
	}
}

// ranked finds the best opts.Limit matches of expr, then makes their
// snippets: snippet() costs a read of the content, so only the winners
// pay it.
func (ix *Index) ranked(ctx context.Context, q Query, expr string, or bool, opts Options) (hits []Hit, broad bool, err error) {
	found, broad, err := ix.rankedFound(ctx, q, expr, or, opts)
	if err != nil || len(found) == 0 {
		return nil, broad, err
	}
	snip, err := ix.snippets(ctx, expr, found)
	if err != nil {
		return nil, broad, err
	}
	hits = make([]Hit, len(found))
	for i, f := range found {
		hits[i] = f.hit
		hits[i].Snippet = flatten(snip[f.id])
	}
	return hits, broad, nil
}

// rankedFound finds the best opts.Limit matches of expr, without their
// snippets.
func (ix *Index) rankedFound(ctx context.Context, q Query, expr string, or bool, opts Options) (found []found, broad bool, err error) {
	const match = ` FROM fts JOIN docs d ON d.id = fts.rowid WHERE fts MATCH ?`
	var from strings.Builder
	from.WriteString(match)
	fargs := []any{expr}
	where(q, opts, &from, &fargs)

	floor, err := ix.window(ctx, q, expr)
	if err != nil {
		return nil, false, err
	}
	broad = floor.Valid

	var b strings.Builder
	var args []any
	b.WriteString(`SELECT d.id, d.ts, d.turn, d.type, d.channel, d.sender, `)
	if or {
		b.WriteString(`-bm25(fts)`)
	} else {
		avg, err := ix.avgWords(ctx)
		if err != nil {
			return nil, false, err
		}
		b.WriteString(`(? + 1) / (1 + ? * (1 - ? + ? * d.len / ?))`)
		args = append(args, bm25K1, bm25K1, bm25B, bm25B, avg)
	}
	// ln 2 / half-life in ms: 2^(−age/H) = exp(−age·ln2/H).
	// A memory document's start, for its item id (itemOf); the
	// snippets of the winners are made after.
	b.WriteString(` * (1 + ? * exp(-max(? - d.ts, 0) * ?)) AS score, CASE d.type WHEN 'memory' THEN substr(d.content, 1, 40) ELSE '' END`)
	args = append(args, RecencyBoost, opts.Now.UnixMilli(), math.Ln2/float64(RecencyHalfLife.Milliseconds()))
	b.WriteString(from.String())
	args = append(args, fargs...)
	if broad {
		b.WriteString(" AND fts.rowid >= ?") // FTS5 starts at the floor
		args = append(args, floor.Int64)
	}
	b.WriteString(" ORDER BY score DESC, d.id DESC LIMIT ?")
	args = append(args, opts.Limit)
	found, err = ix.query(ctx, b.String(), args)
	return found, broad, err
}

// window finds the id of the RankWindow-th newest match of expr, if there
// are that many (Valid): ranking then looks only at matches from there on.
func (ix *Index) window(ctx context.Context, q Query, expr string) (sql.NullInt64, error) {
	const match = ` FROM fts JOIN docs d ON d.id = fts.rowid WHERE fts MATCH ?`
	// The window: the id of the RankWindow-th newest match, if there are
	// that many. FTS5 yields matches in rowid order, so this reads
	// RankWindow postings, not all of them; the join with docs is made
	// only when a filter needs it (it costs a lookup a match). The
	// excluded turn does not count: at most two documents.
	floorSQL := strings.Builder{}
	floorArgs := []any{expr}
	where(q, Options{}, &floorSQL, &floorArgs)
	if len(floorArgs) == 1 {
		floorSQL.WriteString(`SELECT rowid FROM fts WHERE fts MATCH ?`)
	} else {
		filters := floorSQL.String()
		floorSQL.Reset()
		floorSQL.WriteString(`SELECT fts.rowid` + match + filters)
	}
	var floor sql.NullInt64
	err := ix.db.QueryRowContext(ctx, floorSQL.String()+` ORDER BY fts.rowid DESC LIMIT 1 OFFSET ?`,
		append(floorArgs, RankWindow-1)...).Scan(&floor)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return floor, classify("search", err)
	}
	return floor, nil
}

// snippets makes the snippets of the found documents, by id, cut at whole
// words.
func (ix *Index) snippets(ctx context.Context, expr string, docs []found) (map[int64]string, error) {
	ids := make([]string, len(docs))
	for i, f := range docs {
		ids[i] = strconv.FormatInt(f.id, 10)
	}
	rows, err := ix.db.QueryContext(ctx,
		`SELECT rowid, snippet(fts, 0, ?, ?, '…', ?), content FROM fts WHERE fts MATCH ? AND rowid IN (`+strings.Join(ids, ",")+`)`,
		MarkStart, MarkEnd, snippetTokens, expr)
	if err != nil {
		return nil, classify("search", err)
	}
	defer rows.Close()
	snip := make(map[int64]string, len(docs))
	for rows.Next() {
		var id int64
		var s, content string
		if err := rows.Scan(&id, &s, &content); err != nil {
			return nil, classify("search", err)
		}
		snip[id] = wholeWords(s, content)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("search", err)
	}
	return snip, nil
}

// filtered lists the newest documents that pass a filter-only query.
func (ix *Index) filtered(ctx context.Context, q Query, opts Options) ([]Hit, error) {
	var b strings.Builder
	b.WriteString(`SELECT d.id, d.ts, d.turn, d.type, d.channel, d.sender, 0, d.content FROM docs d WHERE 1`)
	var args []any
	where(q, opts, &b, &args)
	// Newest first by id (seq order is time order), which the table
	// yields without sorting.
	b.WriteString(" ORDER BY d.id DESC LIMIT ?")
	args = append(args, opts.Limit)
	found, err := ix.query(ctx, b.String(), args)
	hits := make([]Hit, len(found))
	for i, f := range found {
		hits[i] = f.hit
	}
	return hits, err
}

// found is a hit with its document id (memoryBase and up for memory).
type found struct {
	id  int64
	hit Hit
}

// query scans rows of id, ts, turn, type, channel, sender, score and
// content (made the snippet when not empty).
func (ix *Index) query(ctx context.Context, sql string, args []any) ([]found, error) {
	rows, err := ix.db.QueryContext(ctx, sql, args...)
	if err != nil {
		return nil, classify("search", err)
	}
	defer rows.Close()
	var out []found
	for rows.Next() {
		var f found
		var ts int64
		var content string
		h := &f.hit
		if err := rows.Scan(&f.id, &ts, &h.Turn, &h.Type, &h.Channel, &h.From, &h.Score, &content); err != nil {
			return nil, classify("search", err)
		}
		h.TS = time.UnixMilli(ts).UTC()
		h.Snippet = cut(flatten(content), 200)
		if f.id < memoryBase {
			h.Seq = f.id
		}
		h.Item = itemOf(h.Type, content)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("search", err)
	}
	return out, nil
}

// itemOf is the item id a memory document's content starts with, in
// brackets ("[m3] …", see memory.Doc); "" for any other document.
func itemOf(typ, content string) string {
	if typ != TypeMemory || !strings.HasPrefix(content, "[") {
		return ""
	}
	id, _, ok := strings.Cut(content[1:], "]")
	if !ok || len(id) > 32 || strings.ContainsAny(id, " \n") {
		return ""
	}
	return id
}

// flatten turns runs of white space into single spaces.
func flatten(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cut shortens s to about n bytes at a word boundary, with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := strings.LastIndexByte(s[:n], ' ')
	if i < n/2 {
		i = n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
	}
	return s[:i] + "…"
}

// String describes a result for humans (the REPL and the history command).
func (r Result) String() string {
	s := fmt.Sprintf("%d hits", len(r.Hits))
	if r.Mode == ModeOr {
		s += " (no message has every word: showing partial matches)"
	}
	if r.Broad {
		s += fmt.Sprintf(" (over %d messages match: the best of the newest %d; add a word to narrow)", RankWindow, RankWindow)
	}
	switch {
	case r.Indexing != nil && r.Indexing.Checking:
		s += " (index still being checked for damage)"
	case r.Indexing != nil:
		s += fmt.Sprintf(" (index still catching up: seq %d of %d)", r.Indexing.IndexedSeq, r.Indexing.LogSeq)
	}
	return s
}
