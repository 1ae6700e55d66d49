//go:build goolm

package matrix

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"
)

// session is DataDir/matrix/session.json: the login a restart reuses, so
// the bot stays one device with one set of keys.
type session struct {
	Homeserver  string      `json:"homeserver"`
	UserID      id.UserID   `json:"user_id"`
	AccessToken string      `json:"access_token"`
	DeviceID    id.DeviceID `json:"device_id"`
	// PickleKey encrypts the keys in crypto.db.
	PickleKey []byte `json:"pickle_key"`
}

func (c *Connector) sessionPath() string { return filepath.Join(c.dir, "session.json") }

func (c *Connector) loadSession() (session, bool) {
	var s session
	b, err := os.ReadFile(c.sessionPath())
	if err != nil || json.Unmarshal(b, &s) != nil {
		return session{}, false
	}
	if s.UserID != id.UserID(c.opts.UserID) || s.Homeserver != c.opts.Homeserver || s.DeviceID == "" {
		return session{}, false
	}
	return s, true
}

func (c *Connector) saveSession(s session) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := c.sessionPath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("matrix: write session: %w", err)
	}
	if err := os.Rename(tmp, c.sessionPath()); err != nil {
		return fmt.Errorf("matrix: write session: %w", err)
	}
	return nil
}

// login finds the access token and device: AccessToken as given (whoami
// names its device), else the stored session, else a password login.
// The device kept in session.json is the one crypto.db belongs to: a
// login as another device starts crypto.db afresh.
func (c *Connector) login(ctx context.Context) (session, error) {
	old, haveOld := c.loadSession()
	s := session{Homeserver: c.opts.Homeserver, UserID: id.UserID(c.opts.UserID), PickleKey: old.PickleKey}
	switch {
	case c.opts.AccessToken != "":
		c.cli.AccessToken = c.opts.AccessToken
		who, err := c.cli.Whoami(ctx)
		if err != nil {
			return session{}, fmt.Errorf("matrix: whoami: %w", mapErr(err))
		}
		if who.UserID != s.UserID {
			return session{}, fmt.Errorf("matrix: the access token is %s's, not %s's", who.UserID, s.UserID)
		}
		s.AccessToken, s.DeviceID = c.opts.AccessToken, who.DeviceID
	case haveOld:
		s.AccessToken, s.DeviceID = old.AccessToken, old.DeviceID
	case c.opts.Password != "":
		if err := c.passwordLogin(ctx, &s, ""); err != nil {
			return session{}, err
		}
	default:
		return session{}, errors.New("matrix: no password or access token, and no stored session")
	}
	if !haveOld || old.DeviceID != s.DeviceID || len(s.PickleKey) == 0 {
		s.PickleKey = make([]byte, 32)
		rand.Read(s.PickleKey)
		if err := os.Remove(filepath.Join(c.dir, "crypto.db")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return session{}, fmt.Errorf("matrix: start the crypto store afresh: %w", err)
		}
	}
	c.cli.AccessToken, c.cli.DeviceID = s.AccessToken, s.DeviceID
	return s, c.saveSession(s)
}

// passwordLogin logs in with the password, as device (the stored one
// after a revoked token, so its keys stay valid) or a new device.
func (c *Connector) passwordLogin(ctx context.Context, s *session, device id.DeviceID) error {
	name := c.opts.DeviceName
	if name == "" {
		name = "frontdesk"
	}
	resp, err := c.cli.Login(ctx, &mautrix.ReqLogin{
		Type:                     mautrix.AuthTypePassword,
		Identifier:               mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: c.opts.UserID},
		Password:                 c.opts.Password,
		DeviceID:                 device,
		InitialDeviceDisplayName: name,
	})
	if err != nil {
		return fmt.Errorf("matrix: login: %w", mapErr(err))
	}
	s.AccessToken, s.DeviceID = resp.AccessToken, resp.DeviceID
	return nil
}

// relogin replaces a refused token by a password login as the same
// device, when there is a password; true if it did.
func (c *Connector) relogin(ctx context.Context) bool {
	if c.opts.Password == "" || c.opts.AccessToken != "" {
		return false
	}
	s, ok := c.loadSession()
	if !ok {
		return false
	}
	if err := c.passwordLogin(ctx, &s, s.DeviceID); err != nil {
		c.log.Warn("matrix: login again failed", "err", err)
		return false
	}
	c.cli.AccessToken = s.AccessToken
	if err := c.saveSession(s); err != nil {
		c.log.Warn("matrix: could not store the new session", "err", err)
	}
	if c.helper != nil {
		if err := c.helper.ensureKeys(ctx); err != nil {
			c.log.Warn("matrix: device keys after logging in again", "err", err)
		}
	}
	c.log.Info("matrix: logged in again as the same device", "device", s.DeviceID)
	return true
}
