// Package fakeslack is Slack on loopback for the tests of the Slack door:
// the Web API methods the connector calls (auth.test,
// apps.connections.open, chat.postMessage, chat.update,
// chat.postEphemeral), files behind the bot token, and the Socket Mode
// WebSocket, which sends envelopes and takes their acks. An envelope not
// acknowledged is sent again on the next connection, as Slack does. It is
// imported only by tests.
//
//	f := fakeslack.New(t)
//	// a connector with APIURL f.URL(), AppToken fakeslack.AppToken,
//	// BotToken fakeslack.BotToken
//	f.WaitAck(f.DM("U1", "hello", "1700000000.000100"))
//	f.Wait("the answer", func() bool { return f.Text(0) == "hi" })
package fakeslack

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

// The tokens the fake accepts, and the bot's user id (auth.test's).
const (
	AppToken = "xapp-1-test"
	BotToken = "xoxb-test"
	BotID    = "UBOT"
)

// Server is a fake Slack workspace whose one app is the bot.
type Server struct {
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
	hold      bool          // a new socket does not get the envelopes pending until Redeliver
	opens     int           // apps.connections.open calls answered with a URL
	origins   []string      // the Origin header of each socket
	conn      *websocket.Conn
	nextEnv   int
	pending   []envelope // sent or to send, not acknowledged
	acked     map[string]bool
	nextTS    int
	msgs      map[string]*Msg // by ts
	order     []string        // ts of the posts, in order
	updates   int
	whispers  []string
	files     map[string][]byte // path → content
}

type envelope struct {
	ID   string
	JSON []byte
}

// Msg is a message the bot posted, as it reads now (after its edits).
type Msg struct {
	TS     string // its ts, Slack's id of it
	Chat   string // the channel posted in
	Thread string // the thread_ts it answers, "" if none
	Text   string
	// Buttons are the values of its buttons, in order.
	Buttons []string
}

// New starts the fake; it is closed at t's cleanup.
func New(t testing.TB) *Server {
	f := &Server{t: t, changed: make(chan struct{}), acked: map[string]bool{}, msgs: map[string]*Msg{},
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
		f.Drop()
		f.srv.Close()
	})
	return f
}

// URL is the Web API's address, ending in /api/: the connector's
// APIURL (config channels.slack.api_url).
func (f *Server) URL() string { return f.srv.URL + "/api/" }

// AddFile serves content at /files/name to the bot token alone (as
// url_private does); it returns that URL.
func (f *Server) AddFile(name string, content []byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files["/files/"+name] = content
	return f.srv.URL + "/files/" + name
}

// touch wakes whoever waits for a change; f.mu is held.
func (f *Server) touch() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Wait waits until cond is true, for up to 15 s, calling it again after
// every change the fake sees; on timeout the test fails, listing the
// bot's posts. cond may call f's methods.
func (f *Server) Wait(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		f.mu.Lock()
		ch := f.changed
		f.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond): // cond may read more than the fake
		case <-deadline:
			var posts []string
			for _, m := range f.Posts() {
				posts = append(posts, fmt.Sprintf("%+v", m))
			}
			f.t.Fatalf("timed out waiting for %s; posts: %q", what, posts)
		}
	}
}

// WaitPost waits until one of the bot's posts matches and returns it.
func (f *Server) WaitPost(what string, match func(Msg) bool) Msg {
	f.t.Helper()
	var got Msg
	f.Wait(what, func() bool {
		for _, m := range f.Posts() {
			if match(m) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// Posts are the bot's posts in the order posted, each as it reads now.
func (f *Server) Posts() []Msg {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Msg, 0, len(f.order))
	for _, ts := range f.order {
		out = append(out, f.msg(ts))
	}
	return out
}

// msg copies the post ts; f.mu is held.
func (f *Server) msg(ts string) Msg {
	m := *f.msgs[ts]
	m.Buttons = append([]string(nil), m.Buttons...)
	return m
}

// Post is the bot's post ts as it reads now.
func (f *Server) Post(ts string) (Msg, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.msgs[ts]; !ok {
		return Msg{}, false
	}
	return f.msg(ts), true
}

// Text is the current text of the n-th post (from 0), "" if none yet.
func (f *Server) Text(n int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n < 0 || n >= len(f.order) {
		return ""
	}
	return f.msgs[f.order[n]].Text
}

// Updates counts the chat.update calls taken.
func (f *Server) Updates() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.updates
}

// Whispers are the ephemeral messages posted, each "user: text".
func (f *Server) Whispers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.whispers...)
}

