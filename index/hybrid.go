package index

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Hybrid ranking (search by meaning). With an embeddings server
// configured, a query with words is answered from two rankings: the
// keyword one (BM25 × recency, as without embeddings, with the same
// filters) and the documents whose vectors are nearest the query's
// (cosine), filtered alike. They are fused by reciprocal rank fusion: a
// document scores Σ 1 / (FuseK + rank) over the rankings it is in. RRF
// needs no calibration between BM25's scores and cosines (whose spread
// differs from model to model) and rewards what both rankings agree on;
// BenchmarkFusion compares it with the alternatives on the recall and
// paraphrase sets.
const (
	// FuseK damps the weight of the first ranks (the usual 60).
	FuseK = 60
	// fuseCandidates is how many of each ranking are fused.
	fuseCandidates = 50
	// vecScan is how many nearest vectors pass the store's own filters
	// (type, before, after) before SQLite applies the rest (channel,
	// from, the excluded turn).
	vecScan = 200
	// MinSimilarity is the least cosine a document needs to be found by
	// meaning alone: below it the nearest vectors are noise (a query
	// about nothing the conversation held would otherwise always "find"
	// something). 0.25 was chosen with the stand-in embedder
	// (embedtest.Concepts); a model whose unrelated texts score higher
	// lets some noise through, ranked after the keyword matches by the
	// fusion — BenchmarkFusion against the model shows it.
	MinSimilarity = 0.25
)

// Semantic states of a Result.
const (
	// SemanticHybrid: the hits fuse keywords and meaning.
	SemanticHybrid = "hybrid"
	// SemanticUnavailable: the embeddings server did not answer in time
	// (or failed); the hits are by keywords only.
	SemanticUnavailable = "unavailable"
)

// EmbedProgress says how many of the index's documents have vectors, set
// while some have none yet: they are found by keywords only.
type EmbedProgress struct {
	Embedded int64 `json:"embedded"`
	Docs     int64 `json:"docs"`
}

// SearchHybrid runs q fusing keywords with the documents nearest qv, the
// query's unit vector. Without qv, or for a query of filters only, it
// answers by keywords as SearchQuery does.
func (ix *Index) SearchHybrid(ctx context.Context, q Query, opts Options, qv []float32) (Result, error) {
	return ix.searchHybrid(ctx, q, opts, func() []float32 { return qv })
}

