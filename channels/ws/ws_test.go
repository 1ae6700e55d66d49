package ws_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

type server struct {
	hub *hub.SessionManager
	h   *ws.Handler
	url string
}

func start(t *testing.T, cfg hub.Config, opts ws.Options, a agent.Agent) *server {
	t.Helper()
	cfg.DataDir = t.TempDir()
	lg, err := history.Open(history.Options{Path: filepath.Join(cfg.DataDir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	m := hub.New(cfg, lg, a)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	h := ws.New(m, opts)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
		h.Wait(context.Background())
		lg.Close()
	})
	return &server{hub: m, h: h, url: "ws" + strings.TrimPrefix(srv.URL, "http")}
}

type frame struct {
	Seq  int64           `json:"seq"`
	Type event.Type      `json:"type"`
	Turn string          `json:"turn"`
	Data json.RawMessage `json:"data"`
}

type client struct {
	t *testing.T
	c *websocket.Conn
}

func dial(t *testing.T, url string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &client{t: t, c: c}
}

// read returns the next frame or the read error, waiting at most 5 s.
func (cl *client) read() (frame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	typ, b, err := cl.c.Read(ctx)
	if err != nil {
		return frame{}, err
	}
	if typ != websocket.MessageText {
		return frame{}, fmt.Errorf("got a %v frame", typ)
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		return frame{}, fmt.Errorf("frame %s: %v", b, err)
	}
	return f, nil
}

func (cl *client) next() frame {
	cl.t.Helper()
	f, err := cl.read()
	if err != nil {
		cl.t.Fatalf("read: %v", err)
	}
	return f
}

// until reads frames up to and including the first of type typ.
func (cl *client) until(typ event.Type) []frame {
	cl.t.Helper()
	var fs []frame
	for {
		f := cl.next()
		fs = append(fs, f)
		if f.Type == typ {
			return fs
		}
	}
}

// join reads connected … synced and returns the replayed frames.
func (cl *client) join() (event.ConnectedData, []frame, event.SyncedData) {
	cl.t.Helper()
	var c event.ConnectedData
	if f := cl.next(); f.Type != event.Connected || f.Seq != 0 {
		cl.t.Fatalf("first frame %s seq %d, want connected without seq", f.Type, f.Seq)
	} else {
		decode(cl.t, f, &c)
	}
	fs := cl.until(event.Synced)
	var s event.SyncedData
	decode(cl.t, fs[len(fs)-1], &s)
	return c, fs[:len(fs)-1], s
}

func (cl *client) send(v any) {
	cl.t.Helper()
	b, _ := json.Marshal(v)
	cl.sendRaw(websocket.MessageText, b)
}

func (cl *client) sendRaw(typ websocket.MessageType, b []byte) {
	cl.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cl.c.Write(ctx, typ, b); err != nil {
		cl.t.Fatalf("write: %v", err)
	}
}

func (cl *client) say(content, id string) {
	cl.send(map[string]string{"type": "message", "content": content, "client_msg_id": id})
}

func decode(t *testing.T, f frame, v any) {
	t.Helper()
	if err := json.Unmarshal(f.Data, v); err != nil {
		t.Fatalf("decode %s data %s: %v", f.Type, f.Data, err)
	}
}

func kinds(fs []frame) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(string(f.Type))
	}
	return b.String()
}

func TestTwoClientsShareOneConversation(t *testing.T) {
	s := start(t, hub.Config{}, ws.Options{}, &agent.Demo{})
	a, b := dial(t, s.url), dial(t, s.url)
	a.join()
	b.join()
	a.say("hello from a", "a-1")
	var streams [2][]frame
	for i, cl := range []*client{a, b} {
		streams[i] = cl.until(event.TurnEnd)
	}
	if kinds(streams[0]) != kinds(streams[1]) {
		t.Fatalf("clients saw different streams:\n a: %s\n b: %s", kinds(streams[0]), kinds(streams[1]))
	}
	var u event.UserData
	decode(t, streams[1][0], &u)
	if streams[1][0].Type != event.User || u.Content != "hello from a" || u.Channel != "web" || u.ClientMsgID != "a-1" {
		t.Fatalf("b's first frame %s %s, want a's echo", streams[1][0].Type, streams[1][0].Data)
	}
	var text strings.Builder
	var reply event.AssistantData
	for _, f := range streams[1] {
		var d event.TextData
		switch f.Type {
		case event.Delta:
			decode(t, f, &d)
			text.WriteString(d.Text)
		case event.Assistant:
			decode(t, f, &reply)
		}
	}
	if want := agent.DemoReply("hello from a", 0); text.String() != want || reply.Content != want {
		t.Fatalf("streamed %q and replied %q, want %q", text.String(), reply.Content, want)
	}
	// Persisted events carry seqs with no gap; status and delta none.
	var last int64
	for _, f := range streams[0] {
		if f.Type == event.Status || f.Type == event.Delta {
			if f.Seq != 0 {
				t.Fatalf("%s with seq %d", f.Type, f.Seq)
			}
			continue
		}
		if f.Seq != last+1 {
			t.Fatalf("seq gap: %d after %d", f.Seq, last)
		}
		last = f.Seq
	}
}

