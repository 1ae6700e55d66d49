package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
)

// TestKill9NeverLosesAnAcknowledgedInput kills the server with SIGKILL at
// random moments, 50 times, while a client keeps talking to it. After every
// restart: every input the client saw echoed is in the chat log exactly
// once, seq only goes up, and every turn has a turn_end (the cut ones
// "interrupted").
func TestKill9NeverLosesAnAcknowledgedInput(t *testing.T) {
	t.Parallel() // its own data directory and binary; it mostly waits on the server
	if testing.Short() {
		t.Skip("50 crash/restart rounds")
	}
	const rounds = 50
	dir := t.TempDir()
	cfg := filepath.Join(dir, "crash.yaml")
	// A small rotation size so kills also land around rotations.
	os.WriteFile(cfg, []byte("session:\n  fsync: always\n  log_rotate_mb: 1\nagent:\n  demo:\n    delay_ms: 2\n"), 0o600)
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	acked := map[string]int64{} // client_msg_id → seq of its echo
	next := 0
	for round := range rounds {
		p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(p.url, "http")+"/ws", nil)
		if err != nil {
			t.Fatalf("round %d: dial: %v", round, err)
		}
		c.SetReadLimit(1 << 20)
		kill := time.AfterFunc(time.Duration(rng.IntN(600))*time.Millisecond, func() { p.cmd.Process.Kill() })
		// Talk until the server dies: send, read the stream, send again
		// after each turn_end.
		send := func() {
			next++
			id := fmt.Sprint("m-", next)
			b, _ := json.Marshal(map[string]string{"type": "message", "content": "message " + id + " " + strings.Repeat("lorem ipsum ", rng.IntN(400)), "client_msg_id": id})
			c.Write(ctx, websocket.MessageText, b)
		}
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				break
			}
			var e event.Event
			if json.Unmarshal(b, &e) != nil {
				t.Fatalf("round %d: bad frame %s", round, b)
			}
			switch e.Type {
			case event.Synced:
				send()
			case event.User:
				var d event.UserData
				json.Unmarshal(e.Data, &d)
				if old, ok := acked[d.ClientMsgID]; ok && old != e.Seq {
					t.Fatalf("round %d: %s echoed with seq %d and %d: run twice", round, d.ClientMsgID, old, e.Seq)
				}
				acked[d.ClientMsgID] = e.Seq
			case event.TurnEnd:
				send()
			}
		}
		kill.Stop()
		p.cmd.Process.Kill()
		<-p.exited
		p.exited <- nil
		c.CloseNow()
		cancel()
	}

	// One last clean start, so the last cut turn gets its marker, then check
	// the whole log.
	p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
	var health map[string]string
	testio.GetJSON(t, p.url+"/healthz", &health)
	p.stop(t, syscall.SIGTERM)

	r := history.NewReader(filepath.Join(dir, "state", "chat_history.ndjson"))
	evs, truncated, st, err := r.Range(context.Background(), history.Bound{}, history.Bound{}, 0)
	if err != nil || truncated {
		t.Fatalf("read log: %v (truncated %v)", err, truncated)
	}
	if st.Skipped > rounds {
		t.Fatalf("%d malformed lines for %d crashes", st.Skipped, rounds)
	}
	seen := map[string]int64{}
	open := ""
	ended := map[string]string{}
	var prev int64
	for _, e := range evs {
		if e.Seq <= prev {
			t.Fatalf("seq %d after %d in the log", e.Seq, prev)
		}
		prev = e.Seq
		switch e.Type {
		case event.User:
			var d event.UserData
			json.Unmarshal(e.Data, &d)
			if s, dup := seen[d.ClientMsgID]; dup {
				t.Fatalf("%s logged twice (seq %d and %d)", d.ClientMsgID, s, e.Seq)
			}
			seen[d.ClientMsgID] = e.Seq
			if open != "" {
				t.Fatalf("turn %s has no turn_end before the next input %s", open, e.Turn)
			}
			open = e.Turn
		case event.TurnEnd:
			var d event.TurnEndData
			json.Unmarshal(e.Data, &d)
			ended[e.Turn] = d.Status
			if e.Turn == open {
				open = ""
			}
		}
	}
	if open != "" {
		t.Fatalf("the last turn %s never got a turn_end", open)
	}
	for id, seq := range acked {
		if seen[id] != seq {
			t.Fatalf("acknowledged input %s (seq %d) is not in the log after the crashes (found %d)", id, seq, seen[id])
		}
	}
	interrupted := 0
	for _, s := range ended {
		if s == event.StatusInterrupted {
			interrupted++
		}
	}
	t.Logf("%d rounds: %d inputs acknowledged, %d turns, %d cut and marked interrupted, %d malformed lines skipped",
		rounds, len(acked), len(ended), interrupted, st.Skipped)
	// On a slow machine fewer turns fit in a round; what matters is that
	// many inputs were at stake and some kills landed mid-turn.
	if len(acked) < rounds/2 || interrupted == 0 {
		t.Fatalf("the test did not exercise much: %d inputs, %d interrupted", len(acked), interrupted)
	}
}
