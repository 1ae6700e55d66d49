package index

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Embedder turns texts into unit-length vectors, one a text, all of one
// dimension; *embed.Client is one. Its methods may be called from any
// goroutine, and Embed must end within a bound of its own.
type Embedder interface {
	Model() string
	Batch() int
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// queryWait bounds a search's wait for its query's vector: past it the
// search answers from keywords, marked SemanticUnavailable.
const queryWait = 2 * time.Second

// semanticPause is how long searches skip the embeddings server after it
// failed one: they answer from keywords at once instead of each waiting.
const semanticPause = 10 * time.Second

// embedRetry is the wait before embedding is tried again after a failure.
const embedRetry = 5 * time.Second

// wakeEmbed tells the embedding loop that there may be documents without
// vectors. It never blocks.
func (f *Follower) wakeEmbed() {
	select {
	case f.embWake <- struct{}{}:
	default:
	}
}

// embedLoop gives every document of the index a vector, in batches,
// behind the indexing, until ctx ends. It runs on a goroutine of its own
// (Run starts it) so a slow embeddings server never holds up indexing.
// A failure is logged once and retried; a document without a vector is
// still found by its words.
func (f *Follower) embedLoop(ctx context.Context) {
	var cur embedCursor
	cur.gen = ^uint64(0)
	var failing error
	retry := time.NewTimer(0)
	retry.Stop()
	for {
		err := f.embedPending(ctx, &cur)
		f.sem.setFailing(err)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errEmbedStopped):
			f.sem.setFailing(nil)
			f.opts.Logger.Error("search index: "+f.SemanticStatus().Reason, "model", f.opts.Embedder.Model())
			return
		case errors.Is(err, ErrCorrupt):
			f.markDamaged(err)
		case err != nil:
			if failing == nil || failing.Error() != err.Error() {
				f.opts.Logger.Warn("search index: embedding for search by meaning failed; retrying (keyword search is unaffected)", "err", err)
			}
			failing = err
			retry.Reset(embedRetry)
		case failing != nil:
			f.opts.Logger.Info("search index: embedding works again")
			failing = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-f.embWake:
		case <-retry.C:
		}
	}
}

// embedCursor is the embedding loop's place: every message up to after
// has a vector, in the index of generation gen.
type embedCursor struct {
	gen   uint64
	after int64
}

// embedPending embeds the documents without vectors until there are
// none.
func (f *Follower) embedPending(ctx context.Context, cur *embedCursor) error {
	model := f.opts.Embedder.Model()
	batch := max(f.opts.Embedder.Batch(), 1)
	for ctx.Err() == nil {
		f.mu.RLock()
		ix := f.ix
		if g := f.gen.Load(); g != cur.gen {
			if err := f.prepareVectors(ctx, ix, model); err != nil {
				f.mu.RUnlock()
				return err
			}
			cur.gen, cur.after = g, 0
		}
		docs, err := ix.pendingDocs(ctx, cur.after, batch)
		f.mu.RUnlock()
		if err != nil {
			return err
		}
		if len(docs) == 0 {
			f.sem.passDone()
			return nil
		}
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = embedText(d.content)
		}
		vs, err := f.opts.Embedder.Embed(ctx, texts)
		if err != nil {
			return err
		}
		f.mu.RLock()
		if f.gen.Load() != cur.gen { // the index was rebuilt meanwhile
			f.mu.RUnlock()
			continue
		}
		from, err := f.ix.putVectors(ctx, model, docs, vs)
		f.mu.RUnlock()
		if err != nil {
			return err
		}
		f.signal()
		if from != 0 {
			if err := f.dimChanged(ctx, model, from, len(vs[0])); err != nil {
				return err
			}
			cur.after = 0
			continue
		}
		for _, d := range docs {
			if d.id < memoryBase {
				cur.after = max(cur.after, d.id)
			}
		}
	}
	return nil
}

// dimChanged handles the embeddings server answering in dimension dim
// where the stored vectors had from (they were all forgotten): everything
// is embedded anew, at once the first time, after a backoff the next, and
// not at all once the changes repeat (errEmbedStopped; see maxDimChanges).
func (f *Follower) dimChanged(ctx context.Context, model string, from, dim int) error {
	wait, stop := f.sem.dimChanged(from, dim)
	if stop {
		return errEmbedStopped
	}
	f.opts.Logger.Warn("search index: the embedding model's dimension changed; embedding everything anew",
		"model", model, "from", from, "dim", dim, "after", wait)
	if !f.sem.backoff(ctx, wait) {
		return ctx.Err()
	}
	return nil
}

// prepareVectors loads the index's vectors into memory or, when they
// were made by another model, forgets them all: they are made anew.
func (f *Follower) prepareVectors(ctx context.Context, ix *Index, model string) error {
	st, err := ix.embedState(ctx)
	if err != nil {
		return err
	}
	if st.Model == model {
		return ix.loadVectors(ctx)
	}
	// Not loaded first: another model's vectors never meet this one's
	// queries.
	if st.Model != "" {
		f.opts.Logger.Warn("search index: the embedding model changed; embedding everything anew", "from", st.Model, "to", model)
	}
	return ix.resetVectors(ctx, EmbedState{Model: model})
}

// queryVector asks for the vector of q's words, waiting at most
// queryWait; nil when search by meaning is off, the query has no words or
// the server did not answer (then unavailable is true).
func (f *Follower) queryVector(ctx context.Context, q Query) (v []float32, unavailable bool) {
	if f.opts.Embedder == nil || len(q.Terms) == 0 {
		return nil, false
	}
	if f.sem.isStopped() || time.Now().UnixNano() < f.semPause.Load() {
		return nil, true
	}
	words := make([]string, 0, len(q.Terms))
	for _, t := range q.Terms {
		words = append(words, strings.Join(t.Words, " "))
	}
	ctx, cancel := context.WithTimeout(ctx, queryWait)
	defer cancel()
	vs, err := f.opts.Embedder.Embed(ctx, []string{strings.Join(words, " ")})
	if err != nil || len(vs) != 1 {
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			f.semPause.Store(time.Now().Add(semanticPause).UnixNano())
			f.opts.Logger.Warn("search by meaning unavailable; answering from keywords", "err", err)
			f.sem.setQuery(false)
		}
		return nil, true
	}
	f.sem.setQuery(true)
	return vs[0], false
}

// embedProgress is set in a result while documents lack vectors.
func (f *Follower) embedProgress(ctx context.Context, ix *Index) *EmbedProgress {
	if f.opts.Embedder == nil {
		return nil
	}
	docs, err := ix.docCount(ctx)
	if err != nil {
		return nil
	}
	if n := int64(ix.vec.count()); n < docs {
		return &EmbedProgress{Embedded: n, Docs: docs}
	}
	return nil
}

// searchHybrid runs q fusing keywords and meaning; the caller holds f.mu
// for reading. The query's vector is asked for while the keywords are
// ranked; without it in time the answer is by keywords, marked
// SemanticUnavailable.
func (f *Follower) searchHybrid(ctx context.Context, q Query, opts Options) (Result, error) {
	type answer struct {
		v           []float32
		unavailable bool
	}
	asked := make(chan answer, 1)
	go func() { v, u := f.queryVector(ctx, q); asked <- answer{v, u} }()
	var got answer
	res, err := f.ix.searchHybrid(ctx, q, opts, func() []float32 { got = <-asked; return got.v })
	if err != nil {
		return res, err
	}
	res.Embedding = f.embedProgress(ctx, f.ix)
	if got.unavailable {
		res.Semantic = SemanticUnavailable
	}
	return res, nil
}
