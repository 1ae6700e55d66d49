package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeslack"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/faketelegram"
)

// TestChatDoorKill9 is the chat doors' exactly-once promise with the real
// binary and SIGKILL, for Telegram (a fake Bot API: the update offset) and
// Slack (a fake Socket Mode: envelope acks, unacked ones sent again). A
// person writes; the server is killed at a random moment — around
// receiving the message, while the reply streams, or just after the
// final reply — then started again, round after round. At the end every
// message is in the chat log once, and has exactly one reply in the chat
// whose text is the final one (the turn's reply, or the interrupted
// note); a streamed start posted just before a kill may be left behind,
// never a second final reply.
func TestChatDoorKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill and restart rounds")
	}
	t.Run("telegram", func(t *testing.T) {
		t.Parallel() // its own data directory, binary and fake
		tg := faketelegram.New(t)
		ann := faketelegram.User(42, "ann")
		killRounds(t, chatKill{
			block: fmt.Sprintf(`telegram: {enabled: true, base_url: %q, allow: ["@ann"]}`, tg.URL()),
			env:   []string{"FRONTDESK_TELEGRAM_TOKEN=" + faketelegram.Token},
			style: chat.StyleHTML,
			send: func(round int) string {
				return fmt.Sprintf("telegram:42:%d", tg.Message(42, ann, fmt.Sprintf("message %d", round), nil))
			},
			replies: func(key string) []string {
				var id int
				fmt.Sscanf(key, "telegram:42:%d", &id)
				return tgReplies(tg, id)
			},
		})
	})
	t.Run("slack", func(t *testing.T) {
		t.Parallel()
		sl := fakeslack.New(t)
		killRounds(t, chatKill{
			block: fmt.Sprintf(`slack: {enabled: true, api_url: %q, allow: [U1ANN]}`, sl.URL()),
			env:   []string{"FRONTDESK_SLACK_APP_TOKEN=" + fakeslack.AppToken, "FRONTDESK_SLACK_BOT_TOKEN=" + fakeslack.BotToken},
			style: chat.StyleSlack,
			send: func(round int) string {
				ts := fmt.Sprintf("1700000000.%06d", round+1)
				sl.DM("U1ANN", fmt.Sprintf("message %d", round), ts)
				return "slack:D1:" + ts
			},
			replies: func(key string) []string {
				var out []string
				for _, m := range sl.Posts() {
					if "slack:D1:"+m.Thread == key {
						out = append(out, m.Text)
					}
				}
				return out
			},
		})
	})
}

// chatKill is one door's part in killRounds.
type chatKill struct {
	block string   // the door's config block under channels:
	env   []string // its secrets
	style chat.Style
	// send has the person write a new message and returns its
	// client_msg_id; replies are the texts, as they read now, of every
	// message the bot posted in answer to it.
	send    func(round int) string
	replies func(key string) []string
}

// killRounds runs the rounds of TestChatDoorKill9 for one door.
func killRounds(t *testing.T, k chatKill) {
	const rounds = 9
	dir := t.TempDir()
	cfg := filepath.Join(dir, "chat.yaml")
	// Each reply streams for ~1 s (60 words, 15 ms apart): a kill after
	// the first streamed post lands before the final one.
	os.WriteFile(cfg, []byte("agent: {demo: {delay_ms: 15}}\nchannels:\n  "+k.block+"\n"), 0o600)
	args := []string{"-addr", "127.0.0.1:0", "-data", "state", "-config", cfg}
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	var keys []string
	var evs []event.Event
	var finals map[string]string
	finalReplies := func(key string) int { return countFinal(k.replies(key), finals[key]) }
	// answered waits until every message so far has its final reply (the
	// next one would find the assistant busy otherwise).
	answered := func() {
		waitFor(t, 30*time.Second, func() bool {
			evs = readChatLog(t, filepath.Join(dir, "state"))
			finals = chatFinals(evs, k.style)
			for _, key := range keys {
				if finalReplies(key) == 0 {
					return false
				}
			}
			return true
		}, "every message answered in full")
	}
	for round := range rounds {
		p := startBinary(t, dir, k.env, args...)
		answered()
		key := k.send(round)
		keys = append(keys, key)
		switch round % 3 {
		case 0: // around receipt: before or after the input is recorded
			time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
		case 1: // while the reply streams
			waitFor(t, 15*time.Second, func() bool { return len(k.replies(key)) > 0 }, "the first streamed words")
			time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		case 2: // just after the final reply, before or after it is marked delivered
			answered()
			time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
		}
		p.cmd.Process.Kill()
		<-p.exited
		p.exited <- nil
	}
	p := startBinary(t, dir, k.env, args...)
	answered()
	p.stop(t, syscall.SIGTERM)
	users := map[string]int{}
	for _, e := range evs {
		var u event.UserData
		if e.Type == event.User && e.Decode(&u) == nil {
			users[u.ClientMsgID]++
		}
	}
	left, cut := 0, 0
	for _, key := range keys {
		if users[key] != 1 {
			t.Errorf("%s: %d user events, want 1", key, users[key])
		}
		if n := finalReplies(key); n != 1 {
			t.Errorf("%s: %d replies with the final text %q, want 1", key, n, finals[key])
		}
		left += len(k.replies(key)) - finalReplies(key)
		if strings.Contains(finals[key], "interrupted") {
			cut++
		}
	}
	t.Logf("%d rounds: %d messages, each once in the log with one final reply (%d cut by a kill: interrupted); %d streamed starts left behind",
		rounds, len(keys), cut, left)
}

