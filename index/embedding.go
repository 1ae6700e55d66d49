package index

import (
	"context"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Pending is a document that has no vector yet.
type pending struct {
	id      int64
	ts      int64
	kind    uint8
	content string
}

// maxEmbedBytes cuts what is sent for one document: models take a few
// thousand tokens at most, and the start of a long message says what it
// is about.
const maxEmbedBytes = 4000

// embedText is what is embedded for a document's content.
func embedText(s string) string {
	s = flatten(s)
	if len(s) <= maxEmbedBytes {
		return s
	}
	i := maxEmbedBytes
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// pendingDocs returns up to limit documents without a vector: messages
// with ids above after (the caller's cursor: everything up to it has
// one), oldest first, then memory sections.
func (ix *Index) pendingDocs(ctx context.Context, after int64, limit int) ([]pending, error) {
	var out []pending
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`SELECT d.id, d.ts, d.type, d.content FROM docs d WHERE d.id > ? AND d.id < ? AND NOT EXISTS (SELECT 1 FROM vecs v WHERE v.id = d.id) ORDER BY d.id LIMIT ?`,
			[]any{after, memoryBase, limit}},
		{`SELECT d.id, d.ts, d.type, d.content FROM docs d WHERE d.id >= ? AND NOT EXISTS (SELECT 1 FROM vecs v WHERE v.id = d.id) ORDER BY d.id LIMIT ?`,
			[]any{memoryBase, limit}},
	} {
		if len(out) >= limit {
			break
		}
		q.args[len(q.args)-1] = limit - len(out)
		rows, err := ix.db.QueryContext(ctx, q.sql, q.args...)
		if err != nil {
			return nil, classify("read documents to embed", err)
		}
		for rows.Next() {
			var p pending
			var typ string
			if err := rows.Scan(&p.id, &p.ts, &typ, &p.content); err != nil {
				rows.Close()
				return nil, classify("read documents to embed", err)
			}
			p.kind = kindOf(typ)
			out = append(out, p)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, classify("read documents to embed", err)
		}
	}
	return out, nil
}

// putVectors stores the vectors of docs (vs[i] is docs[i]'s, unit
// length) made by st's model. A document whose content changed since it
// was read (a memory section replaced meanwhile) is skipped: its new
// content waits for its own vector. A dimension other than the stored
// vectors' resets them first (the model behind the name changed), and
// changedFrom says so: it is the stored vectors' dimension then, else 0.
func (ix *Index) putVectors(ctx context.Context, model string, docs []pending, vs [][]float32) (changedFrom int, err error) {
	if len(docs) == 0 {
		return 0, nil
	}
	ix.vmu.Lock()
	defer ix.vmu.Unlock()
	st, err := ix.embedState(ctx)
	if err != nil {
		return 0, err
	}
	dim := len(vs[0])
	if st.Model != model || st.Dim != dim {
		if st.Model == model && st.Dim != 0 {
			changedFrom = st.Dim
		}
		if err := ix.resetVectorsLocked(ctx, EmbedState{Model: model, Dim: dim}); err != nil {
			return 0, err
		}
	}
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return changedFrom, classify("store vectors", err)
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO vecs(id, v) SELECT ?, ? WHERE EXISTS (SELECT 1 FROM docs WHERE id = ? AND content = ?)`)
	if err != nil {
		return changedFrom, classify("store vectors", err)
	}
	defer ins.Close()
	var ids, ts []int64
	var kinds []uint8
	var qs [][]int8
	var scales []float32
	for i, d := range docs {
		q, scale := quantize(vs[i])
		r, err := ins.ExecContext(ctx, d.id, encodeVec(q, scale), d.id, d.content)
		if err != nil {
			return changedFrom, classify("store vectors", err)
		}
		if n, _ := r.RowsAffected(); n == 1 {
			ids, ts, kinds, qs, scales = append(ids, d.id), append(ts, d.ts), append(kinds, d.kind), append(qs, q), append(scales, scale)
		}
	}
	if err := tx.Commit(); err != nil {
		return changedFrom, classify("store vectors", err)
	}
	ix.vec.add(ids, ts, kinds, qs, scales)
	return changedFrom, nil
}

// docCount is how many documents the index holds (messages and memory).
func (ix *Index) docCount(ctx context.Context) (int64, error) {
	v, err := ix.meta(ctx, "docs")
	if err != nil {
		return 0, classify("read index", err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: meta docs %q", ErrCorrupt, v)
	}
	return n, nil
}
