package hub

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// searchAgent calls history_search with its own input, the way a model
// looking up "what did I say about X" does, and replies with the output.
type searchAgent struct{}

func (searchAgent) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	for _, tool := range req.Tools {
		if tool.Name == "history_search" {
			args, _ := json.Marshal(map[string]any{"query": req.Content})
			out, err := tool.Call(ctx, args)
			if err != nil {
				return agent.Reply{}, err
			}
			return agent.Reply{Content: out}, nil
		}
	}
	return agent.Reply{Content: "no search tool"}, nil
}

func TestHistorySearchNeverFindsItsOwnInput(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Index: startIndex(t, dir)}
	h := startHub(t, cfg, searchAgent{})
	s, _ := subscribe(t, h, 0)
	talk(t, h, s, "the boat is moored at pier seven")
	evs := talk(t, h, s, "boat pier")
	var out index.Result
	for _, e := range evs {
		if e.Type == event.Assistant {
			if err := json.Unmarshal([]byte(data[event.AssistantData](t, e).Content), &out); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(out.Hits) == 0 {
		t.Fatal("no hits")
	}
	turn := evs[0].Turn
	for _, hit := range out.Hits {
		if hit.Turn == turn {
			t.Errorf("hit %+v is the searching turn's own input", hit)
		}
	}
	if out.Hits[0].Seq != 1 || out.Mode != index.ModeAnd {
		t.Errorf("result %+v: want the first message first", out)
	}
}

func TestSearchWhileATurnStreams(t *testing.T) {
	dir := t.TempDir()
	g := testagent.NewGate()
	h := startHub(t, Config{DataDir: dir, Index: startIndex(t, dir)}, g)
	s, _ := subscribe(t, h, 0)
	submit(t, h, "the spare key is under the blue flowerpot", "c1")
	until(t, s, event.Delta) // streaming, not finished
	res, err := h.Search(ctxT(t), "flowerpot key", 10)
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Seq != 1 || res.Indexing != nil {
		t.Fatalf("search during the turn: %+v, %v", res, err)
	}
	g.Release <- struct{}{}
	until(t, s, event.TurnEnd)
	if _, err := h.Search(ctxT(t), "type:robot", 10); !IsQueryError(err) || !strings.Contains(err.Error(), "type:user") {
		t.Errorf("bad query: %v", err)
	}
	// Without an index the search says so.
	h2 := startHub(t, Config{}, g)
	if _, err := h2.Search(ctxT(t), "key", 10); err != ErrNoIndex {
		t.Errorf("no index: %v", err)
	}
}

// A reset consolidates into long-term memory; the index picks the new
// section up and type:memory finds it.
func TestResetMemoryBecomesSearchable(t *testing.T) {
	dir := t.TempDir()
	mem, err := memory.Open(filepath.Join(dir, "memory"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := index.NewFollower(index.FollowerOptions{Path: filepath.Join(dir, index.FileName),
		Log: history.NewReader(filepath.Join(dir, "chat_history.ndjson")).Since, Logger: slog.New(slog.DiscardHandler),
		Memory: func() ([]index.Doc, error) {
			text, err := mem.LongTerm()
			var docs []index.Doc
			for _, s := range memory.Sections(text) {
				docs = append(docs, index.Doc{TS: s.Time, Content: s.Text})
			}
			return docs, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	h := startHub(t, Config{DataDir: dir, Index: f, Memory: mem}, &agent.Demo{})
	s, _ := subscribe(t, h, 0)
	talk(t, h, s, "The wifi password at the cabin is larch-lake-42.")
	if _, err := h.Reset(ctxT(t), ResetManual, Actor{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := h.Search(ctxT(t), "cabin wifi type:memory", 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 1 && res.Hits[0].Type == index.TypeMemory && res.Hits[0].Seq == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the consolidated memory was never found: %+v", res)
		}
		time.Sleep(10 * time.Millisecond) // consolidation runs on its own goroutine
	}
	// The reset removed nothing from the index: the message itself is
	// still found.
	res, err := h.Search(ctxT(t), "cabin wifi type:user", 5)
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Seq != 1 {
		t.Errorf("after the reset: %+v, %v", res, err)
	}
}
