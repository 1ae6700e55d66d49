package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
)

// A since beyond the log is not "gapless" on any node: a follower asked
// for since=999999 answers at once with its buffer and gapless false, as a
// single node does (it asks the log's last seq), instead of parking the
// client and then telling it nothing was missed.
func TestClusterSinceBeyondTheLogIsNotGapless(t *testing.T) {
	c := newTestCluster(t, clusterOpts{})
	h := c.holder()
	if code, body, err := c.postInput(h, "hello cluster", "since-1", true); err != nil || code != http.StatusOK {
		t.Fatalf("input: %d %s %v", code, body, err)
	}
	s := c.idle()
	c.caughtUp(s.LastSeq)
	f := (h + 1) % 3

	// Within parkWait (3 s): a parked client would not be answered yet.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, fmt.Sprintf("ws%s/ws?since=999999", strings.TrimPrefix(c.nodes[f].p.url, "http")), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	var replayed []int64
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("%s with since=999999: %v after replay %v (parked?)", c.nodes[f].name, err, replayed)
		}
		var e event.Event
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		if e.Seq > 0 {
			replayed = append(replayed, e.Seq)
		}
		if e.Type != event.Synced {
			continue
		}
		var d event.SyncedData
		if err := e.Decode(&d); err != nil {
			t.Fatal(err)
		}
		if d.Gapless || d.LastSeq != s.LastSeq || len(replayed) == 0 || replayed[len(replayed)-1] != s.LastSeq {
			t.Fatalf("%s with since=999999: synced %+v after replay %v; want last_seq %d, the buffer, gapless false",
				c.nodes[f].name, d, replayed, s.LastSeq)
		}
		return
	}
}
