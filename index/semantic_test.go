package index_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/embed"
	"github.com/frontdesk-hq/frontdesk/embed/embedtest"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/index"
)

// conceptEmbedder is embedtest.Concepts in-process: an index.Embedder
// without a server, for the recall figures and the benchmarks.
type conceptEmbedder struct{ dim int }

func (conceptEmbedder) Model() string { return "concepts" }
func (conceptEmbedder) Batch() int    { return 256 }
func (c conceptEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = embedtest.Concepts(t, c.dim)
	}
	return out, nil
}

// The paraphrase set (testdata/paraphrase.json): facts and queries that
// share a meaning but no word stem ("what car did I get" for "I bought a
// new automobile"). The facts are said among the recall set's messages,
// which stay as distractors.
type paraphraseSet struct {
	Facts []struct {
		ID, Content string
	} `json:"facts"`
	Queries []struct {
		Q    string   `json:"q"`
		Want []string `json:"want"`
	} `json:"queries"`
}

// loadParaphrase returns the recall set's conversation with the
// paraphrase facts said in it, evenly spread, as a recallSet of the
// paraphrase queries.
func loadParaphrase(t testing.TB) (recallSet, []event.Event, map[int64]string) {
	t.Helper()
	b, err := os.ReadFile("testdata/paraphrase.json")
	if err != nil {
		t.Fatal(err)
	}
	var ps paraphraseSet
	if err := json.Unmarshal(b, &ps); err != nil {
		t.Fatal(err)
	}
	rs, _, _ := loadRecall(t)
	var merged recallSet
	every := len(rs.Messages) / len(ps.Facts)
	f := 0
	for i, m := range rs.Messages {
		merged.Messages = append(merged.Messages, m)
		// After an answer, so the fact opens a turn of its own.
		if f < len(ps.Facts) && i >= (f+1)*every-1 && m.Type == "assistant" {
			merged.Messages = append(merged.Messages, struct{ ID, Type, Channel, From, Content string }{
				ps.Facts[f].ID, "user", "web", "", ps.Facts[f].Content})
			f++
		}
	}
	if f != len(ps.Facts) {
		t.Fatalf("only %d of the %d facts were placed", f, len(ps.Facts))
	}
	merged.Queries = append(merged.Queries, ps.Queries...)
	evs, ids := recallEvents(merged)
	return merged, evs, ids
}

