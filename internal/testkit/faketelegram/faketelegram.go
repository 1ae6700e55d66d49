// Package faketelegram is a Telegram Bot API on loopback for the tests
// of the Telegram door: the methods the connector calls, with Telegram's
// update semantics (an update stays until a getUpdates offset passes it)
// and switches for the faults the tests need. It is imported only by
// tests.
//
//	f := faketelegram.New(t)
//	// a connector with BaseURL f.URL() and Token faketelegram.Token
//	id := f.Message(42, faketelegram.User(42, "ann"), "hello", nil)
//	f.WaitFor(t, "the answer", func() bool { _, ok := f.ReplyTo(id); return ok })
package faketelegram

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is the fake Bot API of one bot, whose token is Token.
type Server struct {
	srv   *httptest.Server
	token string

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	updates []fakeUpdate
	nextUpd int64
	nextMsg int
	acked   int64               // the highest offset a getUpdates sent
	msgs    map[string]*Sent    // by chat:id
	sent    []*Sent             // sendMessage calls that succeeded, in order
	calls   []Call              // every method call, in order
	answers []string            // answerCallbackQuery texts
	files   map[string]fakeFile // by file_id
	polling int                 // getUpdates waiting now
	drops   int                 // polls dropped so far
	// delivered counts how often each update was handed out.
	delivered map[int64]int

	// Switches.
	revoked   bool           // every method answers 401
	tooMany   map[string]int // the next n calls of a method answer 429
	retryIn   int            // their retry_after, seconds
	dropPolls int            // the next n polls (and those waiting) lose their connection
}

type fakeUpdate struct {
	id  int64
	raw map[string]any
}

// Sent is a message the bot posted, as it stands now (after its edits).
type Sent struct {
	Chat      string // the chat_id, as sent
	ID        int    // its message_id
	ReplyTo   int    // the message_id it answers (reply_parameters), 0 if none
	ParseMode string
	Text      string
	Buttons   []Button // of its inline keyboard, row after row
	Edits     int      // editMessageText calls that changed it
}

// Button is an inline keyboard button of a Sent message.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// Call is one method call the fake answered.
type Call struct {
	Method string    // "getUpdates", "sendMessage", …; "file:<file_id>" for a download
	At     time.Time // when it was answered
	Status int       // the HTTP status; 0 for a poll dropped
}

type fakeFile struct {
	path string
	data []byte
}

// Token is the bot token the fake accepts; BotID and BotUsername are
// the bot's (getMe's).
const (
	Token       = "123456:TEST-token"
	BotID       = 999
	BotUsername = "frontdesk_bot"
)

// botUser is the fake's bot account.
var botUser = map[string]any{"id": BotID, "is_bot": true, "first_name": "frontdesk", "username": BotUsername}

// User is a Telegram user object (the from of a message) for id, named
// username (its first_name too).
func User(id int64, username string) map[string]any {
	return map[string]any{"id": id, "is_bot": false, "first_name": username, "username": username}
}

// New starts the fake; it is closed at t's cleanup.
func New(t testing.TB) *Server {
	f := &Server{token: Token, changed: make(chan struct{}), nextUpd: 100, nextMsg: 500,
		msgs: map[string]*Sent{}, delivered: map[int64]int{}, files: map[string]fakeFile{}, tooMany: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the Bot API's base, the connector's BaseURL (methods are
// URL/bot<token>/<method>, files URL/file/bot<token>/<path>).
func (f *Server) URL() string { return f.srv.URL }

// set changes the fake under its lock and wakes its waiters.
func (f *Server) set(change func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change()
	f.wake()
}

// wake is called with f.mu held.
func (f *Server) wake() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// WaitFor waits until cond is true, for up to 15 s, calling it again
// after every change the fake sees and every 50 ms; on timeout the test fails, listing
// what the bot sent and its last calls. cond may call f's methods.
func (f *Server) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
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
		case <-deadline.C:
			f.mu.Lock()
			defer f.mu.Unlock()
			t.Fatalf("timed out waiting for %s; sent %v, answers %q, last calls %v", what, f.sent, f.answers, f.calls[max(0, len(f.calls)-8):])
		}
	}
}