func TestBusyGoesToSubmitterOnly(t *testing.T) {
	g := testagent.NewGate()
	s := start(t, hub.Config{}, ws.Options{}, g)
	a, b := dial(t, s.url), dial(t, s.url)
	a.join()
	b.join()
	a.say("first", "a-1")
	a.until(event.Delta)
	b.until(event.Delta)
	b.say("second", "b-1")
	busy := b.next()
	var d event.BusyData
	decode(t, busy, &d)
	if busy.Type != event.Busy || busy.Seq != 0 || d.Turn != "t1" || d.Message == "" {
		t.Fatalf("b got %s seq %d %s, want busy for t1 without seq", busy.Type, busy.Seq, busy.Data)
	}
	g.Release <- struct{}{}
	fs := a.until(event.TurnEnd)
	for _, f := range fs {
		if f.Type == event.Busy {
			t.Fatal("the busy reply reached a client that did not submit")
		}
	}
	b.until(event.TurnEnd)
}

func TestCancelEndsTurnForEveryone(t *testing.T) {
	g := testagent.NewGate()
	s := start(t, hub.Config{}, ws.Options{}, g)
	a, b := dial(t, s.url), dial(t, s.url)
	a.join()
	b.join()
	a.say("long job", "a-1")
	a.until(event.Delta)
	b.until(event.Delta)
	b.send(map[string]string{"type": "command", "action": "cancel"})
	for _, cl := range []*client{a, b} {
		fs := cl.until(event.TurnEnd)
		var te event.TurnEndData
		decode(t, fs[len(fs)-1], &te)
		if te.Status != event.StatusCancelled || kinds(fs) != "assistant notice turn_end" {
			t.Fatalf("after cancel got %q with %+v", kinds(fs), te)
		}
	}
	if turn := <-g.Cancelled; turn != "t1" {
		t.Fatalf("backend context cancelled for %q", turn)
	}
	// Cancelling again: nothing runs, the canceller alone gets an error.
	b.send(map[string]string{"type": "command", "action": "cancel"})
	if f := b.next(); f.Type != event.Error || !strings.Contains(string(f.Data), "not_busy") {
		t.Fatalf("second cancel got %s %s", f.Type, f.Data)
	}
}

