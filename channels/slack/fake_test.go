package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

const (
	fakeAppToken = "xapp-1-test"
	fakeBotToken = "xoxb-test"
	fakeBotID    = "UBOT"
)

// fakeSlack is Slack on loopback: the Web API methods the connector
// calls (auth.test, apps.connections.open, chat.postMessage, chat.update,
// chat.postEphemeral), files behind the bot token, and the Socket Mode
// WebSocket, which sends envelopes and takes their acks. An envelope not
// acknowledged is sent again on the next connection, as Slack does.
type fakeSlack struct {
	t   testing.TB
	srv *httptest.Server

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	revoked   bool          // both tokens refused
	limit     int           // the next chat.* calls answered 429
	retryHdr  string        // their Retry-After
	limitedAt time.Time     // the last 429
	after429  time.Duration // from the last 429 to the next chat.* call taken
	loseAcks  bool          // acks are read and forgotten (the process died before they left)
	hold      bool          // a new socket does not get the envelopes pending until redeliver
	opens     int           // apps.connections.open calls answered with a URL
	origins   []string      // the Origin header of each socket
	conn      *websocket.Conn
	nextEnv   int
	pending   []envelope // sent or to send, not acknowledged
	acked     map[string]bool
	nextTS    int
	msgs      map[string]*fakeMsg // by ts
	order     []string            // ts of the posts, in order
	updates   int
	whispers  []string
	files     map[string][]byte // path → content
}

type envelope struct {
	ID   string
	JSON []byte
}

// fakeMsg is a message the bot posted.
type fakeMsg struct {
	Chat, Thread, Text string
	Buttons            []string // the buttons' values
}

func newFakeSlack(t testing.TB) *fakeSlack {
	f := &fakeSlack{t: t, changed: make(chan struct{}), acked: map[string]bool{}, msgs: map[string]*fakeMsg{},
		files: map[string][]byte{}, retryHdr: "1"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/auth.test", f.authTest)
	mux.HandleFunc("POST /api/apps.connections.open", f.open)
	mux.HandleFunc("POST /api/chat.postMessage", f.post)
	mux.HandleFunc("POST /api/chat.update", f.update)
	mux.HandleFunc("POST /api/chat.postEphemeral", f.ephemeral)
	mux.HandleFunc("GET /socket", f.socket)
	mux.HandleFunc("GET /files/", f.file)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.drop()
		f.srv.Close()
	})
	return f
}

// options are Options for a connector on f, with short waits.
func (f *fakeSlack) options() Options {
	return Options{AppToken: fakeAppToken, BotToken: fakeBotToken, APIURL: f.srv.URL + "/api/",
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, AuthRetry: 50 * time.Millisecond,
		EditEvery: 20 * time.Millisecond}
}

// touch wakes whoever waits for a change; f.mu is held.
func (f *fakeSlack) touch() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// wait waits until cond (called with f.mu held) is true, for up to 15 s.
func (f *fakeSlack) wait(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		f.mu.Lock()
		ok, ch := cond(), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			f.mu.Lock()
			var posts []string
			for _, ts := range f.order {
				posts = append(posts, fmt.Sprintf("%s %+v", ts, *f.msgs[ts]))
			}
			f.mu.Unlock()
			f.t.Fatalf("timed out waiting for %s; posts: %q", what, posts)
		}
	}
}

