//go:build goolm

package testdendrite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	mevent "maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/sqlstatestore"
	_ "modernc.org/sqlite" // pure Go: no cgo
)

// User is a person's own Matrix client on a Server: a device of its own
// with end-to-end encryption (its Olm account, sessions and room state in
// a SQLite database in t.TempDir()), syncing in the background until
// t's cleanup and keeping every message event it sees, decrypted. It
// needs the goolm build tag, as mautrix's crypto does.
//
//	ann := testdendrite.NewUser(t, s, "ann", "ann-password")
//	room := ann.Room(bot, true)          // an encrypted DM the bot joined
//	msg := ann.Say(room, "hello")
//	r := ann.WaitReply(bot, msg, "hi")   // r.Last == "hi"
//
// Its methods may be called from any goroutine; those that fail the test
// call t.Fatal, so call them from the test goroutine.
type User struct {
	t     testing.TB
	cli   *mautrix.Client
	db    *sql.DB
	state *sqlstatestore.SQLStateStore
	mach  *crypto.OlmMachine

	mu   sync.Mutex
	evts []*mevent.Event
	// typing are the users seen typing (m.typing), ever.
	typing map[id.UserID]bool
}

// Reply is what a User sees of one answer to a message: the first body
// posted, its event id, its current text (after the last m.replace edit)
// and how many edits it had.
type Reply struct {
	ID          id.EventID
	First, Last string
	Edits       int
	// Encrypted: the post and all its edits came encrypted.
	Encrypted bool
}

// NewUser logs the account name (made by CreateAccount) in with
// password as a new device, uploads its keys and starts syncing.
func NewUser(t testing.TB, s *Server, name, password string) *User {
	t.Helper()
	ctx := context.Background()
	cli, err := mautrix.NewClient(s.URL, id.NewUserID(name, s.ServerName), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = cli.Login(ctx, &mautrix.ReqLogin{Type: mautrix.AuthTypePassword,
		Identifier: mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: name},
		Password:   password, InitialDeviceDisplayName: name + "-test", StoreCredentials: true})
	if err != nil {
		t.Fatalf("log %s in: %v", name, err)
	}
	u := &User{t: t, cli: cli}
	if err := u.openCrypto(ctx, filepath.Join(t.TempDir(), "crypto.db")); err != nil {
		t.Fatalf("%s's crypto: %v", name, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); u.sync(sctx) }()
	t.Cleanup(func() { cancel(); <-done; u.db.Close() })
	return u
}

// userLog is mautrix's log: errors only unless MATRIX_TEST_LOG is set.
func userLog() zerolog.Logger {
	lvl := zerolog.ErrorLevel
	if os.Getenv("MATRIX_TEST_LOG") != "" {
		lvl = zerolog.DebugLevel
	}
	return zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(lvl).With().Timestamp().Logger()
}

// openCrypto opens the state and crypto stores at path, loads a new Olm
// account and uploads the device's keys.
func (u *User) openCrypto(ctx context.Context, path string) error {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?"+q.Encode())
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	u.db = db
	wrapped, err := dbutil.NewWithDB(db, "sqlite")
	if err != nil {
		db.Close()
		return err
	}
	log := userLog()
	u.cli.Log = log
	u.state = sqlstatestore.NewSQLStateStore(wrapped, dbutil.ZeroLogger(log), false)
	pickle := make([]byte, 32)
	rand.Read(pickle)
	store := crypto.NewSQLCryptoStore(wrapped, dbutil.ZeroLogger(log), u.cli.UserID.String(), u.cli.DeviceID, pickle)
	if err := u.state.Upgrade(ctx); err != nil {
		db.Close()
		return err
	}
	if err := store.DB.Upgrade(ctx); err != nil {
		db.Close()
		return err
	}
	u.cli.StateStore = u.state
	u.mach = crypto.NewOlmMachine(u.cli, &log, store, u.state)
	if err := u.mach.Load(ctx); err != nil {
		db.Close()
		return err
	}
	if err := u.mach.ShareKeys(ctx, -1); err != nil {
		db.Close()
		return err
	}
	u.cli.Crypto = &userCrypto{u: u}
	return nil
}

// userCrypto is the User's mautrix.CryptoHelper: it encrypts for the
// room's joined and invited members, sharing a new group session when
// needed, and decrypts Megolm events.
type userCrypto struct {
	u  *User
	mu sync.Mutex // one Encrypt at a time
}

func (h *userCrypto) Init(context.Context) error { return nil }

