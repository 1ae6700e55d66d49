//go:build goolm

package matrix

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/channels/chat/chattest"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdendrite"
)

// logout revokes the door's access token (session.json's) on the
// server: Matrix deletes the device with it.
func logout(t *testing.T, w *world) {
	t.Helper()
	var s session
	b, err := os.ReadFile(filepath.Join(w.sess.Dir, "matrix", "session.json"))
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := w.srv.Do(context.Background(), http.MethodPost, "/_matrix/client/v3/logout", s.AccessToken, map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestRevokedRelogin: the door's token is revoked (logged out); with a
// password the door logs in again as the same device, uploads its keys
// again, and the encrypted conversation goes on.
func TestRevokedRelogin(t *testing.T) {
	w := newWorld(t, hub.Config{}, echo{})
	d := w.startDoor()
	ann := w.person("ann")
	room := ann.Room(w.bot, true)
	ann.WaitReply(w.bot, ann.Say(room, "one"), "echo: one")
	device := d.conn.DeviceID()
	key := botKey(t, ann, w, device)
	if key == "" {
		t.Fatal("the bot's device has no keys on the server")
	}
	logout(t, w)
	ann.WaitReply(w.bot, ann.Say(room, "two"), "echo: two")
	chattest.Eventually(t, "the bot's same keys on the server again", func() bool { return botKey(t, ann, w, device) == key })
	if got := d.conn.DeviceID(); got != device {
		t.Fatalf("device after logging in again = %q, want %q", got, device)
	}
	if us := w.sess.Users(); len(us) != 2 {
		t.Fatalf("user events = %+v, want one and two", us)
	}
}

// botKey is the ed25519 key the server has for the bot's device, as ann
// asks; "" if none.
func botKey(t *testing.T, ann *testdendrite.User, w *world, device string) string {
	resp, err := ann.Client().QueryKeys(context.Background(), &mautrix.ReqQueryKeys{
		DeviceKeys: map[id.UserID]mautrix.DeviceIDList{w.bot: {id.DeviceID(device)}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(resp.DeviceKeys[w.bot][id.DeviceID(device)].Keys.GetEd25519(id.DeviceID(device)))
}

// TestRevokedReported: with only an access token, a revoked one is
// reported in the door's health (it cannot log in again).
func TestRevokedReported(t *testing.T) {
	w := newWorld(t, hub.Config{}, echo{})
	_, token := w.srv.Login(t, "bot", "bot-password")
	conn, err := New(Options{Homeserver: w.srv.URL, UserID: w.bot.String(), AccessToken: token, Encryption: true,
		DataDir: w.sess.Dir, Logger: testLog(), PollTimeout: time.Second, MinBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d, err := chat.New(w.sess, conn, chat.Options{Door: "matrix", DataDir: w.sess.Dir, Logger: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	chattest.RunDoor(t, d)
	chattest.Eventually(t, "the first sync", func() bool { return d.Cursor() != "" })
	if h := d.Health(); h != "" {
		t.Fatalf("health before = %q, want well", h)
	}
	logout(t, w)
	chattest.Eventually(t, "the refused token reported", func() bool {
		return strings.Contains(d.Health(), chat.ErrUnauthorized.Error())
	})
}
