//go:build goolm

package matrix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
)

// toItem makes a timeline event the Door's message or action; false for
// anything else (the bot's own events, edits, notices, state). An
// encrypted event without its keys yet goes to pend.
func (c *Connector) toItem(ctx context.Context, evt *event.Event, pend *pending) (item, bool) {
	if evt.StateKey != nil || evt.Sender == c.cli.UserID {
		return item{}, false
	}
	if evt.Type == event.EventEncrypted {
		it, ok, wait := c.decrypted(ctx, evt)
		if wait {
			*pend = append(*pend, pendingEvent{evt: evt, since: time.Now()})
		}
		return it, ok
	}
	evt.Type.Class = event.MessageEventType
	if err := evt.Content.ParseRaw(evt.Type); err != nil {
		return item{}, false
	}
	return c.plainItem(ctx, evt)
}

// decrypted decrypts evt and makes it an item; wait is true when its
// keys have not come yet (try again after the next sync).
func (c *Connector) decrypted(ctx context.Context, evt *event.Event) (it item, ok, wait bool) {
	if c.helper == nil {
		c.log.Warn("matrix: an encrypted message is skipped: encryption is off", "room", evt.RoomID, "event", evt.ID)
		return item{}, false, false
	}
	evt.Type.Class = event.MessageEventType
	if evt.Content.Parsed == nil {
		if err := evt.Content.ParseRaw(evt.Type); err != nil {
			return item{}, false, false
		}
	}
	dec, err := c.helper.Decrypt(ctx, evt)
	if errors.Is(err, crypto.ErrNoSessionFound) {
		enc := evt.Content.AsEncrypted()
		go c.helper.RequestSession(context.WithoutCancel(ctx), evt.RoomID, enc.SenderKey, enc.SessionID, evt.Sender, "")
		return item{}, false, true
	}
	if err != nil {
		c.log.Warn("matrix: could not decrypt a message", "room", evt.RoomID, "event", evt.ID, "err", err)
		return item{}, false, false
	}
	it, ok = c.plainItem(ctx, dec)
	return it, ok, false
}

// plainItem maps a (decrypted) m.room.message or m.reaction.
func (c *Connector) plainItem(ctx context.Context, evt *event.Event) (item, bool) {
	switch evt.Type {
	case event.EventReaction:
		return c.reaction(evt)
	case event.EventMessage:
	default:
		return item{}, false
	}
	m := evt.Content.AsMessage()
	if m.RelatesTo != nil && m.RelatesTo.Type == event.RelReplace || m.MsgType == event.MsgNotice {
		return item{}, false // edits are not new messages; notices are bots'
	}
	m.RemoveReplyFallback()
	msg := &chat.Message{ID: evt.ID.String(), Chat: evt.RoomID.String(), From: evt.Sender.String(), Text: m.Body}
	switch m.MsgType {
	case event.MsgText, event.MsgEmote:
	case event.MsgImage, event.MsgFile, event.MsgVideo, event.MsgAudio:
		msg.Files = []chat.File{c.file(m)}
		msg.Text = ""
		if m.FileName != "" && m.Body != m.FileName {
			msg.Text = m.Body // a caption
		}
	default:
		return item{}, false
	}
	msg.Direct = c.direct(ctx, evt.RoomID)
	msg.Mentioned = c.mentioned(ctx, evt.RoomID, m)
	return item{msg: msg}, true
}

// reaction maps 👍/👎 on an event to an approval's answer.
func (c *Connector) reaction(evt *event.Event) (item, bool) {
	r := evt.Content.AsReaction()
	if r.RelatesTo.Type != event.RelAnnotation || r.RelatesTo.EventID == "" {
		return item{}, false
	}
	key := strings.TrimRight(r.RelatesTo.Key, "\ufe0f\ufe0e")
	key = strings.TrimRight(key, "\U0001F3FB\U0001F3FC\U0001F3FD\U0001F3FE\U0001F3FF") // skin tones
	decision := map[string]string{"👍": "approve", "👎": "deny"}[key]
	if decision == "" {
		return item{}, false
	}
	return item{action: &chat.Action{Chat: evt.RoomID.String(), From: evt.Sender.String(),
		OnMessage: r.RelatesTo.EventID.String(), Decision: decision}}, true
}

// direct: the room has two joined members, the bot and one person.
func (c *Connector) direct(ctx context.Context, room id.RoomID) bool {
	members, err := c.st.state.GetRoomMembers(ctx, room, event.MembershipJoin)
	return err == nil && len(members) == 2
}

// mentioned: m.mentions names the bot, or the body its user id or
// display name, or the message answers one of the bot's.
func (c *Connector) mentioned(ctx context.Context, room id.RoomID, m *event.MessageEventContent) bool {
	if m.Mentions.Has(c.cli.UserID) || strings.Contains(m.Body, c.cli.UserID.String()) {
		return true
	}
	if c.name != "" && strings.Contains(strings.ToLower(m.Body), strings.ToLower(c.name)) {
		return true
	}
	if to := m.RelatesTo.GetReplyTo(); to != "" {
		orig, err := c.cli.GetEvent(ctx, room, to)
		return err == nil && orig.Sender == c.cli.UserID
	}
	return false
}

// file is an attachment of m; Open downloads it (decrypting an
// encrypted room's file with its key).
func (c *Connector) file(m *event.MessageEventContent) chat.File {
	name := m.FileName
	if name == "" {
		name = m.Body
	}
	f := chat.File{Name: name}
	if m.Info != nil {
		f.Size = int64(m.Info.Size)
	}
	enc, uri := m.File, m.URL
	if enc != nil {
		uri = enc.URL
	}
	f.Open = func(ctx context.Context) (io.ReadCloser, error) {
		mxc, err := uri.Parse()
		if err != nil {
			return nil, fmt.Errorf("matrix: file url %q: %w", uri, err)
		}
		data, err := c.cli.DownloadBytes(ctx, mxc)
		if err != nil {
			return nil, fmt.Errorf("matrix: download %s: %w", uri, mapErr(err))
		}
		if enc != nil {
			if err := enc.PrepareForDecryption(); err != nil {
				return nil, fmt.Errorf("matrix: encrypted file: %w", err)
			}
			if err := enc.DecryptInPlace(data); err != nil {
				return nil, fmt.Errorf("matrix: decrypt file: %w", err)
			}
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	return f
}
