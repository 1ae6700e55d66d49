//go:build goolm

package matrix

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/channels/chat/chattest"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdendrite"
)

// testLog is quiet unless MATRIX_TEST_LOG is set.
func testLog() *slog.Logger {
	lvl := slog.LevelError
	if os.Getenv("MATRIX_TEST_LOG") != "" {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

// world is a real Dendrite with the accounts bot, ann and eve, and a
// session whose chat log the bot's door writes.
type world struct {
	t     testing.TB
	srv   *testdendrite.Server
	sess  *chattest.Session
	files *attachments.Store
	bot   id.UserID
	// botToken is a login of the bot's other than the door's (another
	// device), for acting as the bot before the door runs.
	botToken string
}

func newWorld(t testing.TB, cfg hub.Config, ag agent.Agent) *world {
	srv := testdendrite.Start(t)
	bot, botToken := srv.CreateAccount(t, "bot", "bot-password")
	srv.CreateAccount(t, "ann", "ann-password")
	srv.CreateAccount(t, "eve", "eve-password")
	files, err := attachments.Open(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Attachments = files
	sess := chattest.Start(t, "", cfg, ag)
	return &world{t: t, srv: srv, sess: sess, files: files, bot: id.UserID(bot), botToken: botToken}
}

// door is the bot's connector and door, running on the world's data dir.
type door struct {
	conn *Connector
	door *chat.Door
	stop func()
}

// startDoor runs the bot's door (ann allowed) on w's data directory.
func (w *world) startDoor() *door {
	t := w.t
	t.Helper()
	conn, err := New(Options{Homeserver: w.srv.URL, UserID: w.bot.String(), Password: "bot-password",
		Encryption: true, DataDir: w.sess.Dir, Logger: testLog(), PollTimeout: 5 * time.Second,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d, err := chat.New(w.sess, conn, chat.Options{Door: "matrix", DataDir: w.sess.Dir, Allow: []string{"@ann:localhost"},
		Attachments: w.files, Logger: testLog(), MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stopDoor := chattest.RunDoor(t, d)
	stop := func() { stopDoor(); conn.Close() }
	t.Cleanup(stop)
	return &door{conn: conn, door: d, stop: stop}
}

// person is name's own client (its own device and crypto store), syncing
// in the background.
func (w *world) person(name string) *testdendrite.User {
	w.t.Helper()
	return testdendrite.NewUser(w.t, w.srv, name, name+"-password")
}

// echo answers "echo: " and the message at once.
type echo struct{}

func (echo) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	return agent.Reply{Content: "echo: " + strings.TrimSpace(req.Content)}, nil
}