func TestBadInputGetsErrorAndConnectionStays(t *testing.T) {
	s := start(t, hub.Config{}, ws.Options{MaxMessageBytes: 1024}, &agent.Demo{})
	cl := dial(t, s.url)
	cl.join()
	tests := []struct {
		name string
		raw  []byte
		code string
	}{
		{"invalid utf-8", []byte("{\"type\":\"message\",\"content\":\"\xff\xfe\"}"), "invalid_utf8"},
		{"malformed json", []byte(`{"type":`), "bad_json"},
		{"not an object", []byte(`[1,2]`), "bad_json"},
		{"unknown field", []byte(`{"type":"message","content":"hi","colour":"red"}`), "bad_json"},
		{"trailing data", []byte(`{"type":"message","content":"hi"} {"type":"message","content":"again"}`), "bad_json"},
		{"key twice", []byte(`{"type":"message","content":"a","content":"b"}`), "bad_json"},
		{"key in another case", []byte(`{"type":"message","content":"a","Content":"b"}`), "bad_json"},
		{"type in another case", []byte(`{"type":"message","TYPE":"command","action":"reset"}`), "bad_json"},
		{"unknown type", []byte(`{"type":"dance"}`), "unknown_type"},
		{"empty content", []byte(`{"type":"message","content":"  ","client_msg_id":"e-1"}`), "empty_content"},
		{"unknown action", []byte(`{"type":"command","action":"explode"}`), "unknown_action"},
		{"client_msg_id too long", []byte(`{"type":"message","content":"hi","client_msg_id":"` + strings.Repeat("i", 900) + `"}`), "bad_client_msg_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl.sendRaw(websocket.MessageText, tc.raw)
			f := cl.next()
			var d event.ErrorData
			decode(t, f, &d)
			if f.Type != event.Error || d.Code != tc.code || d.Message == "" || f.Seq != 0 {
				t.Fatalf("got %s %+v, want error %s", f.Type, d, tc.code)
			}
			if strings.HasPrefix(tc.name, "key") && !strings.Contains(d.Message, `"content"`) {
				t.Errorf("the error does not name the key: %+v", d)
			}
			if tc.code == "empty_content" && d.ClientMsgID != "e-1" {
				t.Errorf("error does not name the message it answers: %+v", d)
			}
		})
	}
	// Still usable: a good message runs.
	cl.say("still here?", "c-1")
	if fs := cl.until(event.TurnEnd); fs[0].Type != event.User {
		t.Fatalf("after bad input the first frame was %s", fs[0].Type)
	}
	if info, _ := s.hub.Info(context.Background()); info.LastSeq == 0 {
		t.Fatal("nothing recorded")
	}
}

// TestInputIsCleaned: control characters never reach the session from
// this door (hub.Submit cleans input for every door).
func TestInputIsCleaned(t *testing.T) {
	s := start(t, hub.Config{}, ws.Options{}, &agent.Demo{})
	cl := dial(t, s.url)
	cl.join()
	cl.say("\u001c\u001c/status", "c-1")
	fs := cl.until(event.User)
	var d event.UserData
	decode(t, fs[len(fs)-1], &d)
	if d.Content != "/status" {
		t.Fatalf("echoed %q, want %q", d.Content, "/status")
	}
}

func TestClosingFrames(t *testing.T) {
	tests := []struct {
		name   string
		typ    websocket.MessageType
		msg    []byte
		status websocket.StatusCode
	}{
		{"binary frame", websocket.MessageBinary, []byte{1, 2, 3}, websocket.StatusUnsupportedData},
		{"over the read limit", websocket.MessageText, []byte(`{"type":"message","content":"` + strings.Repeat("x", 2000) + `"}`), websocket.StatusMessageTooBig},
	}
	s := start(t, hub.Config{}, ws.Options{MaxMessageBytes: 1024}, &agent.Demo{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := dial(t, s.url)
			cl.join()
			cl.sendRaw(tc.typ, tc.msg)
			_, err := cl.read()
			if got := websocket.CloseStatus(err); got != tc.status {
				t.Fatalf("close status %v (err %v), want %v", got, err, tc.status)
			}
			// The server keeps serving others.
			other := dial(t, s.url)
			if c, _, _ := other.join(); c.SessionID == "" {
				t.Fatal("no session after a client was closed")
			}
		})
	}
}

func TestReconnectWithSinceGetsExactlyTheMissedEvents(t *testing.T) {
	s := start(t, hub.Config{}, ws.Options{}, &agent.Demo{})
	a, b := dial(t, s.url), dial(t, s.url)
	a.join()
	b.join()
	a.say("one", "a-1")
	first := b.until(event.TurnEnd)
	a.until(event.TurnEnd)
	seen := first[len(first)-1].Seq
	b.c.Close(websocket.StatusNormalClosure, "")

	a.say("two", "a-2")
	missed := a.until(event.TurnEnd)
	b2 := dial(t, fmt.Sprintf("%s?since=%d", s.url, seen))
	c, replay, synced := b2.join()
	if c.MaxMessageBytes != 65536 {
		t.Errorf("connected.max_message_bytes = %d, want 65536", c.MaxMessageBytes)
	}
	if !c.Resumed || !synced.Gapless || synced.LastSeq != missed[len(missed)-1].Seq {
		t.Fatalf("connected %+v synced %+v", c, synced)
	}
	// Streamed deltas are compacted once a turn is over: the replay is the
	// persisted events of the missed turn, exactly.
	var want []frame
	for _, f := range missed {
		if f.Type.Persisted() {
			want = append(want, f)
		}
	}
	if kinds(replay) != kinds(want) || replay[0].Seq != want[0].Seq || replay[0].Seq != seen+1 {
		t.Fatalf("replay %s (from %d), want %s (from %d)", kinds(replay), replay[0].Seq, kinds(want), seen+1)
	}
	// And then it is live.
	a.say("three", "a-3")
	if f := b2.next(); f.Type != event.User || f.Seq != synced.LastSeq+1 {
		t.Fatalf("live after replay: %s seq %d", f.Type, f.Seq)
	}
}

