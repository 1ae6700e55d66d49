package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/frontdesk-hq/frontdesk/event"
)

// postInput posts content through node i's webhook; the status and the
// answer's body.
func (c *testCluster) postInput(i int, content, id string, wait bool) (int, []byte, error) {
	url := c.nodes[i].p.url
	if !wait {
		return c.postInputTo(url, content, id)
	}
	// As a client should: no_leader (nothing stored) says try again
	// shortly — a holder that has just taken over may not serve its
	// followers' requests for a moment yet.
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body, err := c.postInputTo(url, content, id, "?wait=1")
		if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(string(body), `"no_leader"`) || time.Now().After(deadline) {
			return code, body, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// postInputTo posts content to the node at url (query: ?wait=1 or none).
func (c *testCluster) postInputTo(url, content, id string, query ...string) (int, []byte, error) {
	return c.postInputTimeout(url+strings.Join(query, ""), content, id, 30*time.Second)
}

// postInputTimeout posts content to /api/messages at url, waiting at most
// wait for the answer.
func (c *testCluster) postInputTimeout(url, content, id string, wait time.Duration) (int, []byte, error) {
	if i := strings.Index(url, "?"); i >= 0 {
		url = url[:i] + "/api/messages" + url[i:]
	} else {
		url += "/api/messages"
	}
	body, _ := json.Marshal(map[string]string{"content": content, "client_msg_id": id})
	cl := http.Client{Timeout: wait}
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes(), nil
}

// sameLogs checks that every running node's chat log is the same lines.
func (c *testCluster) sameLogs() []event.Event {
	c.t.Helper()
	var first []byte
	var evs []event.Event
	for _, n := range c.nodes {
		if n.p == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(n.data, "chat_history.ndjson"))
		if err != nil {
			c.t.Fatal(err)
		}
		if first == nil {
			first, evs = b, readChatLog(c.t, n.data)
			continue
		}
		if !bytes.Equal(b, first) {
			c.t.Fatalf("%s's chat log differs from the first node's (%d vs %d bytes)", n.name, len(b), len(first))
		}
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			c.t.Fatalf("seq %d at line %d: the log has a gap or a double", e.Seq, i+1)
		}
	}
	return evs
}

// TestClusterEveryDoorOnEveryNode: three processes; inputs through the
// webhook, the WebSocket and /mcp of each node; two watchers on different
// nodes see the same events with the same seqs, and every node's chat log
// is the same, each input in it once.
func TestClusterEveryDoorOnEveryNode(t *testing.T) {
	c := newTestCluster(t, clusterOpts{})
	h := c.holder()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	watchA := dialWS(ctx, t, c.nodes[(h+1)%3].p.url, 0)
	watchB := dialWS(ctx, t, c.nodes[(h+2)%3].p.url, 0)
	var inputs []string
	for i := range c.nodes {
		in := fmt.Sprint("through the webhook of node ", i)
		code, body, err := c.postInput(i, in, fmt.Sprint("hook-", i), true)
		if err != nil || code != http.StatusOK || !strings.Contains(string(body), `"status":"completed"`) {
			t.Fatalf("webhook on node %d: %d %s %v", i, code, body, err)
		}
		inputs = append(inputs, in)

		in = fmt.Sprint("through the WebSocket of node ", i)
		now, err := c.session(i)
		if err != nil {
			t.Fatal(err)
		}
		w := dialWS(ctx, t, c.nodes[i].p.url, now.LastSeq)
		w.send(ctx, t, in, fmt.Sprint("ws-", i))
		turn := ""
		w.until(ctx, t, func(e event.Event) bool {
			if e.Type == event.User && userData(e).Content == in {
				turn = e.Turn
			}
			return e.Type == event.TurnEnd && e.Turn == turn && turn != ""
		})
		inputs = append(inputs, in)

		in = fmt.Sprint("through /mcp of node ", i)
		if out := mcpSend(ctx, t, c.nodes[i].p.url, in); !strings.Contains(out, "You said") {
			t.Fatalf("send_message on node %d: %s", i, out)
		}
		inputs = append(inputs, in)
	}
	s, err := c.session(h)
	if err != nil {
		t.Fatal(err)
	}
	c.caughtUp(s.LastSeq)
	log := c.sameLogs()
	for _, in := range inputs {
		n := 0
		for _, e := range log {
			if e.Type == event.User && userData(e).Content == in {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%q is in the log %d times", in, n)
		}
	}
	// /metrics: the holder timed its appends, a follower its deliveries,
	// and each counted the role it took.
	for i, want := range map[int][]string{
		h:           {"frontdesk_cluster_append_ack_seconds_count", `frontdesk_cluster_lease_changes_total{role="leader"}`},
		(h + 1) % 3: {"frontdesk_cluster_delivery_seconds_count", `frontdesk_cluster_lease_changes_total{role="follower"}`},
	} {
		body := getText(t, c.nodes[i].p.url+"/metrics")
		for _, series := range want {
			if !regexp.MustCompile(regexp.QuoteMeta(series) + ` [1-9]`).MatchString(body) {
				t.Errorf("node %d /metrics lacks %s > 0", i, series)
			}
		}
	}
	for name, w := range map[string]*wsClient{"A": watchA, "B": watchB} {
		seen := persistedSeqs(w.until(ctx, t, func(e event.Event) bool { return e.Seq == s.LastSeq }))
		if want := persistedSeqs(log); seen != want {
			t.Errorf("watcher %s saw %s\nthe log holds %s", name, seen, want)
		}
	}
}

// persistedSeqs lists the persisted events as type:seq:turn.
func persistedSeqs(evs []event.Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Seq > 0 {
			fmt.Fprintf(&b, "%s:%d:%s ", e.Type, e.Seq, e.Turn)
		}
	}
	return b.String()
}

