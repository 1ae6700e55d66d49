package index

import (
	"context"
	"fmt"
	"time"
)

// ForceSchemaVersionForTest makes the index look written by another
// version.
func (ix *Index) ForceSchemaVersionForTest(v int) error {
	_, err := ix.db.ExecContext(context.Background(), `UPDATE meta SET value = ? WHERE key = 'schema_version'`, v)
	return err
}

// MatchesForTest counts the documents an FTS5 expression matches.
func (ix *Index) MatchesForTest(q string) (int64, error) {
	pq, err := ParseQuery(q)
	if err != nil {
		return 0, err
	}
	var n int64
	err = ix.db.QueryRowContext(context.Background(), `SELECT count(*) FROM fts WHERE fts MATCH ?`, pq.match(false)).Scan(&n)
	return n, err
}

// MatchForTest counts the documents q's FTS5 expression matches, AND or
// OR, as Search would run it.
func (ix *Index) MatchForTest(q Query, or bool) (int64, error) {
	var n int64
	err := ix.db.QueryRowContext(context.Background(), `SELECT count(*) FROM fts WHERE fts MATCH ?`, q.match(or)).Scan(&n)
	return n, err
}

// RunForTest runs a statement and reads every row it returns (a PRAGMA's
// answer), for timing checks.
func (ix *Index) RunForTest(q string) ([]string, error) {
	rows, err := ix.db.QueryContext(context.Background(), q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s any
		if err := rows.Scan(&s); err != nil {
			return out, err
		}
		out = append(out, fmt.Sprint(s))
	}
	return out, rows.Err()
}

// EmbedAllForTest gives every document without a vector one made by e,
// as the Follower's embedding loop does, without a Follower.
func (ix *Index) EmbedAllForTest(ctx context.Context, e Embedder) error {
	if err := ix.loadVectors(ctx); err != nil {
		return err
	}
	var after int64
	for {
		docs, err := ix.pendingDocs(ctx, after, max(e.Batch(), 1))
		if err != nil || len(docs) == 0 {
			return err
		}
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = embedText(d.content)
			if d.id < memoryBase {
				after = max(after, d.id)
			}
		}
		vs, err := e.Embed(ctx, texts)
		if err != nil {
			return err
		}
		if _, err := ix.putVectors(ctx, e.Model(), docs, vs); err != nil {
			return err
		}
	}
}

// VectorsForTest counts the vectors in memory and in the vecs table.
func (ix *Index) VectorsForTest() (inMemory int, stored int64, err error) {
	err = ix.db.QueryRowContext(context.Background(), `SELECT count(*) FROM vecs`).Scan(&stored)
	return ix.vec.count(), stored, err
}

// AwaitEmbeddedForTest waits up to d for every document of the index to
// have a vector (and at least want documents to be indexed).
func (f *Follower) AwaitEmbeddedForTest(d time.Duration, want int64) error {
	deadline := time.After(d)
	for {
		f.pmu.Lock()
		ch := f.progressed
		f.pmu.Unlock()
		f.mu.RLock()
		p := f.embedProgress(context.Background(), f.ix)
		docs, _ := f.ix.docCount(context.Background())
		n := f.ix.vec.count()
		f.mu.RUnlock()
		if p == nil && docs >= want && int64(n) >= want {
			return nil
		}
		select {
		case <-ch:
		case <-deadline:
			return fmt.Errorf("after %s: %d of %d documents have vectors (want %d)", d, n, docs, want)
		}
	}
}

// SetFuseWeightsForTest sets the keyword ranking's weights in the fusion
// ("and" and "or" mode) and returns a func that restores them.
func SetFuseWeightsForTest(and, or float64) (restore func()) {
	old := fuseWeights
	fuseWeights.and, fuseWeights.or = and, or
	return func() { fuseWeights = old }
}

// SetBackoffClockForTest makes the embedding loop's backoff wait on
// wait instead of time.After (before Run).
func (f *Follower) SetBackoffClockForTest(wait func(time.Duration) <-chan time.Time) {
	f.sem.mu.Lock()
	f.sem.wait = wait
	f.sem.mu.Unlock()
}
