package index_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/embed"
	"github.com/frontdesk-hq/frontdesk/embed/embedtest"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
)

// embedClient is a real client of the fake server.
func embedClient(t *testing.T, srv *embedtest.Server, model string, batch int) *embed.Client {
	t.Helper()
	c, err := embed.New(embed.Options{BaseURL: srv.BaseURL(), Model: model, Batch: batch, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func embedFollower(t *testing.T, dir string, logSeq int64, mem index.MemorySource, e index.Embedder, logs io.Writer) (*index.Follower, func()) {
	t.Helper()
	f, err := index.NewFollower(index.FollowerOptions{
		Path: filepath.Join(dir, index.FileName), Log: history.NewReader(filepath.Join(dir, "chat_history.ndjson")).Since,
		Memory: mem, LogSeq: logSeq, Logger: slog.New(slog.NewTextHandler(logs, nil)), Embedder: e,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return f, stop
}

func mustSearch(t *testing.T, f *index.Follower, q string) index.Result {
	t.Helper()
	res, err := f.Search(context.Background(), q, index.Options{Limit: 5})
	if err != nil {
		t.Fatalf("%q: %v", q, err)
	}
	return res
}

func firstSnippet(res index.Result) string {
	if len(res.Hits) == 0 {
		return ""
	}
	return res.Hits[0].Snippet
}

// TestFollowerEmbedsBehindTheLog: the follower embeds what is indexed in
// batches of the configured size, then what is appended; a query sharing
// no word with a message finds it by meaning; a new dimension and a new
// model re-embed everything, once.
func TestFollowerEmbedsBehindTheLog(t *testing.T) {
	dir := t.TempDir()
	c := newChatLog(t, dir, 5)
	c.turn("I bought a new automobile last weekend, a blue hatchback.", "Congratulations, enjoy it.")
	c.fill(100, func(i int) string { return "topic" + string(rune('a'+i%26)) })
	c.log.Sync()
	srv := embedtest.NewServer()
	defer srv.Close()
	logs := &logBuf{}
	f, stop := embedFollower(t, dir, c.seq, nil, embedClient(t, srv, "fake-a", 16), logs)
	if err := f.AwaitEmbeddedForTest(30*time.Second, int64(c.msgs)); err != nil {
		t.Fatal(err)
	}
	req, texts, most := srv.Stats()
	if most > 16 || texts != c.msgs {
		t.Errorf("the server embedded %d texts in %d requests, largest %d; want %d texts, batches ≤ 16", texts, req, most, c.msgs)
	}
	res := mustSearch(t, f, "which car did I purchase")
	if res.Semantic != index.SemanticHybrid || res.Embedding != nil || !strings.Contains(firstSnippet(res), "automobile") {
		t.Fatalf("by meaning: semantic %q, embedding %+v, first hit %q; want hybrid, done, the automobile", res.Semantic, res.Embedding, firstSnippet(res))
	}

	// What is appended is embedded too.
	c.turn("My physician says my blood pressure is a bit high.", "Noted.")
	f.Notify(c.seq)
	if err := f.AwaitEmbeddedForTest(30*time.Second, int64(c.msgs)); err != nil {
		t.Fatal(err)
	}
	if res := mustSearch(t, f, "what did the doctor tell me"); !strings.Contains(firstSnippet(res), "physician") {
		t.Errorf("the new message is not found by meaning: %+v", res.Hits)
	}

	// The server's model now answers in another dimension: everything is
	// embedded anew, and queries (in the new dimension) still find.
	_, before, _ := srv.Stats()
	srv.SetDim(128)
	c.turn("Our puppy needs a vet checkup on Friday.", "I'll remind you.")
	f.Notify(c.seq)
	logs.waitFor(t, "dimension changed", 30*time.Second)
	if err := f.AwaitEmbeddedForTest(30*time.Second, int64(c.msgs)); err != nil {
		t.Fatal(err)
	}
	if _, after, _ := srv.Stats(); after-before < c.msgs {
		t.Errorf("after the dimension change %d texts were embedded, want all %d", after-before, c.msgs)
	}
	if res := mustSearch(t, f, "dog veterinarian visit"); !strings.Contains(firstSnippet(res), "puppy") {
		t.Errorf("after the dimension change: %+v", res.Hits)
	}
	stop()

	// Another model: re-embedded once, no vector doubled.
	_, before, _ = srv.Stats()
	logs2 := &logBuf{}
	f, stop = embedFollower(t, dir, c.seq, nil, embedClient(t, srv, "fake-b", 64), logs2)
	if err := f.AwaitEmbeddedForTest(30*time.Second, int64(c.msgs)); err != nil {
		t.Fatal(err)
	}
	logs2.waitFor(t, "embedding model changed", time.Second)
	stop()
	if _, after, _ := srv.Stats(); after-before != c.msgs {
		t.Errorf("the new model embedded %d texts, want %d", after-before, c.msgs)
	}
	ix, _, err := index.Open(filepath.Join(dir, index.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, stored, err := ix.VectorsForTest(); err != nil || stored != int64(c.msgs) {
		t.Errorf("the index stores %d vectors (%v), want %d", stored, err, c.msgs)
	}
}

// TestSemanticUnavailable: with the embeddings server failing, slow or
// gone, searches answer from keywords at once (within the bounded wait)
// and say "semantic": "unavailable"; the documents not yet embedded show
// in "embedding".
func TestSemanticUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		breakIt func(*embedtest.Server)
	}{
		{"error", func(s *embedtest.Server) { s.SetFail(500) }},
		{"slow", func(s *embedtest.Server) { s.SetDelay(time.Minute) }},
		{"down", func(s *embedtest.Server) { s.CloseClientConnections(); s.Listener.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := newChatLog(t, dir, 5)
			c.turn("I bought a new automobile last weekend.", "Congratulations.")
			c.log.Sync()
			srv := embedtest.NewServer()
			defer srv.Close()
			tc.breakIt(srv)
			f, stop := embedFollower(t, dir, c.seq, nil, embedClient(t, srv, "fake", 8), io.Discard)
			defer stop()
			caughtUp(t, f, "automobile")
			start := time.Now()
			res := mustSearch(t, f, "automobile")
			took := time.Since(start)
			if res.Semantic != index.SemanticUnavailable || len(res.Hits) != 1 || res.Embedding == nil || res.Embedding.Embedded != 0 {
				t.Errorf("semantic %q, %d hits, embedding %+v; want unavailable, the keyword hit, 0 embedded", res.Semantic, len(res.Hits), res.Embedding)
			}
			if took > 3*time.Second {
				t.Errorf("the search took %v; the wait is bounded at 2 s", took)
			}
			// The next search does not wait again.
			start = time.Now()
			if res := mustSearch(t, f, "automobile"); res.Semantic != index.SemanticUnavailable || time.Since(start) > time.Second {
				t.Errorf("second search: semantic %q after %v", res.Semantic, time.Since(start))
			}
		})
	}
}

// TestHybridMemoryAndFilters: memory sections are embedded and found by
// meaning under type:memory; filters hold for what meaning finds; a
// changed memory is embedded anew.
func TestHybridMemoryAndFilters(t *testing.T) {
	dir := t.TempDir()
	c := newChatLog(t, dir, 5)
	c.turn("Somebody stole my bicycle from outside the station.", "That's awful.")
	c.log.Sync()
	var mu sync.Mutex
	memText := "We hired a babysitter for Saturday night, Lena."
	mem := func() ([]index.Doc, error) {
		mu.Lock()
		defer mu.Unlock()
		return []index.Doc{{TS: t0, Content: memText}}, nil
	}
	srv := embedtest.NewServer()
	defer srv.Close()
	f, _ := embedFollower(t, dir, c.seq, mem, embedClient(t, srv, "fake", 8), io.Discard)
	caughtUp(t, f, "bicycle")
	if err := f.AwaitEmbeddedForTest(30*time.Second, int64(c.msgs)+1); err != nil {
		t.Fatal(err)
	}
	if res := mustSearch(t, f, "type:memory who minds the children"); len(res.Hits) != 1 || res.Hits[0].Type != index.TypeMemory {
		t.Errorf("type:memory by meaning: %+v", res.Hits)
	}
	if res := mustSearch(t, f, "type:memory bike theft"); len(res.Hits) != 0 {
		t.Errorf("type:memory let a message through: %+v", res.Hits)
	}
	if res := mustSearch(t, f, "bike theft channel:email"); len(res.Hits) != 0 {
		t.Errorf("channel:email let a web message through: %+v", res.Hits)
	}
	if res := mustSearch(t, f, "bike theft channel:web"); !strings.Contains(firstSnippet(res), "bicycle") {
		t.Errorf("channel:web by meaning: %+v", res.Hits)
	}
	mu.Lock()
	memText = "Grandma's surgery went well."
	mu.Unlock()
	f.NotifyMemory()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := mustSearch(t, f, "type:memory grandmother operation")
		if len(res.Hits) == 1 && strings.Contains(res.Hits[0].Snippet, "surgery") && res.Embedding == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the changed memory is not found by meaning: %+v", res)
		}
		if err := f.AwaitEmbeddedForTest(30*time.Second, int64(c.msgs)+1); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEmbedDimensionAlternates: a server whose dimension changes with
// every request is re-embedded at most twice (the second time after a
// backoff, on a fake clock here), then search by meaning stops and says
// why — in the log, in SemanticStatus (for /healthz and /metrics) and as
// "unavailable" in searches — and no more requests go to the server.
func TestEmbedDimensionAlternates(t *testing.T) {
	dir := t.TempDir()
	c := newChatLog(t, dir, 5)
	c.fill(20, func(i int) string { return "topic" + string(rune('a'+i%26)) })
	c.log.Sync()
	srv := embedtest.NewServer()
	defer srv.Close()
	srv.SetDimCycle(256, 128)
	logs := &logBuf{}
	f, err := index.NewFollower(index.FollowerOptions{
		Path: filepath.Join(dir, index.FileName), Log: history.NewReader(filepath.Join(dir, "chat_history.ndjson")).Since,
		LogSeq: c.seq, Logger: slog.New(slog.NewTextHandler(logs, nil)), Embedder: embedClient(t, srv, "flaky", 8),
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var waits []time.Duration
	f.SetBackoffClockForTest(func(d time.Duration) <-chan time.Time {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		ch := make(chan time.Time, 1)
		ch <- time.Time{} // the fake clock: the wait is over at once
		return ch
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	defer func() { cancel(); <-done }()

	logs.waitFor(t, "search by meaning stopped", 30*time.Second)
	st := f.SemanticStatus()
	if st.State != index.SemanticStopped || !strings.Contains(st.Reason, "256, 128") || st.DimChanges != 3 {
		t.Errorf("status %+v; want stopped after 3 changes, the reason naming the dimensions 256, 128", st)
	}
	if n := strings.Count(logs.String(), "embedding everything anew"); n != 2 {
		t.Errorf("%d re-embeddings logged, want 2:\n%s", n, logs.String())
	}
	mu.Lock()
	if len(waits) != 1 || waits[0] < time.Minute {
		t.Errorf("backoff waits %v; want one of at least a minute, before the second re-embedding", waits)
	}
	mu.Unlock()
	req, _, _ := srv.Stats()
	if req > 4 {
		t.Errorf("%d requests to the server before it stopped; want at most 4", req)
	}
	// Stopped: new messages and searches send the server nothing more.
	c.turn("I bought a new automobile last weekend.", "Congratulations.")
	f.Notify(c.seq)
	res := caughtUp(t, f, "automobile")
	if res.Semantic != index.SemanticUnavailable {
		t.Errorf("search: semantic %q, want unavailable", res.Semantic)
	}
	if again, _, _ := srv.Stats(); again != req {
		t.Errorf("the server got %d more requests after search by meaning stopped", again-req)
	}
}

// TestHitsSayHowFound: in a hybrid search each hit says whether its words
// or its meaning found it, and a memory hit names its item (the "[id]"
// its text starts with), wherever in the text the words matched.
func TestHitsSayHowFound(t *testing.T) {
	dir := t.TempDir()
	c := newChatLog(t, dir, 5)
	c.turn("I bought a new automobile last weekend, a blue hatchback.", "Congratulations, enjoy it.")
	c.log.Sync()
	mem := func() ([]index.Doc, error) {
		return []index.Doc{{TS: t0, Content: "[m7] " + strings.Repeat("Some padding words before the point. ", 8) + "Our babysitter Lena comes on Saturday."}}, nil
	}
	srv := embedtest.NewServer()
	defer srv.Close()
	f, _ := embedFollower(t, dir, c.seq, mem, embedClient(t, srv, "fake", 8), io.Discard)
	caughtUp(t, f, "automobile")
	if err := f.AwaitEmbeddedForTest(30*time.Second, int64(c.msgs)+1); err != nil {
		t.Fatal(err)
	}
	res := mustSearch(t, f, "which car did I purchase")
	if len(res.Hits) == 0 || res.Hits[0].Found != index.FoundMeaning || !strings.Contains(res.Hits[0].Snippet, "automobile") {
		t.Errorf("a paraphrase: %+v; want the automobile found by meaning", res.Hits)
	}
	res = mustSearch(t, f, "automobile hatchback")
	if len(res.Hits) == 0 || res.Hits[0].Found != index.FoundBoth {
		t.Errorf("the words themselves: %+v; want found by words and meaning", res.Hits)
	}
	res = mustSearch(t, f, "type:memory babysitter")
	if len(res.Hits) != 1 || res.Hits[0].Item != "m7" || strings.Contains(res.Hits[0].Snippet, "[m7]") {
		t.Errorf("a memory hit: %+v; want item m7 (its snippet starts past the id)", res.Hits)
	}
	// Keywords only (no embeddings): no "found", the item still named.
	ix, err := index.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	docs, _ := mem()
	if err := ix.UpdateMemory(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	if res, err = ix.Search(context.Background(), "type:memory babysitter", index.Options{}); err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 1 || res.Hits[0].Item != "m7" || res.Hits[0].Found != "" {
		t.Errorf("keywords only: %+v; want item m7, found unset", res.Hits)
	}
}