// searchHybrid is SearchHybrid with the query's vector from vector (the
// Follower asks the embeddings server for it meanwhile); nil: keywords
// only. The vectors are scanned on a goroutine of their own while the
// keywords are ranked: the scan is in memory, the ranking in SQLite, and
// each would otherwise wait for the other.
func (ix *Index) searchHybrid(ctx context.Context, q Query, opts Options, vector func() []float32) (Result, error) {
	if len(q.Terms) == 0 {
		return ix.SearchQuery(ctx, q, opts)
	}
	if opts.Limit <= 0 {
		opts.Limit = 20
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	type scan struct {
		asked bool // a vector came
		near  []scored
	}
	scanned := make(chan scan, 1)
	go func() {
		qv := vector()
		if qv == nil {
			scanned <- scan{}
			return
		}
		scanned <- scan{true, ix.vec.search(qv, vecScan, filterOf(q))}
	}()
	res, expr, kw, err := ix.keywordRanking(ctx, q, opts)
	sc := <-scanned // always: vector may write what its caller reads after
	if err != nil {
		return res, err
	}
	if !sc.asked {
		return ix.keywordHits(ctx, res, expr, kw, opts.Limit)
	}
	near, err := ix.nearest(ctx, q, opts, sc.near, max(opts.Limit, fuseCandidates))
	if err != nil {
		return res, err
	}
	res.Hits, err = ix.fusedHits(ctx, expr, res.Mode == ModeOr, kw, near, opts.Limit)
	return res, err
}

// keywordRanking ranks the fusion's keyword candidates: the documents with
// every word, or with any when none has them all.
func (ix *Index) keywordRanking(ctx context.Context, q Query, opts Options) (res Result, expr string, kw []found, err error) {
	res = Result{Mode: ModeAnd, Semantic: SemanticHybrid}
	kopts := opts
	kopts.Limit = max(opts.Limit, fuseCandidates)
	expr = q.match(false)
	kw, broad, err := ix.rankedFound(ctx, q, expr, false, kopts)
	if err != nil {
		return res, expr, nil, err
	}
	if len(kw) == 0 && q.searchable() > 1 {
		res.Mode = ModeOr
		expr = q.match(true)
		if kw, broad, err = ix.rankedFound(ctx, q, expr, true, kopts); err != nil {
			return res, expr, nil, err
		}
	}
	res.Broad = broad
	return res, expr, kw, nil
}

// keywordHits is res with the first limit keyword matches and their
// snippets: the answer without a query vector.
func (ix *Index) keywordHits(ctx context.Context, res Result, expr string, kw []found, limit int) (Result, error) {
	res.Semantic = ""
	kw = kw[:min(limit, len(kw))]
	if len(kw) == 0 {
		return res, nil
	}
	snip, err := ix.snippets(ctx, expr, kw)
	if err != nil {
		return res, err
	}
	res.Hits = make([]Hit, len(kw))
	for i, f := range kw {
		res.Hits[i] = f.hit
		res.Hits[i].Snippet = flatten(snip[f.id])
	}
	return res, nil
}

// fusedHits fuses the two rankings and makes the winners' snippets: the
// terms marked where the words matched, the start of the text where only
// the meaning did.
func (ix *Index) fusedHits(ctx context.Context, expr string, or bool, kw, near []found, limit int) ([]Hit, error) {
	w := fuseWeights.and
	if or {
		w = fuseWeights.or
	}
	top := fuse(limit, w, kw, near)
	var matched []found
	inKW := make(map[int64]bool, len(kw))
	for _, f := range kw {
		inKW[f.id] = true
	}
	for _, f := range top {
		if inKW[f.id] {
			matched = append(matched, f)
		}
	}
	var snip map[int64]string
	if len(matched) > 0 {
		var err error
		if snip, err = ix.snippets(ctx, expr, matched); err != nil {
			return nil, err
		}
	}
	inNear := make(map[int64]bool, len(near))
	for _, f := range near {
		inNear[f.id] = true
	}
	hits := make([]Hit, len(top))
	for i, f := range top {
		hits[i] = f.hit
		if s, ok := snip[f.id]; ok {
			hits[i].Snippet = flatten(s)
		}
		switch {
		case inKW[f.id] && inNear[f.id]:
			hits[i].Found = FoundBoth
		case inKW[f.id]:
			hits[i].Found = FoundWords
		default:
			hits[i].Found = FoundMeaning
		}
	}
	return hits, nil
}

// fuseWeights weigh the keyword ranking in the fusion (the vector
// ranking weighs 1). When some document has every word (mode "and") the
// words are strong evidence: 1.5 keeps the best keyword match first unless
// the meaning ranks another high too (at 1, a document in both rankings
// lower down outscores it: recall@1 on the keyword set fell from 0.83 to
// 0.75). When none has ("or"), 0.01 only orders the tail: partial word
// matches ("car" for "which car did I purchase") would otherwise crowd
// out what the meaning finds (plain RRF: 0.87 at 5 on the paraphrase set,
// this 0.97). Measured with BenchmarkFusion; the weights were chosen on
// these two sets, so a real model's figures are the check.
var fuseWeights = struct{ and, or float64 }{1.5, 0.01}

// fuse is weighted reciprocal rank fusion of the keyword and the vector
// rankings, best first, at most limit; each hit's Score becomes its fused
// score. Ties go newest first.
func fuse(limit int, wKW float64, kw, near []found) []found {
	score := map[int64]float64{}
	byID := map[int64]found{}
	for j, r := range [][]found{kw, near} {
		w := 1.0
		if j == 0 {
			w = wKW
		}
		for i, f := range r {
			score[f.id] += w / float64(FuseK+i+1)
			if _, ok := byID[f.id]; !ok {
				byID[f.id] = f
			}
		}
	}
	out := make([]found, 0, len(byID))
	for id, f := range byID {
		f.hit.Score = score[id]
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b found) int {
		if c := cmp.Compare(b.hit.Score, a.hit.Score); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	return out[:min(limit, len(out))]
}

// filterOf is q's filters the vector store applies itself.
func filterOf(q Query) vecFilter {
	f := vecFilter{kind: -1}
	if q.Type != "" {
		f.kind = int(kindOf(q.Type))
	}
	if !q.Before.IsZero() {
		f.before = q.Before.UnixMilli()
	}
	if !q.After.IsZero() {
		f.after = q.After.UnixMilli()
	}
	return f
}

// nearest returns up to n of the scanned documents near that pass q's
// filters and opts' exclusion, nearest first, Score their cosine.
func (ix *Index) nearest(ctx context.Context, q Query, opts Options, near []scored, n int) ([]found, error) {
	if len(near) == 0 {
		return nil, nil
	}
	ids := make([]string, len(near))
	for i, s := range near {
		ids[i] = strconv.FormatInt(s.id, 10)
	}
	var b strings.Builder
	b.WriteString(`SELECT d.id, d.ts, d.turn, d.type, d.channel, d.sender, 0, d.content FROM docs d WHERE d.id IN (` + strings.Join(ids, ",") + `)`)
	var args []any
	where(q, opts, &b, &args)
	rows, err := ix.query(ctx, b.String(), args)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]found, len(rows))
	for _, r := range rows {
		byID[r.id] = r
	}
	out := make([]found, 0, n)
	for _, s := range near {
		if r, ok := byID[s.id]; ok && len(out) < n && s.sim >= MinSimilarity {
			r.hit.Score = float64(s.sim)
			out = append(out, r)
		}
	}
	return out, nil
}