// mcpSend calls send_message on url's /mcp and returns its text.
func mcpSend(ctx context.Context, t *testing.T, url, content string) string {
	t.Helper()
	cl := sdk.NewClient(&sdk.Implementation{Name: "cluster-test", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{"content": content}})
	if err != nil {
		t.Fatalf("send_message: %v", err)
	}
	var out strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			out.WriteString(tc.Text)
		}
	}
	return out.String()
}

// TestClusterTwoOfThreeDown: with two nodes killed the survivor refuses
// input with 503 no_leader (Retry-After), says so on /healthz, and
// stores nothing; when one comes back, the quorum goes on, and the
// refused inputs are nowhere in the log.
func TestClusterTwoOfThreeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts cluster nodes")
	}
	c := newTestCluster(t, clusterOpts{})
	h := c.holder()
	if code, _, err := c.postInput(h, "before", "before", true); err != nil || code != http.StatusOK {
		t.Fatalf("first input: %d %v", code, err)
	}
	survivor := (h + 1) % 3
	for i := range c.nodes {
		if i != survivor {
			c.kill(i)
		}
	}
	// The survivor notices within a lease or two; then every input is
	// refused, clearly, and stored nowhere.
	deadline := time.Now().Add(20 * time.Second)
	var refused []string
	for n := 0; ; n++ {
		id := fmt.Sprint("lost-", n)
		code, body, err := c.postInput(survivor, "while two are down "+id, id, false)
		if err != nil {
			t.Fatal(err)
		}
		if code == http.StatusAccepted {
			t.Fatalf("input accepted with two of three nodes down: %s", body)
		}
		if code == http.StatusServiceUnavailable && strings.Contains(string(body), `"no_leader"`) {
			refused = append(refused, id)
			if len(refused) == 3 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no no_leader answer within 20 s; last %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// /healthz says so too, once the lease has gone unrenewed for two
	// lease times (a lone replica still answers reads of the old entry).
	for {
		resp, err := http.Get(c.nodes[survivor].p.url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		var health map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&health)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable && health["status"] == "no_leader" && health["role"] == "electing" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz with two down: %d %v", resp.StatusCode, health)
		}
		time.Sleep(100 * time.Millisecond)
	}

	c.start(h) // a majority again
	c.holder()
	if code, body, err := c.postInput(survivor, "after", "after", true); err != nil || code != http.StatusOK {
		t.Fatalf("input after the quorum came back: %d %s %v", code, body, err)
	}
	s := c.idle()
	c.caughtUp(s.LastSeq)
	for _, e := range c.sameLogs() {
		if e.Type != event.User {
			continue
		}
		for _, id := range refused {
			if userData(e).ClientMsgID == id {
				t.Errorf("refused input %s is in the log at seq %d", id, e.Seq)
			}
		}
	}
}

// getText GETs url and returns its body.
func getText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return b.String()
}
