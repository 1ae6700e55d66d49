package index

import (
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"
)

// Vectors: search by meaning keeps one embedding per document in the
// vecs table (derived like the rest: deleted with the index, remade from
// the log) and, for searching, all of them in memory, where a query is
// compared with every one (brute force, on every core from parallelFrom
// vectors up).
//
// A vector is stored and held as int8 with a scale of its own (the
// largest magnitude maps to 127): a quarter of float32's bytes — 28 MB
// per 100,000 messages at 256 dimensions, 79 MB at 768 — for a cosine
// within 0.01 of float32's (TestQuantizeCosine), far below what tells a
// paraphrase from an unrelated text. A scan costs about the same CPU in
// either format in this pure-Go loop (BenchmarkVectorSearch: 100,000
// vectors of 256 dimensions take about 20 ms of CPU either way, of 768
// 50–67 ms), so the format is chosen by its memory.
const vecSchema = `CREATE TABLE IF NOT EXISTS vecs(id INTEGER PRIMARY KEY, v BLOB NOT NULL)`

// Document kinds the vector store filters on without asking SQLite.
const (
	kindUser uint8 = iota
	kindAssistant
	kindMemory
	kindOther
)

func kindOf(typ string) uint8 {
	switch typ {
	case "user":
		return kindUser
	case "assistant":
		return kindAssistant
	case TypeMemory:
		return kindMemory
	}
	return kindOther
}

// vecStore holds the index's vectors in memory. Its methods may be called
// from any goroutine.
type vecStore struct {
	mu     sync.RWMutex
	dim    int
	ids    []int64
	ts     []int64 // unix ms, for before:/after:
	kind   []uint8
	scale  []float32
	data   []int8 // len(ids) × dim
	loaded bool   // load has read the table
}

// quantize turns a unit vector into int8s and the scale that gives them
// back (x ≈ q × scale).
func quantize(v []float32) ([]int8, float32) {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	q := make([]int8, len(v))
	if m == 0 {
		return q, 0
	}
	k := 127 / m
	for i, x := range v {
		q[i] = int8(math.Round(float64(x * k)))
	}
	return q, m / 127
}

// encodeVec is a vector's blob: the scale (float32, little endian), then
// the int8s.
func encodeVec(q []int8, scale float32) []byte {
	b := make([]byte, 4+len(q))
	binary.LittleEndian.PutUint32(b, math.Float32bits(scale))
	for i, x := range q {
		b[4+i] = byte(x)
	}
	return b
}

func decodeVec(b []byte) ([]int8, float32, error) {
	if len(b) < 5 {
		return nil, 0, fmt.Errorf("%w: a vector of %d bytes", ErrCorrupt, len(b))
	}
	q := make([]int8, len(b)-4)
	for i := range q {
		q[i] = int8(b[4+i])
	}
	return q, math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
}

// add appends vectors (the caller holds ix.vmu and has stored them).
func (s *vecStore) add(ids, ts []int64, kinds []uint8, qs [][]int8, scales []float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range qs {
		if s.dim == 0 {
			s.dim = len(q)
		}
		if len(q) != s.dim {
			continue // cannot happen: putVectors resets on a new dimension
		}
		s.ids = append(s.ids, ids[i])
		s.ts = append(s.ts, ts[i])
		s.kind = append(s.kind, kinds[i])
		s.scale = append(s.scale, scales[i])
		s.data = append(s.data, q...)
	}
}

// removeFrom forgets the vectors of ids ≥ from (memory sections).
func (s *vecStore) removeFrom(from int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i, id := range s.ids {
		if id >= from {
			continue
		}
		s.ids[n], s.ts[n], s.kind[n], s.scale[n] = id, s.ts[i], s.kind[i], s.scale[i]
		copy(s.data[n*s.dim:(n+1)*s.dim], s.data[i*s.dim:(i+1)*s.dim])
		n++
	}
	s.ids, s.ts, s.kind, s.scale, s.data = s.ids[:n], s.ts[:n], s.kind[:n], s.scale[:n], s.data[:n*s.dim]
}

// reset forgets every vector.
func (s *vecStore) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dim, s.ids, s.ts, s.kind, s.scale, s.data = 0, nil, nil, nil, nil, nil
}

// count returns how many vectors the store holds.
func (s *vecStore) count() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.ids)
}

// vecFilter is what the store can test itself: the document's kind and
// time.
type vecFilter struct {
	kind          int   // -1: any
	before, after int64 // unix ms; 0: none
}

// scored is a document and its similarity to the query.
type scored struct {
	id  int64
	sim float32
}

// minHeap keeps the k best: the worst at the top.
type minHeap []scored

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i].sim < h[j].sim }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(scored)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// parallelFrom is the store size from which a search scans in parts on
// every core (runtime.GOMAXPROCS): below it a goroutine costs more than
// it saves.
const parallelFrom = 20_000