// chatFinals is the text each chat message's reply must end as, by
// client_msg_id: the turn's reply, or the note of an interrupted turn,
// rendered in style as the door renders it.
func chatFinals(evs []event.Event, style chat.Style) map[string]string {
	byTurn := map[string]string{}
	out := map[string]string{}
	for _, e := range evs {
		switch e.Type {
		case event.User:
			var u event.UserData
			e.Decode(&u)
			byTurn[e.Turn] = u.ClientMsgID
		case event.Assistant:
			var a event.AssistantData
			e.Decode(&a)
			if !a.Partial {
				out[byTurn[e.Turn]] = chat.Render(a.Content, style)
			}
		case event.TurnEnd:
			var d event.TurnEndData
			e.Decode(&d)
			if d.Status == event.StatusInterrupted {
				out[byTurn[e.Turn]] = chat.Render("_(interrupted: the server stopped; send it again)_", style)
			}
		}
	}
	return out
}

// countFinal counts the replies that read final.
func countFinal(replies []string, final string) int {
	n := 0
	for _, r := range replies {
		if final != "" && r == final {
			n++
		}
	}
	return n
}

// TestChatDoorWithoutTokenRefusesToStart: a chat door enabled with its
// token variable empty stops the server at start, naming the variable.
func TestChatDoorWithoutTokenRefusesToStart(t *testing.T) {
	for door, block := range map[string]string{
		"FRONTDESK_TELEGRAM_TOKEN":  "telegram: {enabled: true}",
		"FRONTDESK_SLACK_BOT_TOKEN": "slack: {enabled: true}",
		"FRONTDESK_MATRIX_PASSWORD": `matrix: {enabled: true, homeserver: "http://127.0.0.1:1", user_id: "@bot:localhost"}`,
	} {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "chat.yaml")
		os.WriteFile(cfg, []byte("channels:\n  "+block+"\n"), 0o600)
		var stderr bytes.Buffer
		cmd := exec.Command(binary, "-config", cfg, "-data", filepath.Join(dir, "d"), "-addr", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), "FRONTDESK_SLACK_APP_TOKEN=xapp-1", door+"=")
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil {
			t.Fatalf("%s: started with the variable empty", door)
		}
		if !strings.Contains(stderr.String(), door) {
			t.Fatalf("%s: the error does not name the variable: %s", door, stderr.String())
		}
	}
}

// TestChatDoorHealth: a chat door whose platform refuses its token turns
// /healthz to 200 "degraded" with a reason naming the door, and
// /api/session lists the door as running and unhealthy, with the error;
// the web door works on.
func TestChatDoorHealth(t *testing.T) {
	tg := faketelegram.New(t)
	tg.SetRevoked(true)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tg.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("channels:\n  telegram: {enabled: true, base_url: %q, allow: [\"@ann\"]}\n", tg.URL())), 0o600)
	p := startBinary(t, dir, []string{"FRONTDESK_TELEGRAM_TOKEN=" + faketelegram.Token},
		"-addr", "127.0.0.1:0", "-data", "state", "-config", cfg)
	var health struct {
		Status  string   `json:"status"`
		Reasons []string `json:"reasons"`
	}
	waitFor(t, 15*time.Second, func() bool {
		getJSON(t, p.url+"/healthz", &health)
		return health.Status == "degraded" && slices.ContainsFunc(health.Reasons, func(r string) bool { return strings.HasPrefix(r, "telegram: ") })
	}, "/healthz names the telegram door")
	var session struct {
		Doors []struct {
			Door    string `json:"door"`
			Running bool   `json:"running"`
			Healthy bool   `json:"healthy"`
			Error   string `json:"error"`
		} `json:"doors"`
	}
	getJSON(t, p.url+"/api/session", &session)
	if len(session.Doors) != 1 || session.Doors[0].Door != "telegram" || !session.Doors[0].Running || session.Doors[0].Healthy ||
		!strings.Contains(session.Doors[0].Error, "refused the token") {
		t.Fatalf("/api/session doors = %+v", session.Doors)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