func (h *userCrypto) Encrypt(ctx context.Context, room id.RoomID, typ mevent.Type, content any) (*mevent.EncryptedEventContent, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	mach := h.u.mach
	enc, err := mach.EncryptMegolmEvent(ctx, room, typ, content)
	if err == nil {
		return enc, nil
	}
	if !errors.Is(err, crypto.ErrSessionExpired) && !errors.Is(err, crypto.ErrNoGroupSession) && !errors.Is(err, crypto.ErrSessionNotShared) {
		return nil, err
	}
	members, err := h.u.state.GetRoomJoinedOrInvitedMembers(ctx, room)
	if err != nil {
		return nil, err
	}
	if err := mach.ShareGroupSession(ctx, room, members); err != nil {
		return nil, err
	}
	return mach.EncryptMegolmEvent(ctx, room, typ, content)
}

func (h *userCrypto) Decrypt(ctx context.Context, evt *mevent.Event) (*mevent.Event, error) {
	return h.u.mach.DecryptMegolmEvent(ctx, evt)
}

func (h *userCrypto) WaitForSession(ctx context.Context, room id.RoomID, key id.SenderKey, session id.SessionID, timeout time.Duration) bool {
	return h.u.mach.WaitForSession(ctx, room, key, session, timeout)
}

func (h *userCrypto) RequestSession(ctx context.Context, room id.RoomID, key id.SenderKey, session id.SessionID, user id.UserID, device id.DeviceID) {
	if device == "" {
		device = "*"
	}
	h.u.mach.SendRoomKeyRequest(ctx, room, key, session, "", map[id.UserID][]id.DeviceID{user: {device}})
}

// ID is the user's Matrix id, @name:localhost.
func (u *User) ID() id.UserID { return u.cli.UserID }

// Client is the user's mautrix client (logged in, with crypto) for what
// the methods here do not do: reactions, uploads, other rooms.
func (u *User) Client() *mautrix.Client { return u.cli }

// sync syncs until ctx ends: the batch's keys and state go to the crypto
// machine and the state store, its message events and typing to u.
func (u *User) sync(ctx context.Context) {
	since := ""
	for ctx.Err() == nil {
		resp, err := u.cli.FullSyncRequest(ctx, mautrix.ReqSync{Timeout: 5000, Since: since})
		if err != nil {
			if ctx.Err() == nil {
				u.t.Logf("%s: sync: %v", u.ID(), err)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		u.prepare(ctx, resp, since)
		for room, r := range resp.Rooms.Join {
			for _, evt := range r.Timeline.Events {
				evt.RoomID = room
				u.keep(ctx, evt)
			}
			u.sawTyping(r.Ephemeral.Events)
		}
		since = resp.NextBatch
	}
}

// prepare feeds the batch's keys and device lists to the crypto machine
// and the state events of joined rooms to the state store.
func (u *User) prepare(ctx context.Context, resp *mautrix.RespSync, since string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	u.mach.ProcessSyncResponse(cctx, resp, since)
	cancel()
	for room, r := range resp.Rooms.Join {
		evs := append(append([]*mevent.Event{}, r.State.Events...), r.Timeline.Events...)
		if r.StateAfter != nil {
			evs = append(evs, r.StateAfter.Events...)
		}
		for _, evt := range evs {
			if evt.StateKey == nil {
				continue
			}
			evt.RoomID = room
			evt.Type.Class = mevent.StateEventType
			if evt.Content.ParseRaw(evt.Type) != nil {
				continue
			}
			mautrix.UpdateStateStore(ctx, u.state, evt)
			if evt.Type == mevent.StateMember {
				u.mach.HandleMemberEvent(ctx, evt)
			}
		}
	}
}

// keep stores a timeline event that is not state, decrypted; one that
// cannot be decrypted fails the test (unless u is being stopped).
func (u *User) keep(ctx context.Context, evt *mevent.Event) {
	if evt.StateKey != nil {
		return
	}
	evt.Type.Class = mevent.MessageEventType
	if evt.Content.ParseRaw(evt.Type) != nil {
		return
	}
	if evt.Type == mevent.EventEncrypted {
		enc := evt.Content.AsEncrypted()
		u.mach.WaitForSession(ctx, evt.RoomID, enc.SenderKey, enc.SessionID, 5*time.Second)
		// Decrypting writes the session's ratchet: not cut short by the
		// end of the test; what fails then is not the test's failure.
		dec, err := u.mach.DecryptMegolmEvent(context.WithoutCancel(ctx), evt)
		if err != nil {
			if ctx.Err() == nil {
				u.t.Errorf("%s could not decrypt %s: %v", u.ID(), evt.ID, err)
			}
			return
		}
		evt = dec
	}
	u.mu.Lock()
	u.evts = append(u.evts, evt)
	u.mu.Unlock()
}

// sawTyping records the typing users of m.typing events.
func (u *User) sawTyping(evts []*mevent.Event) {
	for _, evt := range evts {
		evt.Type.Class = mevent.EphemeralEventType
		if evt.Type != mevent.EphemeralEventTyping || evt.Content.ParseRaw(evt.Type) != nil {
			continue
		}
		u.mu.Lock()
		for _, who := range evt.Content.AsTyping().UserIDs {
			if u.typing == nil {
				u.typing = map[id.UserID]bool{}
			}
			u.typing[who] = true
		}
		u.mu.Unlock()
	}
}

// SawTyping says whether u has ever seen who typing.
func (u *User) SawTyping(who id.UserID) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.typing[who]
}

// Events are the message events (not state) u has seen so far, in
// order, decrypted.
func (u *User) Events() []*mevent.Event {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*mevent.Event(nil), u.evts...)
}