func TestResendAfterReconnectIsNotRunTwice(t *testing.T) {
	s := start(t, hub.Config{}, ws.Options{}, &agent.Demo{})
	a := dial(t, s.url)
	a.join()
	a.say("only once", "c-1")
	fs := a.until(event.TurnEnd)
	a.c.Close(websocket.StatusNormalClosure, "")

	a2 := dial(t, fmt.Sprintf("%s?since=%d", s.url, fs[len(fs)-1].Seq))
	a2.join()
	a2.say("only once", "c-1")
	f := a2.next()
	if f.Type != event.User || f.Seq != fs[0].Seq {
		t.Fatalf("resend answered with %s seq %d, want the original echo seq %d", f.Type, f.Seq, fs[0].Seq)
	}
	if info, _ := s.hub.Info(context.Background()); info.Busy || info.LastSeq != fs[len(fs)-1].Seq {
		t.Fatalf("resend started work: %+v", info)
	}
}

func TestBadSince(t *testing.T) {
	s := start(t, hub.Config{}, ws.Options{}, &agent.Demo{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, s.url+"?since=abc", nil)
	if err == nil || resp == nil || resp.StatusCode != 400 {
		t.Fatalf("dial with since=abc: err %v, resp %v; want 400", err, resp)
	}
}

func TestSlowClientDroppedOthersGetEverything(t *testing.T) {
	// Each delta is 8 KiB so the stalled client's socket buffers fill and
	// its writer blocks; the backend waits for the fast client to read each
	// delta, so only the stalled client can fall behind.
	paced := &testagent.Count{N: 3000, Text: strings.Repeat("x", 8<<10), Ack: make(chan struct{})}
	s := start(t, hub.Config{ClientQueue: 16}, ws.Options{WriteTimeout: 500 * time.Millisecond}, paced)
	slow, fast := dial(t, s.url), dial(t, s.url)
	slow.join()
	fast.join()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.hub.Submit(ctx, hub.Input{Channel: "webhook", Content: "flood"}); err != nil {
		t.Fatal(err)
	}
	var last int64
	n := 0
	for {
		f := fast.next()
		if f.Type == event.Delta {
			if f.Seq != 0 {
				t.Fatalf("fast client: a delta with seq %d", f.Seq)
			}
		} else {
			if last != 0 && f.Seq != last+1 {
				t.Fatalf("fast client: seq %d after %d", f.Seq, last)
			}
			last = f.Seq
		}
		if f.Type == event.Delta {
			n++
			paced.Ack <- struct{}{}
		}
		if f.Type == event.TurnEnd {
			break
		}
	}
	if n != paced.N {
		t.Fatalf("fast client got %d deltas, want %d", n, paced.N)
	}
	info, _ := s.hub.Info(ctx)
	if info.Subscribers != 1 {
		t.Fatalf("subscribers = %d, want 1 (the stalled client dropped)", info.Subscribers)
	}
	// The stalled client finds its connection closed, never a gap in order.
	var prev int64
	for {
		f, err := slow.read()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatal("stalled client's connection was not closed")
			}
			break
		}
		if f.Type == event.Delta {
			if f.Seq != 0 {
				t.Fatalf("stalled client: a delta with seq %d", f.Seq)
			}
			continue // deltas carry no seq
		}
		if prev != 0 && f.Seq != prev+1 {
			t.Fatalf("stalled client: seq %d after %d", f.Seq, prev)
		}
		prev = f.Seq
	}
}

