package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// memoryCall sends one /api/memory request and decodes its JSON answer.
func memoryCall(t *testing.T, method, url, body string, want int) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != want {
		t.Fatalf("%s %s = %d %v, want %d", method, url, resp.StatusCode, out, want)
	}
	return out
}

// wsMemoryChanges connects to /ws and returns a function that reads the
// next memory_changed event.
func wsMemoryChanges(ctx context.Context, t *testing.T, url string) func() (event.Event, event.MemoryChangedData) {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return func() (event.Event, event.MemoryChangedData) {
		t.Helper()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("waiting for memory_changed: %v", err)
			}
			var e event.Event
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			if e.Type == event.MemoryChanged {
				var d event.MemoryChangedData
				if err := e.Decode(&d); err != nil {
					t.Fatal(err)
				}
				return e, d
			}
		}
	}
}

// Two WebSocket clients both see every memory change made over HTTP, and
// the items survive a kill -9 of the real binary, even with items.json
// lost.
func TestBinaryMemoryItemsAcrossClientsAndRestart(t *testing.T) {
	dir := t.TempDir()
	p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients := []func() (event.Event, event.MemoryChangedData){
		wsMemoryChanges(ctx, t, p.url), wsMemoryChanges(ctx, t, p.url),
	}
	bothSee := func(action, id, text string) {
		t.Helper()
		var seqs []int64
		for i, next := range clients {
			e, d := next()
			if d.Action != action || d.ID != id || d.By != "api" || d.Text != text || e.Seq == 0 {
				t.Fatalf("client %d got %s (seq %d), want %s %s by api with text %q", i, e.Data, e.Seq, action, id, text)
			}
			seqs = append(seqs, e.Seq)
		}
		if seqs[0] != seqs[1] {
			t.Fatalf("the clients saw seqs %v", seqs)
		}
	}
	api := p.url + "/api/memory"
	a := memoryCall(t, "POST", api, `{"text":"The user's car is a blue Volvo."}`, 201)
	bothSee(event.MemorySaved, a["id"].(string), "The user's car is a blue Volvo.")
	b := memoryCall(t, "POST", api, `{"text":"The launch is on Friday."}`, 201)
	bothSee(event.MemorySaved, b["id"].(string), "The launch is on Friday.")
	memoryCall(t, "PUT", api+"/"+a["id"].(string), `{"text":"The user's car is a red Volvo."}`, 200)
	bothSee(event.MemoryEdited, a["id"].(string), "The user's car is a red Volvo.")
	memoryCall(t, "DELETE", api+"/"+b["id"].(string), ``, 204)
	bothSee(event.MemoryDeleted, b["id"].(string), "")
	before := memoryCall(t, "GET", api, "", 200)

	// kill -9: nothing is flushed on the way out.
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	p.exited <- nil
	// And items.json lost besides: the chat log is the truth, the
	// restart rebuilds the items from it.
	if err := os.Remove(filepath.Join(dir, "state", "memory", memory.ItemsFile)); err != nil {
		t.Fatal(err)
	}
	p2 := startBinary(t, dir, nil, "-addr", "127.0.0.1:0", "-data", "state")
	after := memoryCall(t, "GET", p2.url+"/api/memory", "", 200)
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("items after kill -9 and restart:\n%v\nbefore:\n%v", after, before)
	}
	if items := after["items"].([]any); len(items) != 1 || items[0].(map[string]any)["text"] != "The user's car is a red Volvo." {
		t.Fatalf("items = %v", items)
	}
	if _, err := p2.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p2.stderr)
	}
	st, err := os.Stat(filepath.Join(dir, "state", "memory", memory.ItemsFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("items.json: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
}