// CreateRoom creates a direct chat with bot invited, encrypted if
// encrypted, and returns at once.
func (u *User) CreateRoom(bot id.UserID, encrypted bool) id.RoomID {
	u.t.Helper()
	req := &mautrix.ReqCreateRoom{Preset: "trusted_private_chat", IsDirect: true, Invite: []id.UserID{bot}}
	if encrypted {
		req.InitialState = []*mevent.Event{{Type: mevent.StateEncryption, StateKey: new(string),
			Content: mevent.Content{Parsed: &mevent.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}}}}
	}
	resp, err := u.cli.CreateRoom(context.Background(), req)
	if err != nil {
		u.t.Fatal(err)
	}
	return resp.RoomID
}

// Room is CreateRoom, then WaitJoined for bot.
func (u *User) Room(bot id.UserID, encrypted bool) id.RoomID {
	u.t.Helper()
	room := u.CreateRoom(bot, encrypted)
	u.WaitJoined(room, bot)
	return room
}

// WaitJoined waits (up to 15 s) until the server says who joined room.
// (u's state store may not say so: mautrix's CreateRoom marks the
// invited as invited when it returns, which can be after u's sync saw
// them join; that stale mark is mended here, so messages are encrypted
// for them.)
func (u *User) WaitJoined(room id.RoomID, who id.UserID) {
	u.t.Helper()
	eventually(u.t, who.String()+" to join "+room.String(), func() bool {
		resp, err := u.cli.JoinedMembers(context.Background(), room)
		if err != nil {
			return false
		}
		_, ok := resp.Joined[who]
		return ok
	})
	if err := u.state.SetMembership(context.Background(), room, who, mevent.MembershipJoin); err != nil {
		u.t.Fatal(err)
	}
}

// Say sends text to room (encrypted if the room is); its event id.
func (u *User) Say(room id.RoomID, text string) id.EventID {
	u.t.Helper()
	return u.Send(room, mevent.EventMessage, &mevent.MessageEventContent{MsgType: mevent.MsgText, Body: text})
}

// Send sends an event of typ with content to room (encrypted if the
// room is); its event id.
func (u *User) Send(room id.RoomID, typ mevent.Type, content any) id.EventID {
	u.t.Helper()
	resp, err := u.cli.SendMessageEvent(context.Background(), room, typ, content)
	if err != nil {
		u.t.Fatal(err)
	}
	return resp.EventID
}

// ReplyTo is from's first message answering msg (m.in_reply_to) with
// its edits so far; false if none yet.
func (u *User) ReplyTo(from id.UserID, msg id.EventID) (r Reply, ok bool) {
	for _, e := range u.Events() {
		if e.Sender != from || e.Type != mevent.EventMessage {
			continue
		}
		m := e.Content.AsMessage()
		switch {
		case r.ID == "" && m.RelatesTo.GetReplyTo() == msg && m.NewContent == nil:
			r = Reply{ID: e.ID, First: m.Body, Last: m.Body, Encrypted: e.Mautrix.WasEncrypted}
			ok = true
		case ok && m.RelatesTo != nil && m.RelatesTo.Type == mevent.RelReplace && m.RelatesTo.EventID == r.ID && m.NewContent != nil:
			r.Last = m.NewContent.Body
			r.Edits++
			r.Encrypted = r.Encrypted && e.Mautrix.WasEncrypted
		}
	}
	return r, ok
}

// RepliesTo counts from's messages (not edits) answering msg.
func (u *User) RepliesTo(from id.UserID, msg id.EventID) int {
	n := 0
	for _, e := range u.Events() {
		m := e.Content.AsMessage()
		if e.Sender == from && e.Type == mevent.EventMessage && m.NewContent == nil && m.RelatesTo.GetReplyTo() == msg {
			n++
		}
	}
	return n
}

// WaitReply waits (up to 15 s) until bot's reply to msg reads want
// (Reply.Last) and returns it.
func (u *User) WaitReply(bot id.UserID, msg id.EventID, want string) Reply {
	u.t.Helper()
	var r Reply
	eventually(u.t, "the reply "+want, func() bool {
		var ok bool
		r, ok = u.ReplyTo(bot, msg)
		return ok && r.Last == want
	})
	return r
}

// eventually polls cond every 10 ms for up to 15 s; the test fails if
// it never holds.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