// search returns the k documents most similar to the unit vector qv that
// pass f, best first. A query of another dimension finds nothing.
func (s *vecStore) search(qv []float32, k int, f vecFilter) []scored {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(qv) != s.dim || s.dim == 0 || k <= 0 {
		return nil
	}
	q8, qscale := quantize(qv)
	q := widen(q8)
	n := len(s.ids)
	parts := 1
	if n >= parallelFrom {
		parts = runtime.GOMAXPROCS(0)
	}
	heaps := make([]minHeap, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { heaps[p] = s.scan(q, qscale, k, f, p*n/parts, (p+1)*n/parts) })
	}
	wg.Wait()
	h := heaps[0]
	for _, o := range heaps[1:] {
		for _, x := range o {
			h.offer(x, k)
		}
	}
	out := make([]scored, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		out[i] = heap.Pop(&h).(scored)
	}
	return out
}

// scan keeps the k best of the vectors from lo to hi (the caller holds
// s.mu).
func (s *vecStore) scan(q []int32, qscale float32, k int, f vecFilter, lo, hi int) minHeap {
	h := make(minHeap, 0, k+1)
	dim := s.dim
	for i := lo; i < hi; i++ {
		if f.kind >= 0 && int(s.kind[i]) != f.kind || f.before != 0 && s.ts[i] >= f.before || f.after != 0 && s.ts[i] < f.after {
			continue
		}
		sim := float32(dotInt8(q, s.data[i*dim:(i+1)*dim])) * qscale * s.scale[i]
		h.offer(scored{s.ids[i], sim}, k)
	}
	return h
}

// offer keeps x if it is among the k best.
func (h *minHeap) offer(x scored, k int) {
	if len(*h) < k {
		heap.Push(h, x)
	} else if x.sim > (*h)[0].sim {
		(*h)[0] = x
		heap.Fix(h, 0)
	}
}

// dotInt8 is the dot product of a query widened to int32 once (the
// scan then sign-extends only the stored int8s) and a stored vector.
func dotInt8(q []int32, b []int8) int32 {
	b = b[:len(q)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(q); i += 4 {
		s0 += q[i] * int32(b[i])
		s1 += q[i+1] * int32(b[i+1])
		s2 += q[i+2] * int32(b[i+2])
		s3 += q[i+3] * int32(b[i+3])
	}
	for ; i < len(q); i++ {
		s0 += q[i] * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}

// widen returns q as int32s.
func widen(q []int8) []int32 {
	w := make([]int32, len(q))
	for i, x := range q {
		w[i] = int32(x)
	}
	return w
}

// dotFloat32 is the dot product of two float32 vectors of the same
// length (the format BenchmarkVectorSearch compares int8 with).
func dotFloat32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// loadVectors reads the vecs table into the store, once; the Follower's
// embedding loop calls it before its first batch.
func (ix *Index) loadVectors(ctx context.Context) error {
	ix.vmu.Lock()
	defer ix.vmu.Unlock()
	if ix.vec.loaded {
		return nil
	}
	rows, err := ix.db.QueryContext(ctx, `SELECT v.id, d.ts, d.type, v.v FROM vecs v JOIN docs d ON d.id = v.id ORDER BY v.id`)
	if err != nil {
		return classify("load vectors", err)
	}
	defer rows.Close()
	ix.vec.reset()
	for rows.Next() {
		var id, ts int64
		var typ string
		var b []byte
		if err := rows.Scan(&id, &ts, &typ, &b); err != nil {
			return classify("load vectors", err)
		}
		q, scale, err := decodeVec(b)
		if err != nil {
			return err
		}
		ix.vec.add([]int64{id}, []int64{ts}, []uint8{kindOf(typ)}, [][]int8{q}, []float32{scale})
	}
	if err := rows.Err(); err != nil {
		return classify("load vectors", err)
	}
	ix.vec.loaded = true
	return nil
}

// EmbedState is what the index records about its vectors: the model
// that made them and their dimension (0 before the first).
type EmbedState struct {
	Model string
	Dim   int
}

// embedState reads the model and dimension of the stored vectors.
func (ix *Index) embedState(ctx context.Context) (EmbedState, error) {
	var st EmbedState
	m, err := ix.meta(ctx, "embed_model")
	if err != nil {
		return st, classify("read index", err)
	}
	d, err := ix.meta(ctx, "embed_dim")
	if err != nil {
		return st, classify("read index", err)
	}
	st.Model = m
	st.Dim, _ = strconv.Atoi(d)
	return st, nil
}

// resetVectors forgets every vector and records st as what makes the
// next ones: a model or dimension change re-embeds everything.
func (ix *Index) resetVectors(ctx context.Context, st EmbedState) error {
	ix.vmu.Lock()
	defer ix.vmu.Unlock()
	return ix.resetVectorsLocked(ctx, st)
}

func (ix *Index) resetVectorsLocked(ctx context.Context, st EmbedState) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return classify("reset vectors", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM vecs`); err != nil {
		return classify("reset vectors", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = CASE key WHEN 'embed_model' THEN ? ELSE ? END WHERE key IN ('embed_model', 'embed_dim')`,
		st.Model, strconv.Itoa(st.Dim)); err != nil {
		return classify("reset vectors", err)
	}
	if err := tx.Commit(); err != nil {
		return classify("reset vectors", err)
	}
	ix.vec.reset()
	ix.vec.loaded = true
	return nil
}
