//go:build goolm

package matrix

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/sqlstatestore"
	_ "modernc.org/sqlite" // the pure-Go SQLite frontdesk already has: no cgo
)

// stores are the SQLite databases of one client: crypto.db holds the
// Olm account, the sessions and the room state the crypto needs.
type stores struct {
	db     *sql.DB
	state  *sqlstatestore.SQLStateStore
	crypto *crypto.SQLCryptoStore
}

// openStores opens path (created if missing) for user's device.
func openStores(ctx context.Context, path string, user id.UserID, device id.DeviceID, pickleKey []byte, log zerolog.Logger) (*stores, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("matrix: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1) // one writer; mautrix's transactions then never fight
	wrapped, err := dbutil.NewWithDB(db, "sqlite")
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &stores{db: db,
		state:  sqlstatestore.NewSQLStateStore(wrapped, dbutil.ZeroLogger(log), false),
		crypto: crypto.NewSQLCryptoStore(wrapped, dbutil.ZeroLogger(log), user.String(), device, pickleKey)}
	if err := s.state.Upgrade(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("matrix: upgrade the state store: %w", err)
	}
	if err := s.crypto.DB.Upgrade(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("matrix: upgrade the crypto store: %w", err)
	}
	return s, nil
}

// cryptoHelper is the client's mautrix.CryptoHelper on an OlmMachine:
// it encrypts for the room's members (sharing a new group session when
// the old one is missing or expired) and decrypts Megolm events. The
// sync loop feeds the machine (processSync), not a Syncer.
type cryptoHelper struct {
	cli  *mautrix.Client
	mach *crypto.OlmMachine
	mu   sync.Mutex // one Encrypt at a time: a shared session is shared once
}

var _ mautrix.CryptoHelper = (*cryptoHelper)(nil)

// newCryptoHelper makes the machine of cli on st; Init loads it.
func newCryptoHelper(cli *mautrix.Client, st *stores, log *zerolog.Logger) *cryptoHelper {
	mach := crypto.NewOlmMachine(cli, log, st.crypto, st.state)
	return &cryptoHelper{cli: cli, mach: mach}
}

// Init loads (or creates) the Olm account and makes sure the server has
// this device's keys.
func (h *cryptoHelper) Init(ctx context.Context) error {
	if err := h.mach.Load(ctx); err != nil {
		return fmt.Errorf("matrix: load the olm account: %w", err)
	}
	return h.ensureKeys(ctx)
}

// ensureKeys uploads the device's keys when the server has none for it
// (a new device, or one deleted by a logout and logged in again under
// the same id): the same identity keys ever after, so the others' Olm
// sessions with it stay good.
func (h *cryptoHelper) ensureKeys(ctx context.Context) error {
	resp, err := h.cli.QueryKeys(ctx, &mautrix.ReqQueryKeys{
		DeviceKeys: map[id.UserID]mautrix.DeviceIDList{h.cli.UserID: {h.cli.DeviceID}}})
	if err != nil {
		return fmt.Errorf("matrix: query own device keys: %w", mapErr(err))
	}
	dev, ok := resp.DeviceKeys[h.cli.UserID][h.cli.DeviceID]
	if !ok || len(dev.Keys) == 0 {
		h.mach.GetAccount().Shared = false
		if err := h.mach.ShareKeys(ctx, -1); err != nil {
			return fmt.Errorf("matrix: upload device keys: %w", mapErr(err))
		}
		return nil
	}
	if !h.mach.GetAccount().Shared {
		return errors.New("matrix: the server has keys for this device that crypto.db does not; remove data_dir/matrix to start as a new device")
	}
	if dev.Keys.GetEd25519(h.cli.DeviceID) != h.mach.OwnIdentity().SigningKey {
		return errors.New("matrix: the server's signing key of this device differs from crypto.db's")
	}
	return nil
}

// Encrypt encrypts content for the room; a missing, expired or unshared
// group session is shared with the joined and invited members first.
func (h *cryptoHelper) Encrypt(ctx context.Context, room id.RoomID, typ event.Type, content any) (*event.EncryptedEventContent, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	enc, err := h.mach.EncryptMegolmEvent(ctx, room, typ, content)
	if err == nil {
		return enc, nil
	}
	if !errors.Is(err, crypto.ErrSessionExpired) && !errors.Is(err, crypto.ErrNoGroupSession) && !errors.Is(err, crypto.ErrSessionNotShared) {
		return nil, err
	}
	members, err := h.cli.StateStore.GetRoomJoinedOrInvitedMembers(ctx, room)
	if err != nil {
		return nil, fmt.Errorf("room members: %w", err)
	}
	if err := h.mach.ShareGroupSession(ctx, room, members); err != nil {
		return nil, fmt.Errorf("share the group session: %w", err)
	}
	return h.mach.EncryptMegolmEvent(ctx, room, typ, content)
}

// Decrypt decrypts a Megolm event.
func (h *cryptoHelper) Decrypt(ctx context.Context, evt *event.Event) (*event.Event, error) {
	return h.mach.DecryptMegolmEvent(ctx, evt)
}

// WaitForSession waits up to timeout for the session's keys to arrive.
func (h *cryptoHelper) WaitForSession(ctx context.Context, room id.RoomID, key id.SenderKey, session id.SessionID, timeout time.Duration) bool {
	return h.mach.WaitForSession(ctx, room, key, session, timeout)
}

// RequestSession asks the sender's device (all of them if device is
// "") and the bot's own devices for a session's keys.
func (h *cryptoHelper) RequestSession(ctx context.Context, room id.RoomID, key id.SenderKey, session id.SessionID, user id.UserID, device id.DeviceID) {
	if device == "" {
		device = "*"
	}
	err := h.mach.SendRoomKeyRequest(ctx, room, key, session, "", map[id.UserID][]id.DeviceID{
		user: {device}, h.cli.UserID: {"*"}})
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("room key request failed")
	}
}
