package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// An erase on a follower of three real processes: within 10 s no file
// under any node's data directory — its chat log, search.db, memory, and
// the embedded JetStream store with its replication log — holds the
// erased words; a node that was down during the erase, started again,
// holds the tombstone at those seqs and none of the words; and a node
// started with an empty data directory (its NATS store kept) copies the
// log over the stream's hole and holds, at those seqs, the very tombstone
// every other node holds.
func TestClusterEraseLeavesNoTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes")
	}
	c := newTestCluster(t, clusterOpts{})
	h := c.holder()
	f, down := (h+1)%3, (h+2)%3
	const word = "xylophonequetzal7731"
	b, _ := json.Marshal(map[string]string{"content": "my one-time code is " + word + ", please keep it"})
	memoryCall(t, "POST", c.nodes[f].p.url+"/api/messages?wait=1", string(b), 200)
	// The reply came from the log; the holder's own file follows it
	// (copied from the stream), a moment later on a loaded machine.
	var seqs []int64
	waitFor(t, 10*time.Second, func() bool {
		seqs = holding(readChatLog(t, c.nodes[h].data), word)
		return len(seqs) > 0
	}, "the holder's chat log holds the message")
	s, err := c.session(h)
	if err != nil {
		t.Fatal(err)
	}
	c.caughtUp(s.LastSeq)
	c.kill(down)
	// The kill may cost an election of the log's or the lease's group:
	// erase once the two left agree on a holder, through the other one.
	h = c.holder()
	for i := range 3 {
		if i != h && i != down {
			f = i
		}
	}

	for _, seq := range seqs {
		eraseOn(t, c.nodes[f].p.url, seq)
	}
	s, _ = c.session(h)
	c.caughtUp(s.LastSeq)
	tombstones(t, c.nodes[h].name, c.nodes[h].data, seqs, 10*time.Second)
	for _, i := range []int{h, f} {
		noTraceWithin(t, c.nodes[i].name, c.nodes[i].data, word, 10*time.Second)
	}

	// The node that was down copies the erased events and is rid of the
	// words it held.
	c.start(down)
	s, _ = c.session(h)
	c.caughtUp(s.LastSeq)
	// Its own files are rid of the words; its JetStream store is not: a
	// replica that catches up from a snapshot has JetStream drop the
	// deleted messages without overwriting their bytes (filestore
	// SyncDeleted), which frontdesk cannot reach (docs/cluster.md).
	noTraceWithin(t, c.nodes[down].name, filepath.Join(c.nodes[down].data, "chat_history.ndjson"), word, 10*time.Second)
	outsideNATS(t, c.nodes[down].name, c.nodes[down].data, word)
	want := linesAt(t, c.nodes[h].data, seqs)
	for i, e := range want {
		if !event.IsTombstone(e) {
			t.Fatalf("the holder's seq %d is not a tombstone: %s", seqs[i], e.Data)
		}
	}
	sameLines(t, c.nodes[down].name, linesAt(t, c.nodes[down].data, seqs), want)

	// A node with an empty data directory (its NATS store kept) copies
	// the whole log: the stream has holes where the messages were.
	c.kill(down)
	entries, err := os.ReadDir(c.nodes[down].data)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "nats" {
			if err := os.RemoveAll(filepath.Join(c.nodes[down].data, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.start(down)
	c.caughtUp(s.LastSeq)
	sameLines(t, c.nodes[down].name+" (from empty)", linesAt(t, c.nodes[down].data, seqs), want)
	outsideNATS(t, c.nodes[down].name+" (from empty)", c.nodes[down].data, word)
}

// eraseOn erases seq through the node at base as a client would: a 503
// (no holder yet, or the kill's election under way) is sent again a moment
// later, and a 409 after it means an earlier try did it.
func eraseOn(t *testing.T, base string, seq int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	retried := false
	for {
		req, _ := http.NewRequest("DELETE", fmt.Sprintf("%s/api/history/%d", base, seq), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		switch {
		case resp.StatusCode == 200 && out["erased"] == true && out["seq"] == float64(seq):
			return
		case resp.StatusCode == 409 && retried:
			return
		case resp.StatusCode == 503 && time.Now().Before(deadline):
			retried = true
			time.Sleep(200 * time.Millisecond)
			continue
		}
		t.Fatalf("DELETE /api/history/%d: %d %v", seq, resp.StatusCode, out)
	}
}

// tombstones waits up to wait for a node's chat log to hold tombstones at
// seqs (its files are rewritten right after it copies the erased event).
func tombstones(t *testing.T, who, dir string, seqs []int64, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		done := true
		for _, e := range linesAt(t, dir, seqs) {
			done = done && event.IsTombstone(e)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: erased, yet its chat log at %v holds no tombstones after %v", who, seqs, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// outsideNATS fails if a file under dir outside its NATS store holds
// word, and logs the NATS store's files that still do.
func outsideNATS(t *testing.T, who, dir, word string) {
	t.Helper()
	var nats []string
	for _, h := range filesHolding(t, dir, word) {
		if strings.HasPrefix(h, "nats"+string(filepath.Separator)) {
			nats = append(nats, h)
			continue
		}
		t.Errorf("%s: %s holds %q", who, h, word)
	}
	if len(nats) > 0 {
		t.Logf("%s (down during the erase): its JetStream store still holds the erased bytes in %v", who, nats)
	}
}

// holding returns the seqs of the events whose data holds word.
func holding(evs []event.Event, word string) []int64 {
	var seqs []int64
	for _, e := range evs {
		if bytes.Contains(e.Data, []byte(word)) {
			seqs = append(seqs, e.Seq)
		}
	}
	return seqs
}

// linesAt returns a node's events at seqs.
func linesAt(t *testing.T, dir string, seqs []int64) []event.Event {
	t.Helper()
	at := map[int64]event.Event{}
	for _, e := range readChatLog(t, dir) {
		at[e.Seq] = e
	}
	out := make([]event.Event, len(seqs))
	for i, s := range seqs {
		e, ok := at[s]
		if !ok {
			t.Fatalf("%s: no event at seq %d (a hole)", dir, s)
		}
		out[i] = e
	}
	return out
}

func sameLines(t *testing.T, who string, got, want []event.Event) {
	t.Helper()
	for i := range want {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		if !bytes.Equal(g, w) {
			t.Errorf("%s: seq %d is %s, want %s", who, want[i].Seq, g, w)
		}
	}
}

// noTraceWithin waits up to wait for no file under dir to hold word, and
// fails naming the files that still do.
func noTraceWithin(t *testing.T, who, dir, word string, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		hits := filesHolding(t, dir, word)
		if len(hits) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, h := range hits {
				b, _ := os.ReadFile(filepath.Join(dir, h))
				for i := 0; ; {
					j := bytes.Index(b[i:], []byte(word))
					if j < 0 {
						break
					}
					lo := max(0, i+j-300)
					t.Logf("%s holds: %q", h, b[lo:min(len(b), i+j+100)])
					i += j + 1
				}
			}
			t.Fatalf("%s: %v after the erase these files still hold %q: %s", who, wait, word, strings.Join(hits, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
