package telegram_test

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

// fakeAPI is a Bot API on loopback: the methods the connector calls, with
// Telegram's update semantics (an update stays until a getUpdates offset
// passes it) and switches for the faults the tests need.
type fakeAPI struct {
	srv   *httptest.Server
	token string

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	updates []fakeUpdate
	nextUpd int64
	nextMsg int
	acked   int64                   // the highest offset a getUpdates sent
	msgs    map[string]*sentMessage // by chat:id
	sent    []*sentMessage          // sendMessage calls that succeeded, in order
	calls   []apiCall               // every method call, in order
	answers []string                // answerCallbackQuery texts
	files   map[string]fakeFile     // by file_id
	polling int                     // getUpdates waiting now
	drops   int                     // polls dropped so far
	// delivered counts how often each update was handed out.
	delivered map[int64]int

	// Switches, set with set.
	revoked   bool           // every method answers 401
	tooMany   map[string]int // the next n calls of a method answer 429
	retryIn   int            // their retry_after, seconds
	dropPolls int            // the next n polls (and those waiting) lose their connection
}

type fakeUpdate struct {
	id  int64
	raw map[string]any
}

// sentMessage is a message the bot posted, as it stands.
type sentMessage struct {
	Chat      string
	ID        int
	ReplyTo   int
	ParseMode string
	Text      string
	Buttons   []fakeButton
	Edits     int
}

type fakeButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

type apiCall struct {
	Method string
	At     time.Time
	Status int
}

type fakeFile struct {
	path string
	data []byte
}

// botUser is the fake's bot account.
var botUser = map[string]any{"id": 999, "is_bot": true, "first_name": "frontdesk", "username": "frontdesk_bot"}

const fakeToken = "123456:TEST-token"

func newFakeAPI(t testing.TB) *fakeAPI {
	f := &fakeAPI{token: fakeToken, changed: make(chan struct{}), nextUpd: 100, nextMsg: 500,
		msgs: map[string]*sentMessage{}, delivered: map[int64]int{}, files: map[string]fakeFile{}, tooMany: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// set changes the fake under its lock and wakes its waiters.
func (f *fakeAPI) set(change func(f *fakeAPI)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
	f.wake()
}

// wake is called with f.mu held.
func (f *fakeAPI) wake() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// waitFor waits until cond (called with f.mu held) is true.
func (f *fakeAPI) waitFor(t testing.TB, what string, cond func(f *fakeAPI) bool) {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok, ch := cond(f), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			f.mu.Lock()
			defer f.mu.Unlock()
			t.Fatalf("timed out waiting for %s; sent %v, answers %q, last calls %v", what, f.sent, f.answers, f.calls[max(0, len(f.calls)-8):])
		}
	}
}

// push queues an update; raw is its body without update_id. It returns
// the update's id.
func (f *fakeAPI) push(raw map[string]any) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextUpd++
	raw["update_id"] = f.nextUpd
	f.updates = append(f.updates, fakeUpdate{id: f.nextUpd, raw: raw})
	f.wake()
	return f.nextUpd
}

// message pushes a message from user in chat (a private chat if chat is
// the user's id, else a supergroup); extra fields are merged in. It
// returns the message's id.
func (f *fakeAPI) message(chat int64, user map[string]any, text string, extra map[string]any) int {
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
	f.push(map[string]any{"message": m})
	return id
}

// addFile makes a file getFile and the download know.
func (f *fakeAPI) addFile(id string, data []byte) {
	f.set(func(f *fakeAPI) { f.files[id] = fakeFile{path: "docs/" + id + ".bin", data: data} })
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
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
func (f *fakeAPI) record(method string, status int) {
	f.calls = append(f.calls, apiCall{Method: method, At: time.Now(), Status: status})
	f.wake()
}

func (f *fakeAPI) ok(w http.ResponseWriter, method string, result any) {
	f.mu.Lock()
	f.record(method, 200)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func (f *fakeAPI) fail(w http.ResponseWriter, method string, code int, desc string, retry int) {
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
func (f *fakeAPI) getUpdates(w http.ResponseWriter, r *http.Request) {
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

func (f *fakeAPI) sendMessage(w http.ResponseWriter, r *http.Request) {
	m := &sentMessage{Chat: r.FormValue("chat_id"), Text: r.FormValue("text"), ParseMode: r.FormValue("parse_mode")}
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
			InlineKeyboard [][]fakeButton `json:"inline_keyboard"`
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

func (f *fakeAPI) editMessageText(w http.ResponseWriter, r *http.Request) {
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

func (f *fakeAPI) getFile(w http.ResponseWriter, r *http.Request) {
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

func (f *fakeAPI) download(w http.ResponseWriter, path string) {
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

// count is how many calls of method answered status (0: any status).
func (f *fakeAPI) count(method string, status int) int {
	n := 0
	for _, c := range f.calls {
		if c.Method == method && (status == 0 || c.Status == status) {
			n++
		}
	}
	return n
}

// replyTo finds the bot's message answering message id; f.mu held.
func (f *fakeAPI) replyTo(id int) *sentMessage {
	for _, m := range f.sent {
		if m.ReplyTo == id {
			return m
		}
	}
	return nil
}

// String is for failure messages; f.mu held.
func (m *sentMessage) String() string {
	return fmt.Sprintf("{%s:%d reply to %d %q %s buttons %v edits %d}", m.Chat, m.ID, m.ReplyTo, m.Text, m.ParseMode, m.Buttons, m.Edits)
}