// Opens counts the apps.connections.open calls answered with a URL.
func (f *Server) Opens() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opens
}

// Origins are the Origin headers of the sockets opened, in order.
func (f *Server) Origins() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.origins...)
}

// Acked says whether envelope id was acknowledged.
func (f *Server) Acked(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acked[id]
}

// WaitAck waits until envelope id was acknowledged.
func (f *Server) WaitAck(id string) {
	f.t.Helper()
	f.Wait("the ack of "+id, func() bool { return f.Acked(id) })
}

// SetRevoked makes both tokens refused (token_revoked) or good again.
func (f *Server) SetRevoked(revoked bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = revoked
}

// RateLimit answers the next n chat.postMessage and chat.update calls
// 429 with Retry-After: 1.
func (f *Server) RateLimit(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limit = n
}

// RateLimitsLeft counts the 429s RateLimit set that are not given yet.
func (f *Server) RateLimitsLeft() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.limit
}

// After429 is the time from the last 429 to the next chat.* call taken
// (0 if none yet).
func (f *Server) After429() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.after429
}

// SetLoseAcks makes acks read and forgotten (as if the process died
// before they left), or kept again.
func (f *Server) SetLoseAcks(lose bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loseAcks = lose
}

// SetHold makes a new socket get the envelopes pending only at
// Redeliver, not at once.
func (f *Server) SetHold(hold bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = hold
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
func (f *Server) refused(w http.ResponseWriter, r *http.Request, want string) bool {
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

func (f *Server) authTest(w http.ResponseWriter, r *http.Request) {
	if f.refused(w, r, BotToken) {
		return
	}
	reply(w, map[string]any{"ok": true, "user_id": BotID, "bot_id": "B1", "user": "frontdesk", "team_id": "T1"})
}

func (f *Server) open(w http.ResponseWriter, r *http.Request) {
	if f.refused(w, r, AppToken) {
		return
	}
	f.mu.Lock()
	f.opens++
	f.touch()
	f.mu.Unlock()
	reply(w, map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/socket"})
}

// rateLimited answers 429 while f.limit says so; true if it did.
func (f *Server) rateLimited(w http.ResponseWriter) bool {
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

func (f *Server) post(w http.ResponseWriter, r *http.Request) {
	if f.refused(w, r, BotToken) || f.rateLimited(w) {
		return
	}
	m := &Msg{Chat: r.FormValue("channel"), Thread: r.FormValue("thread_ts"), Text: r.FormValue("text")}
	if b := r.FormValue("blocks"); b != "" {
		m.Buttons = buttonValues(f.t, b)
	}
	f.mu.Lock()
	f.nextTS++
	ts := fmt.Sprintf("1800000000.%06d", f.nextTS)
	m.TS = ts
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

func (f *Server) update(w http.ResponseWriter, r *http.Request) {
	if f.refused(w, r, BotToken) || f.rateLimited(w) {
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

func (f *Server) ephemeral(w http.ResponseWriter, r *http.Request) {
	if f.refused(w, r, BotToken) {
		return
	}
	f.mu.Lock()
	f.whispers = append(f.whispers, r.FormValue("user")+": "+r.FormValue("text"))
	f.touch()
	f.mu.Unlock()
	reply(w, map[string]any{"ok": true, "message_ts": "1800000000.999999"})
}

// file serves a file to the bot token only, as url_private does.
func (f *Server) file(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	b, ok := f.files[r.URL.Path]
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+BotToken {
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
func (f *Server) socket(w http.ResponseWriter, r *http.Request) {
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
		f.ack(b)
	}
}

// ack takes an ack read from the socket.
func (f *Server) ack(b []byte) {
	var ack struct {
		EnvelopeID string `json:"envelope_id"`
	}
	if json.Unmarshal(b, &ack) != nil || ack.EnvelopeID == "" {
		f.t.Errorf("not an ack: %s", b)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loseAcks {
		return
	}
	f.acked[ack.EnvelopeID] = true
	for i, e := range f.pending {
		if e.ID == ack.EnvelopeID {
			f.pending = append(f.pending[:i], f.pending[i+1:]...)
			break
		}
	}
	f.touch()
}

// Redeliver ends SetHold and sends the envelopes pending on the open
// socket.
func (f *Server) Redeliver() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = false
	for _, e := range f.pending {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		f.conn.Write(ctx, websocket.MessageText, e.JSON)
		cancel()
	}
}

// Raw writes b on the open socket, not to be sent again (a disconnect
// request, say).
func (f *Server) Raw(b string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.conn.Write(ctx, websocket.MessageText, []byte(b)); err != nil {
		f.t.Errorf("write %s: %v", b, err)
	}
}

// Drop closes the socket as a network failure would.
func (f *Server) Drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil {
		f.conn.CloseNow()
		f.conn = nil
	}
}

// Push sends an envelope of typ ("events_api", "interactive") with
// payload now if a socket is open, else on the next; it returns the
// envelope's id.
func (f *Server) Push(typ string, payload any) string {
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

// Event pushes an events_api envelope with the inner event ev; it
// returns the envelope's id.
func (f *Server) Event(ev map[string]any) string {
	return f.Push("events_api", map[string]any{"token": "x", "team_id": "T1", "api_app_id": "A1",
		"type": "event_callback", "event_id": fmt.Sprint("Ev", ev["ts"]), "event_time": 1800000000, "event": ev})
}

// DM pushes a direct message (in channel D1) from user with text at ts.
func (f *Server) DM(user, text, ts string) string {
	return f.Event(map[string]any{"type": "message", "channel": "D1", "channel_type": "im", "user": user, "text": text, "ts": ts})
}

// ChannelMessage is the message event of user's text at ts in channel,
// for Event (after adding fields such as thread_ts or bot_id).
func ChannelMessage(channel, user, text, ts string) map[string]any {
	return map[string]any{"type": "message", "channel": channel, "channel_type": "channel", "user": user, "text": text, "ts": ts}
}

// Channel pushes user's message text at ts in channel. To name the bot,
// text holds "<@" + BotID + ">".
func (f *Server) Channel(channel, user, text, ts string) string {
	return f.Event(ChannelMessage(channel, user, text, ts))
}

// Mention pushes the app_mention event of user's text at ts in channel
// (Slack sends it beside the message event of a text naming the bot).
func (f *Server) Mention(channel, user, text, ts string) string {
	return f.Event(map[string]any{"type": "app_mention", "channel": channel, "user": user, "text": text, "ts": ts})
}

// Press pushes user's press of the button whose value is value (an
// approval's "approve:<id>" or "deny:<id>", action_id "frontdesk_" and
// the part before the colon) on the bot's post ts in channel.
func (f *Server) Press(user, channel, ts, value string) string {
	decision, _, _ := strings.Cut(value, ":")
	return f.Push("interactive", map[string]any{"type": "block_actions", "user": map[string]any{"id": user},
		"channel": map[string]any{"id": channel}, "container": map[string]any{"type": "message", "message_ts": ts},
		"actions": []map[string]any{{"type": "button", "action_id": "frontdesk_" + decision, "block_id": "b", "value": value}}})
}