// Push queues an update; raw is its body without update_id. It returns
// the update's id.
func (f *Server) Push(raw map[string]any) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextUpd++
	raw["update_id"] = f.nextUpd
	f.updates = append(f.updates, fakeUpdate{id: f.nextUpd, raw: raw})
	f.wake()
	return f.nextUpd
}

// Message pushes a message from user (see User) in chat (a private chat
// if chat > 0, else a supergroup); extra fields (caption, photo,
// document, entities, reply_to_message, …) are merged in. It returns the
// message's id.
func (f *Server) Message(chat int64, user map[string]any, text string, extra map[string]any) int {
	f.mu.Lock()
	f.nextMsg++
	id := f.nextMsg
	f.mu.Unlock()
	kind := "supergroup"
	if chat > 0 {
		kind = "private"
	}
	m := map[string]any{"message_id": id, "date": time.Now().Unix(), "from": user,
		"chat": map[string]any{"id": chat, "type": kind}}
	if text != "" {
		m["text"] = text
	}
	for k, v := range extra {
		m[k] = v
	}
	f.Push(map[string]any{"message": m})
	return id
}

// AddFile makes a file getFile and the download know, by file_id id.
func (f *Server) AddFile(id string, data []byte) {
	f.set(func() { f.files[id] = fakeFile{path: "docs/" + id + ".bin", data: data} })
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	if p, ok := strings.CutPrefix(r.URL.Path, "/file/bot"+f.token+"/"); ok {
		f.download(w, p)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	tok, method, _ := strings.Cut(rest, "/")
	f.mu.Lock()
	revoked := f.revoked
	f.mu.Unlock()
	if !ok || tok != f.token || revoked {
		f.fail(w, method, http.StatusUnauthorized, "Unauthorized", 0)
		return
	}
	f.mu.Lock()
	if n := f.tooMany[method]; n > 0 {
		f.tooMany[method] = n - 1
		retry := f.retryIn
		f.mu.Unlock()
		f.fail(w, method, http.StatusTooManyRequests, "Too Many Requests: retry after "+strconv.Itoa(retry), retry)
		return
	}
	f.mu.Unlock()
	switch method {
	case "getMe":
		f.ok(w, method, botUser)
	case "getUpdates":
		f.getUpdates(w, r)
	case "sendMessage":
		f.sendMessage(w, r)
	case "editMessageText":
		f.editMessageText(w, r)
	case "sendChatAction":
		f.ok(w, method, true)
	case "answerCallbackQuery":
		f.mu.Lock()
		f.answers = append(f.answers, r.FormValue("text"))
		f.mu.Unlock()
		f.ok(w, method, true)
	case "getFile":
		f.getFile(w, r)
	default:
		f.fail(w, method, http.StatusNotFound, "Not Found: method not found", 0)
	}
}

// record notes a call; f.mu held.
func (f *Server) record(method string, status int) {
	f.calls = append(f.calls, Call{Method: method, At: time.Now(), Status: status})
	f.wake()
}

func (f *Server) ok(w http.ResponseWriter, method string, result any) {
	f.mu.Lock()
	f.record(method, 200)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func (f *Server) fail(w http.ResponseWriter, method string, code int, desc string, retry int) {
	f.mu.Lock()
	f.record(method, code)
	f.mu.Unlock()
	body := map[string]any{"ok": false, "error_code": code, "description": desc}
	if retry > 0 {
		body["parameters"] = map[string]any{"retry_after": retry}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body)
}

// getUpdates confirms the updates before offset and waits up to timeout
// seconds for the rest.
func (f *Server) getUpdates(w http.ResponseWriter, r *http.Request) {
	offset, _ := strconv.ParseInt(r.FormValue("offset"), 10, 64)
	timeout, _ := strconv.Atoi(r.FormValue("timeout"))
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	f.mu.Lock()
	if offset > 0 {
		f.acked = max(f.acked, offset)
		kept := f.updates[:0]
		for _, u := range f.updates {
			if u.id >= offset {
				kept = append(kept, u)
			}
		}
		f.updates = kept
	}
	f.polling++
	f.wake()
	defer func() { f.polling--; f.wake(); f.mu.Unlock() }()
	for {
		if f.dropPolls > 0 {
			f.dropPolls--
			f.drops++
			f.record("getUpdates", 0)
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		if len(f.updates) > 0 || timeout == 0 {
			out := make([]map[string]any, 0, len(f.updates))
			for _, u := range f.updates {
				out = append(out, u.raw)
				f.delivered[u.id]++
			}
			f.record("getUpdates", 200)
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": out})
			return
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			timeout = 0
		case <-r.Context().Done():
			f.mu.Lock()
			return
		}
		f.mu.Lock()
	}
}

func (f *Server) sendMessage(w http.ResponseWriter, r *http.Request) {
	m := &Sent{Chat: r.FormValue("chat_id"), Text: r.FormValue("text"), ParseMode: r.FormValue("parse_mode")}
	if rp := r.FormValue("reply_parameters"); rp != "" {
		var p struct {
			MessageID int `json:"message_id"`
		}
		json.Unmarshal([]byte(rp), &p)
		m.ReplyTo = p.MessageID
	}
	if strings.Contains(r.FormValue("reply_markup"), `"copy_text":{"text":""}`) {
		f.fail(w, "sendMessage", http.StatusBadRequest, "Bad Request: BUTTON_COPY_TEXT_INVALID", 0)
		return
	}
	if rm := r.FormValue("reply_markup"); rm != "" {
		var k struct {
			InlineKeyboard [][]Button `json:"inline_keyboard"`
		}
		json.Unmarshal([]byte(rm), &k)
		for _, row := range k.InlineKeyboard {
			m.Buttons = append(m.Buttons, row...)
		}
	}
	if m.Text == "" {
		f.fail(w, "sendMessage", http.StatusBadRequest, "Bad Request: message text is empty", 0)
		return
	}
	f.mu.Lock()
	f.nextMsg++
	m.ID = f.nextMsg
	f.msgs[m.Chat+":"+strconv.Itoa(m.ID)] = m
	f.sent = append(f.sent, m)
	f.mu.Unlock()
	chatID, _ := strconv.ParseInt(m.Chat, 10, 64)
	f.ok(w, "sendMessage", map[string]any{"message_id": m.ID, "date": time.Now().Unix(), "text": m.Text,
		"from": botUser, "chat": map[string]any{"id": chatID, "type": "private"}})
}

func (f *Server) editMessageText(w http.ResponseWriter, r *http.Request) {
	key := r.FormValue("chat_id") + ":" + r.FormValue("message_id")
	text := r.FormValue("text")
	f.mu.Lock()
	m := f.msgs[key]
	var problem string
	switch {
	case m == nil:
		problem = "Bad Request: message to edit not found"
	case m.Text == text:
		problem = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"
	default:
		m.Text, m.ParseMode, m.Buttons = text, r.FormValue("parse_mode"), nil
		m.Edits++
	}
	f.mu.Unlock()
	if problem != "" {
		f.fail(w, "editMessageText", http.StatusBadRequest, problem, 0)
		return
	}
	f.ok(w, "editMessageText", map[string]any{"message_id": m.ID, "date": time.Now().Unix(), "text": text})
}

func (f *Server) getFile(w http.ResponseWriter, r *http.Request) {
	id := r.FormValue("file_id")
	f.mu.Lock()
	file, ok := f.files[id]
	f.mu.Unlock()
	if !ok {
		f.fail(w, "getFile", http.StatusBadRequest, "Bad Request: invalid file_id", 0)
		return
	}
	f.ok(w, "getFile", map[string]any{"file_id": id, "file_unique_id": "u" + id, "file_size": len(file.data), "file_path": file.path})
}

func (f *Server) download(w http.ResponseWriter, path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, file := range f.files {
		if file.path == path {
			f.record("file:"+id, 200)
			w.Write(file.data)
			return
		}
	}
	http.NotFound(w, nil)
}

// Count is how many calls of method answered status (0: any status).
func (f *Server) Count(method string, status int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.Method == method && (status == 0 || c.Status == status) {
			n++
		}
	}
	return n
}

// replyTo finds the bot's message answering message id; f.mu held.
func (f *Server) replyTo(id int) *Sent {
	for _, m := range f.sent {
		if m.ReplyTo == id {
			return m
		}
	}
	return nil
}

// String is for failure messages.
func (m Sent) String() string {
	return fmt.Sprintf("{%s:%d reply to %d %q %s buttons %v edits %d}", m.Chat, m.ID, m.ReplyTo, m.Text, m.ParseMode, m.Buttons, m.Edits)
}

// ReplyTo is the bot's first message answering message id (as it
// stands now); false if none yet.
func (f *Server) ReplyTo(id int) (Sent, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.replyTo(id); m != nil {
		return m.copy(), true
	}
	return Sent{}, false
}

func (m *Sent) copy() Sent {
	c := *m
	c.Buttons = append([]Button(nil), m.Buttons...)
	return c
}

// Posts are the messages the bot sent, in order, as they stand now.
func (f *Server) Posts() []Sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Sent, 0, len(f.sent))
	for _, m := range f.sent {
		out = append(out, m.copy())
	}
	return out
}

