//go:build goolm

package matrix

import (
	"context"
	"errors"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
)

// syncFilter keeps a sync to what the door reads; a long timeline limit
// makes a gap (more new events in a room than the limit while the door
// was down) rare.
const syncFilter = `{"room":{"timeline":{"limit":100},"state":{"lazy_load_members":false}},"presence":{"not_types":["*"]}}`

// item is one thing of a sync batch for the Door, in order.
type item struct {
	invite  id.RoomID // join if inviter is allowed
	inviter id.UserID
	msg     *chat.Message
	action  *chat.Action
}

// Run syncs from in.Cursor() until ctx ends. The first sync of a door
// without a cursor answers nothing (it is history) but accepts invites.
// After each batch is handed to in, its next_batch is the new cursor.
func (c *Connector) Run(ctx context.Context, in chat.Inbox) error {
	bo := c.newBackoff()
	for {
		err := c.setup(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		c.log.Warn("matrix: set up failed", "err", err)
		in.Report(err)
		if !c.pause(ctx, err, &bo) {
			return nil
		}
	}
	in.Report(nil)
	c.syncLoop(ctx, in)
	return nil
}

func (c *Connector) syncLoop(ctx context.Context, in chat.Inbox) {
	since := in.Cursor()
	bo := c.newBackoff()
	var pend pending
	for ctx.Err() == nil {
		timeout := c.opts.PollTimeout
		if since == "" {
			timeout = 0
		}
		resp, err := c.cli.FullSyncRequest(ctx, mautrix.ReqSync{Timeout: int(timeout.Milliseconds()), Since: since, FilterID: syncFilter})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			err = mapErr(err)
			c.log.Warn("matrix: sync failed", "err", err)
			in.Report(err)
			if errors.Is(err, chat.ErrUnauthorized) && c.relogin(ctx) {
				continue
			}
			c.pause(ctx, err, &bo)
			continue
		}
		bo.Reset()
		in.Report(nil)
		c.prepare(ctx, resp, since)
		items := c.collect(ctx, resp, &pend, since == "")
		if !c.hand(ctx, in, items) || !c.advance(ctx, in, resp.NextBatch) {
			return
		}
		since = resp.NextBatch
	}
}

// hand gives the items to in in order; a message in cannot take is
// handed again after a pause (the items before it are not). False if
// ctx ended first.
func (c *Connector) hand(ctx context.Context, in chat.Inbox, items []item) bool {
	bo := c.newBackoff()
	for i := 0; i < len(items); {
		it := items[i]
		switch {
		case it.invite != "":
			c.invited(ctx, in, it.invite, it.inviter)
		case it.action != nil:
			in.Action(ctx, *it.action)
		case it.msg != nil:
			if err := in.Message(ctx, *it.msg); err != nil {
				if ctx.Err() != nil {
					return false
				}
				c.log.Warn("matrix: the door could not take a message; trying again", "event", it.msg.ID, "err", err)
				if !c.pause(ctx, err, &bo) {
					return false
				}
				continue
			}
		}
		i++
	}
	return ctx.Err() == nil
}

// advance stores the new cursor, retrying while the Door cannot.
func (c *Connector) advance(ctx context.Context, in chat.Inbox, cursor string) bool {
	bo := c.newBackoff()
	for {
		err := in.Advance(cursor)
		if err == nil {
			return true
		}
		c.log.Warn("matrix: could not store the sync token", "err", err)
		if !c.pause(ctx, err, &bo) {
			return false
		}
	}
}

// invited joins room if inviter may talk; anyone else's invite is left
// as it is (logged).
func (c *Connector) invited(ctx context.Context, in chat.Inbox, room id.RoomID, inviter id.UserID) {
	if !in.Allowed(inviter.String()) {
		c.log.Info("matrix: an invite from an account not allowed is not accepted", "room", room, "inviter", inviter)
		return
	}
	bo := c.newBackoff()
	for try := 0; try < 5; try++ {
		_, err := c.cli.JoinRoomByID(ctx, room)
		if err == nil {
			c.log.Info("matrix: joined", "room", room, "inviter", inviter)
			return
		}
		err = mapErr(err)
		c.log.Warn("matrix: join failed", "room", room, "err", err)
		if !c.pause(ctx, err, &bo) {
			return
		}
	}
}

// prepare feeds the batch's keys and device lists to the crypto machine
// and its state events to the state store (membership for Direct and for
// whom to encrypt to; encryption of rooms).
func (c *Connector) prepare(ctx context.Context, resp *mautrix.RespSync, since string) {
	ctx = c.zlog.WithContext(ctx)
	if c.helper != nil {
		// The keys of a batch are stored whole, even while Run stops.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		c.helper.mach.ProcessSyncResponse(cctx, resp, since)
		cancel()
	}
	for room, r := range resp.Rooms.Join {
		evs := append(append([]*event.Event{}, r.State.Events...), r.Timeline.Events...)
		if r.StateAfter != nil {
			evs = append(evs, r.StateAfter.Events...)
		}
		for _, evt := range evs {
			if evt.StateKey == nil {
				continue
			}
			evt.RoomID = room
			evt.Type.Class = event.StateEventType
			if evt.Content.ParseRaw(evt.Type) != nil {
				continue
			}
			mautrix.UpdateStateStore(ctx, c.cli.StateStore, evt)
			if c.helper != nil && evt.Type == event.StateMember {
				c.helper.mach.HandleMemberEvent(ctx, evt)
			}
		}
	}
}

// collect lists the batch's invites and, unless history is set (the
// first sync: answer nothing old), its messages and reactions. Encrypted
// events whose keys have not come yet wait in pend for later batches.
func (c *Connector) collect(ctx context.Context, resp *mautrix.RespSync, pend *pending, history bool) []item {
	var items []item
	for room, r := range resp.Rooms.Invite {
		for _, evt := range r.State.Events {
			if evt.Type == event.StateMember && evt.GetStateKey() == c.cli.UserID.String() {
				items = append(items, item{invite: room, inviter: evt.Sender})
				break
			}
		}
	}
	items = append(items, c.retryPending(ctx, pend)...)
	if history {
		return items
	}
	for room, r := range resp.Rooms.Join {
		for _, evt := range r.Timeline.Events {
			evt.RoomID = room
			if it, ok := c.toItem(ctx, evt, pend); ok {
				items = append(items, it)
			}
		}
	}
	return items
}

// pending are encrypted events that came before their keys.
type pending []pendingEvent

type pendingEvent struct {
	evt   *event.Event
	since time.Time
}

// keysWait is how long an event waits for its keys before it is dropped.
const keysWait = 2 * time.Minute

// retryPending decrypts what it now can; what waited too long is
// dropped with a warning.
func (c *Connector) retryPending(ctx context.Context, pend *pending) []item {
	var items []item
	var still pending
	for _, p := range *pend {
		if it, ok, wait := c.decrypted(ctx, p.evt); ok {
			items = append(items, it)
		} else if wait && time.Since(p.since) < keysWait {
			still = append(still, p)
		} else if wait {
			c.log.Warn("matrix: the keys of an encrypted message never came; it is not answered", "event", p.evt.ID, "room", p.evt.RoomID)
		}
	}
	*pend = still
	return items
}
