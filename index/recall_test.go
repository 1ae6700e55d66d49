package index_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/index"
)

// The recall set (testdata/recall.json): a seven-week conversation between
// a person and their assistant, with facts planted among distractors that
// share single words with the queries, and keyword queries written the way
// a person or a model searches (other word order, plural/singular, other
// tense, no possessive, no accents). A query is answered when one of its
// wanted messages is among the first k hits.
type recallSet struct {
	Messages []struct {
		ID, Type, Channel, From, Content string
	} `json:"messages"`
	Queries []struct {
		Q    string   `json:"q"`
		Want []string `json:"want"`
	} `json:"queries"`
}

// recallSpan is how long the conversation lasts.
const recallSpan = 7 * 24 * time.Hour

func loadRecall(t testing.TB) (recallSet, []event.Event, map[int64]string) {
	t.Helper()
	b, err := os.ReadFile("testdata/recall.json")
	if err != nil {
		t.Fatal(err)
	}
	var rs recallSet
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	evs, ids := recallEvents(rs)
	return rs, evs, ids
}

// recallEvents makes the set's conversation: events a constant step
// apart over recallSpan, and the set's id of each seq.
func recallEvents(rs recallSet) ([]event.Event, map[int64]string) {
	ids := map[int64]string{}
	var evs []event.Event
	turn := ""
	step := recallSpan / time.Duration(len(rs.Messages))
	for i, m := range rs.Messages {
		seq := int64(i + 1)
		ts := t0.Add(time.Duration(i) * step)
		var e event.Event
		if m.Type == "user" {
			turn = fmt.Sprintf("t%d", seq)
			e = event.New(event.User, turn, ts, event.UserData{Channel: m.Channel, From: m.From, Content: m.Content})
		} else {
			e = event.New(event.Assistant, turn, ts, event.AssistantData{Content: m.Content})
		}
		e.Seq = seq
		ids[seq] = m.ID
		evs = append(evs, e)
	}
	return evs, ids
}

// recallScores runs every query through search and returns recall@1,
// recall@5 and the mean reciprocal rank (over the first 5), with the
// queries missed at 5.
func recallScores(rs recallSet, ids map[int64]string, search func(q string) []int64) (r1, r5, mrr float64, missed []string) {
	for _, q := range rs.Queries {
		seqs := search(q.Q)
		rank := 0
		for i, s := range seqs[:min(5, len(seqs))] {
			if slices.Contains(q.Want, ids[s]) {
				rank = i + 1
				break
			}
		}
		switch {
		case rank == 0:
			missed = append(missed, q.Q)
		case rank == 1:
			r1++
		}
		if rank > 0 {
			r5++
			mrr += 1 / float64(rank)
		}
	}
	n := float64(len(rs.Queries))
	return r1 / n, r5 / n, mrr / n, missed
}

// indexSearch answers with the index, as history_search does.
func indexSearch(t testing.TB, evs []event.Event) func(string) []int64 {
	ix, err := index.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Add(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	now := evs[len(evs)-1].TS.Std().Add(time.Hour)
	return func(q string) []int64 {
		res, err := ix.Search(context.Background(), q, index.Options{Limit: 5, Now: now})
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

// phraseSearch is the search frontdesk had before the index: the query as
// one case-insensitive phrase, user and assistant messages, newest first.
func phraseSearch(evs []event.Event) func(string) []int64 {
	return func(q string) []int64 {
		q = strings.ToLower(q)
		var seqs []int64
		for i := len(evs) - 1; i >= 0; i-- {
			var d struct{ Content string }
			evs[i].Decode(&d)
			if strings.Contains(strings.ToLower(d.Content), q) {
				seqs = append(seqs, evs[i].Seq)
			}
		}
		return seqs
	}
}

func TestRecallSet(t *testing.T) {
	rs, evs, ids := loadRecall(t)
	if len(rs.Messages) < 300 || len(rs.Queries) < 40 {
		t.Fatalf("the set has %d messages and %d queries; it needs ≥ 300 and ≥ 40", len(rs.Messages), len(rs.Queries))
	}
	r1, r5, mrr, missed := recallScores(rs, ids, indexSearch(t, evs))
	t.Logf("index: recall@1 %.3f, recall@5 %.3f, MRR@5 %.3f; missed at 5: %q", r1, r5, mrr, missed)
	if r5 < 0.9 {
		t.Errorf("recall@5 = %.3f, want ≥ 0.9", r5)
	}
	_, b5, _, _ := recallScores(rs, ids, phraseSearch(evs))
	t.Logf("phrase match (before the index): recall@5 %.3f", b5)
}

// BenchmarkRecall reports the recall set's scores for the index and for
// the phrase match it replaced.
func BenchmarkRecall(b *testing.B) {
	rs, evs, ids := loadRecall(b)
	search := indexSearch(b, evs)
	var r1, r5, mrr float64
	for b.Loop() {
		r1, r5, mrr, _ = recallScores(rs, ids, search)
	}
	_, b5, _, _ := recallScores(rs, ids, phraseSearch(evs))
	b.ReportMetric(r5, "recall@5")
	b.ReportMetric(r1, "recall@1")
	b.ReportMetric(mrr, "MRR@5")
	b.ReportMetric(b5, "phrase-recall@5")
	b.ReportMetric(float64(len(rs.Queries)), "queries")
}