// Post is the bot's message id in chat as it stands now.
func (f *Server) Post(chat string, id int) (Sent, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.msgs[chat+":"+strconv.Itoa(id)]; ok {
		return m.copy(), true
	}
	return Sent{}, false
}

// Answers are the answerCallbackQuery texts, in order.
func (f *Server) Answers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.answers...)
}

// Calls are the method calls answered, in order.
func (f *Server) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Acked is the highest getUpdates offset sent: every update before it
// is confirmed.
func (f *Server) Acked() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acked
}

// LastUpdate is the id of the last update pushed (100 before any).
func (f *Server) LastUpdate() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nextUpd
}

// Delivered counts how often update id was handed out by getUpdates.
func (f *Server) Delivered(id int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.delivered[id]
}

// Polling counts the getUpdates calls waiting now.
func (f *Server) Polling() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.polling
}

// Drops counts the polls DropPolls dropped so far.
func (f *Server) Drops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drops
}

// SetRevoked makes every method answer 401 Unauthorized, or not again.
func (f *Server) SetRevoked(revoked bool) { f.set(func() { f.revoked = revoked }) }

// TooMany answers the next n calls of method 429 with retry_after
// seconds (the same retry_after for every method).
func (f *Server) TooMany(method string, n, retryAfter int) {
	f.set(func() { f.tooMany[method], f.retryIn = n, retryAfter })
}

// DropPolls makes the next n polls, those waiting now first, lose their
// connection.
func (f *Server) DropPolls(n int) { f.set(func() { f.dropPolls = n }) }

// Press pushes from's press of the inline button whose callback_data is
// data on the bot's message m, as callback query queryID.
func (f *Server) Press(from map[string]any, queryID, data string, m Sent) int64 {
	chat, _ := strconv.ParseInt(m.Chat, 10, 64)
	kind := "supergroup"
	if chat > 0 {
		kind = "private"
	}
	return f.Push(map[string]any{"callback_query": map[string]any{"id": queryID, "from": from, "chat_instance": "x", "data": data,
		"message": map[string]any{"message_id": m.ID, "date": 1, "chat": map[string]any{"id": chat, "type": kind}, "text": m.Text}}})
}

// Bot is the bot's user object (getMe's), for the from of a
// reply_to_message.
func Bot() map[string]any {
	b := map[string]any{}
	for k, v := range botUser {
		b[k] = v
	}
	return b
}