// hybridSearch answers with the index fusing keywords and the vectors of
// e (keywords only when e is nil).
func hybridSearch(t testing.TB, evs []event.Event, e index.Embedder) func(string) []int64 {
	ctx := context.Background()
	ix, err := index.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Add(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if e != nil {
		if err := ix.EmbedAllForTest(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	now := evs[len(evs)-1].TS.Std().Add(time.Hour)
	return func(q string) []int64 {
		pq, err := index.ParseQuery(q)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		var qv []float32
		if e != nil {
			vs, _ := e.Embed(ctx, []string{q})
			qv = vs[0]
		}
		res, err := ix.SearchHybrid(ctx, pq, index.Options{Limit: 5, Now: now}, qv)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		var seqs []int64
		for _, h := range res.Hits {
			seqs = append(seqs, h.Seq)
		}
		return seqs
	}
}

// TestParaphraseRecall: with vectors, a query that shares no word with
// the fact it asks about finds it (recall@5 ≥ 0.9 on the paraphrase set),
// and the keyword queries of the recall set do at least as well as by
// keywords alone.
func TestParaphraseRecall(t *testing.T) {
	e := conceptEmbedder{embedtest.DefaultDim}
	ps, pevs, pids := loadParaphrase(t)
	_, kw5, _, _ := recallScores(ps, pids, hybridSearch(t, pevs, nil))
	h1, h5, hmrr, missed := recallScores(ps, pids, hybridSearch(t, pevs, e))
	t.Logf("paraphrases (%d): keywords recall@5 %.3f; hybrid recall@1 %.3f, recall@5 %.3f, MRR@5 %.3f; missed %q", len(ps.Queries), kw5, h1, h5, hmrr, missed)
	if h5 < 0.9 {
		t.Errorf("hybrid recall@5 on paraphrases = %.3f, want ≥ 0.9", h5)
	}
	rs, evs, ids := loadRecall(t)
	_, k5, _, _ := recallScores(rs, ids, hybridSearch(t, evs, nil))
	_, r5, _, rmissed := recallScores(rs, ids, hybridSearch(t, evs, e))
	t.Logf("recall set (%d): keywords recall@5 %.3f, hybrid %.3f; hybrid missed %q", len(rs.Queries), k5, r5, rmissed)
	if r5 < k5 {
		t.Errorf("hybrid recall@5 on the keyword set = %.3f, below keywords alone (%.3f)", r5, k5)
	}
}

// BenchmarkFusion reports recall@5 (and @1, MRR@5) on the paraphrase set
// and the recall set for keywords alone, vectors alone, plain RRF and the
// fusion used (the keyword ranking weighs 1.5 in "and" mode, 0.01 in
// "or"), with the stand-in embedder (embedtest.Concepts) — or, with
// FRONTDESK_EMBED_URL (the API root) and FRONTDESK_EMBED_MODEL set, with
// that server's model: how a real model is checked.
func BenchmarkFusion(b *testing.B) {
	var e index.Embedder = conceptEmbedder{embedtest.DefaultDim}
	if u := os.Getenv("FRONTDESK_EMBED_URL"); u != "" {
		c, err := embed.New(embed.Options{BaseURL: u, Model: os.Getenv("FRONTDESK_EMBED_MODEL"), APIKey: os.Getenv("FRONTDESK_EMBED_KEY")})
		if err != nil {
			b.Fatal(err)
		}
		e = c
	}
	ps, pevs, pids := loadParaphrase(b)
	rs, evs, ids := loadRecall(b)
	for _, v := range []struct {
		name    string
		and, or float64
		emb     index.Embedder
	}{
		{"keywords", 1, 1, nil},
		{"vectors", 0, 0, e},
		{"rrf", 1, 1, e},
		{"hybrid", 1.5, 0.01, e},
	} {
		b.Run(v.name, func(b *testing.B) {
			restore := index.SetFuseWeightsForTest(v.and, v.or)
			defer restore()
			var p1, p5, r1, r5 float64
			for b.Loop() {
				p1, p5, _, _ = recallScores(ps, pids, hybridSearch(b, pevs, v.emb))
				r1, r5, _, _ = recallScores(rs, ids, hybridSearch(b, evs, v.emb))
			}
			b.ReportMetric(p5, "para-recall@5")
			b.ReportMetric(p1, "para-recall@1")
			b.ReportMetric(r5, "recall@5")
			b.ReportMetric(r1, "recall@1")
		})
	}
}

// TestOldIndexGainsVectors: an index made before search by meaning (no
// vecs table, no embed_* keys) is opened without a rebuild, keeps its
// documents and takes vectors.
func TestOldIndexGainsVectors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), index.FileName)
	ix, _, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(ctx, convo("I bought a new automobile last weekend.", "Congratulations.")); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE vecs`, `DELETE FROM meta WHERE key IN ('embed_model', 'embed_dim')`} {
		if _, err := ix.RunForTest(q); err != nil {
			t.Fatal(err)
		}
	}
	ix.Close()
	ix, rebuilt, err := index.Open(path)
	if err != nil || rebuilt != "" {
		t.Fatalf("reopen: %v, rebuilt %q", err, rebuilt)
	}
	defer ix.Close()
	if err := ix.EmbedAllForTest(ctx, conceptEmbedder{64}); err != nil {
		t.Fatal(err)
	}
	if st, err := ix.Stats(ctx); err != nil || st.Docs != 2 || st.Vectors != 2 {
		t.Errorf("after the upgrade: %+v, %v; want 2 documents with vectors", st, err)
	}
}