func TestManyClientsConcurrently(t *testing.T) {
	const clients = 50
	s := start(t, hub.Config{}, ws.Options{}, &testagent.Count{N: 20})
	cls := make([]*client, clients)
	for i := range cls {
		cls[i] = dial(t, s.url)
		cls[i].join()
	}
	// Everyone sends at once. Each sender must get an answer of its own:
	// its echo (its turn started) or a busy reply — never silence.
	streams := make([][]int64, clients)
	var wg sync.WaitGroup
	for i, cl := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("c-", i)
			b, _ := json.Marshal(map[string]string{"type": "message", "content": fmt.Sprint("hi ", i), "client_msg_id": id})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := cl.c.Write(ctx, websocket.MessageText, b); err != nil {
				t.Errorf("client %d write: %v", i, err)
				return
			}
			for {
				f, err := cl.read()
				if err != nil {
					t.Errorf("client %d got no answer: %v", i, err)
					return
				}
				if f.Type == event.Busy {
					return
				}
				streams[i] = append(streams[i], f.Seq)
				if f.Type == event.User && strings.Contains(string(f.Data), `"`+id+`"`) {
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Wait for the session to be idle, then one last turn that everyone
	// reads to its end: by then every stream is complete.
	deadline := time.Now().Add(10 * time.Second)
	for info, _ := s.hub.Info(context.Background()); info.Busy; info, _ = s.hub.Info(context.Background()) {
		if time.Now().After(deadline) {
			t.Fatal("session never became idle")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cls[0].say("last", "c-last")
	for i, cl := range cls {
		lastTurn := ""
		for {
			f := cl.next()
			streams[i] = append(streams[i], f.Seq)
			if f.Type == event.User && strings.Contains(string(f.Data), `"c-last"`) {
				lastTurn = f.Turn
			}
			if f.Type == event.TurnEnd && f.Turn == lastTurn {
				break
			}
		}
	}
	ref := streams[0]
	for i := 1; i < clients; i++ {
		if fmt.Sprint(streams[i]) != fmt.Sprint(ref) {
			t.Fatalf("client %d saw %v\nclient 0 saw %v", i, streams[i], ref)
		}
	}
	// Deltas carry no seq (0 here); the persisted events' seqs have no gap.
	var seqs []int64
	for _, q := range ref {
		if q != 0 {
			seqs = append(seqs, q)
		}
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("gap in the shared stream: %d after %d", seqs[i], seqs[i-1])
		}
	}
}

// A bad since is refused before the upgrade with the JSON error every
// endpoint uses, not hand-made JSON sent as text/plain.
func TestBadSinceIsJSONError(t *testing.T) {
	s := start(t, hub.Config{}, ws.Options{}, &agent.Demo{})
	resp, err := http.Get("http" + strings.TrimPrefix(s.url, "ws") + "/?since=-1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Code, Message string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || body.Code != "bad_since" {
		t.Errorf("got %d %q %+v; want 400 application/json bad_since", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// noHolder is a cluster in which no node holds the lease.
type noHolder struct{}

func (noHolder) Forward(context.Context, string, []byte) ([]byte, error) { return nil, hub.ErrNoLeader }
func (noHolder) PublishLive([]byte)                                      {}
func (noHolder) LastSeq(context.Context) (int64, error)                  { return 0, hub.ErrNoLeader }
func (noHolder) Changed() <-chan struct{}                                { return nil }

// While no node holds the lease, every refused frame says no_leader (the
// page waits and retries), a cancel and a decision included — not
// "internal" or "bad_approval".
func TestNoLeaderRefusalsSayNoLeader(t *testing.T) {
	s := start(t, hub.Config{Cluster: noHolder{}}, ws.Options{}, &agent.Demo{})
	cl := dial(t, s.url)
	cl.join()
	for _, raw := range []string{
		`{"type":"message","content":"hi","client_msg_id":"n-1"}`,
		`{"type":"command","action":"cancel"}`,
		`{"type":"command","action":"approve","id":"a1"}`,
		`{"type":"command","action":"reset"}`,
	} {
		cl.sendRaw(websocket.MessageText, []byte(raw))
		f := cl.next()
		var d event.ErrorData
		decode(t, f, &d)
		if f.Type != event.Error || d.Code != "no_leader" {
			t.Errorf("%s with no holder: %s %+v, want error no_leader", raw, f.Type, d)
		}
	}
}