func reply(w http.ResponseWriter, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// token is what the client authenticates with: the form field `token`
// (how slack-go sends most methods) or the Authorization header.
func token(r *http.Request) string {
	if t := r.FormValue("token"); t != "" {
		return t
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// refused answers as Slack does when the token is not want; true if so.
func (f *fakeSlack) refused(w http.ResponseWriter, r *http.Request, want string) bool {
	f.mu.Lock()
	revoked := f.revoked
	f.mu.Unlock()
	switch {
	case revoked:
		reply(w, map[string]any{"ok": false, "error": "token_revoked"})
	case token(r) != want:
		reply(w, map[string]any{"ok": false, "error": "invalid_auth"})
	default:
		return false
	}
	return true
}

func (f *fakeSlack) authTest(w http.ResponseWriter, r *http.Request) {
	if f.refused(w, r, fakeBotToken) {
		return
	}
	reply(w, map[string]any{"ok": true, "user_id": fakeBotID, "bot_id": "B1", "user": "frontdesk", "team_id": "T1"})
}

func (f *fakeSlack) open(w http.ResponseWriter, r *http.Request) {
	if f.refused(w, r, fakeAppToken) {
		return
	}
	f.mu.Lock()
	f.opens++
	f.touch()
	f.mu.Unlock()
	reply(w, map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/socket"})
}

// rateLimited answers 429 while f.limit says so; true if it did.
func (f *fakeSlack) rateLimited(w http.ResponseWriter) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.limit > 0 {
		f.limit--
		f.limitedAt = time.Now()
		w.Header().Set("Retry-After", f.retryHdr)
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	}
	if !f.limitedAt.IsZero() && f.after429 == 0 {
		f.after429 = time.Since(f.limitedAt)
	}
	return false
}

func (f *fakeSlack) post(w http.ResponseWriter, r *http.Request) {
	if f.refused(w, r, fakeBotToken) || f.rateLimited(w) {
		return
	}
	m := &fakeMsg{Chat: r.FormValue("channel"), Thread: r.FormValue("thread_ts"), Text: r.FormValue("text")}
	if b := r.FormValue("blocks"); b != "" {
		m.Buttons = buttonValues(f.t, b)
	}
	f.mu.Lock()
	f.nextTS++
	ts := fmt.Sprintf("1800000000.%06d", f.nextTS)
	f.msgs[ts] = m
	f.order = append(f.order, ts)
	f.touch()
	f.mu.Unlock()
	reply(w, map[string]any{"ok": true, "channel": m.Chat, "ts": ts, "message": map[string]any{"text": m.Text, "ts": ts}})
}

// buttonValues are the values of the buttons in a blocks form field.
func buttonValues(t testing.TB, blocks string) []string {
	var bs []struct {
		Type     string `json:"type"`
		Elements []struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(blocks), &bs); err != nil {
		t.Errorf("blocks %q: %v", blocks, err)
	}
	var out []string
	for _, b := range bs {
		for _, e := range b.Elements {
			if b.Type == "actions" && e.Type == "button" {
				out = append(out, e.Value)
			}
		}
	}
	return out
}

func (f *fakeSlack) update(w http.ResponseWriter, r *http.Request) {
	if f.refused(w, r, fakeBotToken) || f.rateLimited(w) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.msgs[r.FormValue("ts")]
	if !ok || m.Chat != r.FormValue("channel") {
		reply(w, map[string]any{"ok": false, "error": "message_not_found"})
		return
	}
	m.Text = r.FormValue("text")
	if b := r.FormValue("blocks"); b != "" {
		m.Buttons = buttonValues(f.t, b)
	}
	f.updates++
	f.touch()
	reply(w, map[string]any{"ok": true, "channel": m.Chat, "ts": r.FormValue("ts"), "text": m.Text})
}

func (f *fakeSlack) ephemeral(w http.ResponseWriter, r *http.Request) {
	if f.refused(w, r, fakeBotToken) {
		return
	}
	f.mu.Lock()
	f.whispers = append(f.whispers, r.FormValue("user")+": "+r.FormValue("text"))
	f.touch()
	f.mu.Unlock()
	reply(w, map[string]any{"ok": true, "message_ts": "1800000000.999999"})
}

// file serves a file to the bot token only, as url_private does.
func (f *fakeSlack) file(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	b, ok := f.files[r.URL.Path]
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+fakeBotToken {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusForbidden)
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Write(b)
}

// socket is the Socket Mode connection: hello, the envelopes not yet
// acknowledged, then new ones as the test pushes them; it reads acks.
func (f *fakeSlack) socket(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: []string{"api.slack.com"}})
	if err != nil {
		return
	}
	f.mu.Lock()
	if f.conn != nil {
		f.conn.CloseNow()
	}
	f.conn = c
	f.origins = append(f.origins, r.Header.Get("Origin"))
	ctx := r.Context()
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","num_connections":1,"debug_info":{"host":"fake"},"connection_info":{"app_id":"A1"}}`))
	if !f.hold {
		for _, e := range f.pending {
			c.Write(ctx, websocket.MessageText, e.JSON)
		}
	}
	f.touch()
	f.mu.Unlock()
	go func() { // Slack pings; the client deems a socket without pings dead
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
				c.Ping(ctx)
			}
		}
	}()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(b, &ack) != nil || ack.EnvelopeID == "" {
			f.t.Errorf("not an ack: %s", b)
			continue
		}
		f.mu.Lock()
		if !f.loseAcks {
			f.acked[ack.EnvelopeID] = true
			for i, e := range f.pending {
				if e.ID == ack.EnvelopeID {
					f.pending = append(f.pending[:i], f.pending[i+1:]...)
					break
				}
			}
			f.touch()
		}
		f.mu.Unlock()
	}
}

// redeliver sends the envelopes pending on the open socket.
func (f *fakeSlack) redeliver() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = false
	for _, e := range f.pending {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		f.conn.Write(ctx, websocket.MessageText, e.JSON)
		cancel()
	}
}

// raw writes b on the open socket, not to be sent again (a disconnect).
func (f *fakeSlack) raw(b string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.conn.Write(ctx, websocket.MessageText, []byte(b)); err != nil {
		f.t.Errorf("write %s: %v", b, err)
	}
}

// drop closes the socket as a network failure would.
func (f *fakeSlack) drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil {
		f.conn.CloseNow()
		f.conn = nil
	}
}

// push sends an envelope of typ ("events_api", "interactive") with
// payload now if a socket is open, else on the next; it returns the id.
func (f *fakeSlack) push(typ string, payload any) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextEnv++
	id := "env-" + strconv.Itoa(f.nextEnv)
	b, err := json.Marshal(map[string]any{"envelope_id": id, "type": typ, "payload": payload, "accepts_response_payload": false})
	if err != nil {
		f.t.Fatal(err)
	}
	f.pending = append(f.pending, envelope{ID: id, JSON: b})
	if f.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		f.conn.Write(ctx, websocket.MessageText, b)
		cancel()
	}
	return id
}

// event pushes an events_api envelope with the inner event ev.
func (f *fakeSlack) event(ev map[string]any) string {
	return f.push("events_api", map[string]any{"token": "x", "team_id": "T1", "api_app_id": "A1",
		"type": "event_callback", "event_id": fmt.Sprint("Ev", ev["ts"]), "event_time": 1800000000, "event": ev})
}

// dm pushes a direct message from user with text at ts.
func (f *fakeSlack) dm(user, text, ts string) string {
	return f.event(map[string]any{"type": "message", "channel": "D1", "channel_type": "im", "user": user, "text": text, "ts": ts})
}

// waitAck waits until envelope id was acknowledged.
func (f *fakeSlack) waitAck(id string) {
	f.t.Helper()
	f.wait("the ack of "+id, func() bool { return f.acked[id] })
}

// text is the current text of the n-th post (from 0), "" if none yet.
func (f *fakeSlack) text(n int) string {
	if n >= len(f.order) {
		return ""
	}
	return f.msgs[f.order[n]].Text
}
