package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/embed/embedtest"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
)

// searchAnswer is GET /api/history/search's answer, as far as these tests
// read it.
type searchAnswer struct {
	Hits []struct {
		Seq     int64  `json:"seq"`
		Snippet string `json:"snippet"`
	} `json:"hits"`
	Semantic  string               `json:"semantic"`
	Embedding *index.EmbedProgress `json:"embedding"`
	Indexing  *index.Progress      `json:"indexing"`
}

func searchAPI(t *testing.T, p *proc, q string) searchAnswer {
	t.Helper()
	var a searchAnswer
	if code := testio.GetJSON(t, p.url+"/api/history/search?q="+url.QueryEscape(q), &a); code != http.StatusOK {
		t.Fatalf("search %q: status %d", q, code)
	}
	return a
}

// writeConversation writes turns exchanges to the chat log in dir, the
// first about a car, and returns the number of messages.
func writeConversation(t *testing.T, dir string, turns int) int {
	t.Helper()
	l, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: history.FsyncNever})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t0 := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	var seq int64
	for i := range turns {
		ask := fmt.Sprintf("note %d: the weather in the garden is fine, topic %d", i, i%37)
		if i == 0 {
			ask = "I bought a new automobile last weekend, a blue hatchback."
		}
		turn := fmt.Sprint("t", seq+1)
		for _, e := range []event.Event{
			event.New(event.User, turn, t0.Add(time.Duration(seq)*time.Minute), event.UserData{Channel: event.ChannelWeb, Content: ask}),
			event.New(event.Assistant, turn, t0.Add(time.Duration(seq+1)*time.Minute), event.AssistantData{Content: fmt.Sprintf("noted, item %d", i)}),
			event.New(event.TurnEnd, turn, t0.Add(time.Duration(seq+2)*time.Minute), event.TurnEndData{Status: event.StatusCompleted}),
		} {
			seq++
			e.Seq = seq
			if err := l.Append(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	return 2 * turns
}

// TestKill9WhileEmbeddingResumes: the real binary, killed (SIGKILL) while
// it embeds the conversation for search by meaning, embeds on restart only
// what has no vector yet — nothing twice, nothing missing — and then finds
// by meaning; with the embeddings server gone, searches answer from
// keywords marked "semantic": "unavailable".
func TestKill9WhileEmbeddingResumes(t *testing.T) {
	t.Parallel() // its own data directory; it mostly waits
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	os.MkdirAll(state, 0o700)
	const batch = 8
	msgs := writeConversation(t, state, 300)
	srv := embedtest.NewServer()
	defer srv.Close()
	srv.SetDelay(20 * time.Millisecond)
	cfg := filepath.Join(dir, "embed.yaml")
	os.WriteFile(cfg, fmt.Appendf(nil, "search:\n  embeddings:\n    base_url: %s\n    model: fake\n    batch: %d\n", srv.BaseURL(), batch), 0o600)

	killAfterRequests(t, dir, cfg, srv, 10)
	_, before, _ := srv.Stats()
	if before >= msgs {
		t.Fatalf("all %d messages were embedded before the kill; the test needs a slower server", msgs)
	}

	srv.SetDelay(0)
	p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
	deadline := time.Now().Add(60 * time.Second)
	var a searchAnswer
	searches := 0 // each embeds its query
	for {
		served := srv.Served()
		searches++
		if a = searchAPI(t, p, "automobile"); a.Embedding == nil && a.Indexing == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("embedding did not finish: %+v\n%s", a.Embedding, p.stderr)
		}
		select { // the next batch, or the commit after the last one
		case <-served:
		case <-time.After(100 * time.Millisecond):
		}
	}
	_, after, _ := srv.Stats()
	// A batch answered just before the kill may not have been stored.
	again := after - before - searches
	t.Logf("%d of %d messages embedded before the kill, %d after the restart", before, msgs, again)
	if again > msgs-before+batch || again < msgs-before {
		t.Errorf("after the restart %d texts were embedded; %d of %d were before the kill (batches of %d)", again, before, msgs, batch)
	}
	a = searchAPI(t, p, "which car did I purchase")
	if a.Semantic != "hybrid" || len(a.Hits) == 0 || !strings.Contains(a.Hits[0].Snippet, "automobile") {
		t.Errorf("by meaning after the restart: %+v", a)
	}

	// The embeddings server goes away: keyword answers, marked.
	srv.CloseClientConnections()
	srv.Listener.Close()
	start := time.Now()
	a = searchAPI(t, p, "automobile")
	if a.Semantic != "unavailable" || len(a.Hits) != 1 || time.Since(start) > 3*time.Second {
		t.Errorf("with the server gone: semantic %q, %d hits after %v; want unavailable, 1, ≤ 2 s", a.Semantic, len(a.Hits), time.Since(start))
	}
	p.stop(t, syscall.SIGTERM)

	ix, err := index.OpenReadOnly(filepath.Join(state, index.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	st, err := ix.Stats(context.Background())
	if err != nil || st.Docs != int64(msgs) || st.Vectors != int64(msgs) {
		t.Errorf("the index holds %+v (%v); want %d documents, each with one vector", st, err, msgs)
	}
}

// killAfterRequests starts the binary and kills it (SIGKILL) once the
// embeddings server has answered n requests.
func killAfterRequests(t *testing.T, dir, cfg string, srv *embedtest.Server, n int) {
	t.Helper()
	p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
	for {
		served := srv.Served()
		if req, _, _ := srv.Stats(); req >= n {
			break
		}
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Fatalf("the server embedded nothing within 30 s\n%s", p.stderr)
		}
	}
	p.cmd.Process.Kill()
	<-p.exited
	p.exited <- nil
}
