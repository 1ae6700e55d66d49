package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/faketelegram"
)

// TestClusterChatDoorAcrossFailover: on a cluster the Telegram door polls
// on the lease holder only, and its position and owed replies live in the
// replicated state: the holder is killed while a reply streams, and the
// next holder finishes that reply by editing the message already posted
// (the turn was cut: the interrupted note), then answers what comes after
// — each message once in the log, one reply each, nothing answered twice
// by two pollers. Without the replicated state the cut reply is never
// finished: Telegram had confirmed that update to the killed holder.
func TestClusterChatDoorAcrossFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three cluster nodes with a chat door")
	}
	tg := faketelegram.New(t)
	extra := fmt.Sprintf("channels:\n  telegram: {enabled: true, base_url: %q, allow: [\"@ann\"]}\n", tg.URL())
	c := newTestCluster(t, clusterOpts{extra: extra, env: []string{"FRONTDESK_TELEGRAM_TOKEN=" + faketelegram.Token},
		agent: "agent: {demo: {delay_ms: 30}}\n"}) // ~2 s a reply: a kill lands while it streams
	h := c.holderWithin(60 * time.Second)
	ann := faketelegram.User(42, "ann")
	var msgs []int
	// longest is the chat log of the live node furthest on (a follower's
	// copy may lag; which node holds the lease may change meanwhile).
	longest := func() []event.Event {
		var best []event.Event
		for _, n := range c.nodes {
			if n.p != nil {
				if evs := n.chatEvents(t); len(evs) > len(best) {
					best = evs
				}
			}
		}
		return best
	}
	answered := func() {
		t.Helper()
		waitFor(t, 30*time.Second, func() bool {
			finals := chatFinals(longest(), chat.StyleHTML)
			for _, id := range msgs {
				if countFinal(tgReplies(tg, id), finals[fmt.Sprintf("telegram:42:%d", id)]) != 1 {
					return false
				}
			}
			return true
		}, "every message answered in full")
	}
	msgs = append(msgs, tg.Message(42, ann, "before the failover", nil))
	answered()
	cut := tg.Message(42, ann, "cut by the failover", nil)
	msgs = append(msgs, cut)
	// Past the documented window (the post taken by Telegram, its id not
	// yet recorded and replicated), while the reply still streams: the
	// first edit of the streamed post comes after its id was replicated.
	tg.WaitFor(t, "the first edit of the streamed words", func() bool { m, ok := tg.ReplyTo(cut); return ok && m.Edits > 0 })
	c.kill(h)
	c.holderWithin(60 * time.Second)
	answered()
	msgs = append(msgs, tg.Message(42, ann, "after the failover", nil))
	answered()

	evs := longest()
	finals := chatFinals(evs, chat.StyleHTML)
	for _, id := range msgs {
		key := fmt.Sprintf("telegram:42:%d", id)
		n := 0
		for _, e := range evs {
			var u event.UserData
			if e.Type == event.User && e.Decode(&u) == nil && u.ClientMsgID == key {
				n++
			}
		}
		if n != 1 {
			t.Errorf("message %d: %d user events in the log, want 1", id, n)
		}
		if got := countFinal(tgReplies(tg, id), finals[key]); got != 1 {
			t.Errorf("message %d: %d final replies, want 1", id, got)
		}
	}
	if len(tg.Posts()) != len(msgs) {
		t.Errorf("%d posts for %d messages: %v", len(tg.Posts()), len(msgs), tg.Posts())
	}
}

// tgReplies are the texts of the bot's posts answering message id.
func tgReplies(tg *faketelegram.Server, id int) []string {
	var out []string
	for _, s := range tg.Posts() {
		if s.ReplyTo == id {
			out = append(out, s.Text)
		}
	}
	return out
}
