package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/backoff"
	"github.com/frontdesk-hq/frontdesk/internal/ctxsleep"
)

// reply follows one owed reply: its turn's frames (streamed text,
// approval requests) and its outcome (the exact final text).
type reply struct {
	d      *Door
	o      *owed
	turn   string          // under d.mu
	frames chan *hub.Frame // from dispatch; dropped when full (the outcome has the truth)
}

// register starts following o; false if its key is followed already (a
// message handed twice while its first hand is in flight).
func (d *Door) register(o *owed) (*reply, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.replies[o.Key]; ok {
		return nil, false
	}
	r := &reply{d: d, o: o, frames: make(chan *hub.Frame, 256)}
	d.replies[o.Key] = r
	return r, true
}

func (d *Door) unregister(r *reply) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.replies, r.o.Key)
	if r.turn != "" {
		delete(d.byTurn, r.turn)
	}
}

func (d *Door) bind(r *reply, turn string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if turn != "" && r.turn == "" {
		r.turn = turn
		d.byTurn[turn] = r
	}
}

// submit offers o to the session and, once it is in the log, records it
// as owed and follows its reply. nil: answered or owed; an error: not
// recorded, hand it again later.
func (d *Door) submit(ctx context.Context, o *owed) error {
	r, fresh := d.register(o)
	if !fresh {
		return nil
	}
	if d.state.delivered(o.Key) { // handed again after its reply was delivered
		d.unregister(r) // (a reply is marked delivered before it unregisters)
		return nil
	}
	done := make(chan hub.TurnOutcome, 1)
	res, err := d.s.Submit(ctx, hub.Input{Channel: d.opts.Door, From: o.From, Content: o.Content,
		ClientMsgID: o.Key, Done: done, Person: o.Person, SignedIn: o.Person != "", Attachments: o.Attachments})
	var inErr *hub.InputError
	var forbidden *hub.ForbiddenError
	switch {
	case errors.As(err, &inErr) || errors.As(err, &forbidden):
		d.unregister(r)
		d.say(ctx, o, "Not sent: "+err.Error())
		return d.state.done(o)
	case err != nil:
		d.unregister(r)
		return err
	case res.Outcome == hub.Rejected:
		d.unregister(r)
		d.say(ctx, o, res.Busy.Message)
		return d.state.done(o)
	case res.Outcome == hub.Queued:
		d.say(ctx, o, res.Busy.Message)
	}
	if res.Echo != nil {
		d.bind(r, res.Echo.Event.Turn)
	}
	stored, err := d.state.add(o)
	if err != nil {
		d.unregister(r)
		return fmt.Errorf("the %s door could not record a message it took: %w", d.opts.Door, err)
	}
	r.o = stored
	d.wg.Go(func() { r.follow(d.ctx, done) })
	return nil
}

// resume finishes a reply owed from before a restart: the same input again
// is a duplicate to the session, which gives its turn's outcome.
func (d *Door) resume(ctx context.Context, o *owed) {
	bo := d.newBackoff()
	for {
		err := d.submit(ctx, o)
		if err == nil || ctx.Err() != nil {
			return
		}
		wait := bo.Next()
		d.log.Warn("chat: a reply owed from before could not be resumed; trying again", "err", err, "wait", wait)
		if !ctxsleep.Sleep(ctx, wait) {
			return
		}
	}
}

func (d *Door) newBackoff() backoff.Backoff {
	return backoff.Backoff{Min: d.opts.MinBackoff, Max: d.opts.MaxBackoff}
}

// subscribe joins the stream after seq since (-1: from now).
func (d *Door) subscribe(ctx context.Context, since int64) (*hub.Subscription, error) {
	if since < 0 {
		info, err := d.s.Info(ctx)
		if err != nil {
			return nil, err
		}
		since = info.LastSeq
	}
	sub, _, err := d.s.Subscribe(ctx, since)
	return sub, err
}

// dispatch hands each frame to the reply of its turn, binds turns to
// replies by the user event's client_msg_id, and keeps approval messages
// up to date. A dropped subscription is joined again where it left off.
func (d *Door) dispatch(ctx context.Context, sub *hub.Subscription) {
	var last int64
	for {
		f, ok := sub.Next(ctx)
		if !ok {
			sub.Close()
			if ctx.Err() != nil || errors.Is(sub.Err(), hub.ErrClosed) {
				return
			}
			var err error
			if sub, err = d.subscribe(ctx, last); err != nil {
				return
			}
			continue
		}
		if f.Event.Seq > 0 {
			last = f.Event.Seq
		}
		d.route(ctx, f)
	}
}

func (d *Door) route(ctx context.Context, f *hub.Frame) {
	switch f.Event.Type {
	case event.User:
		var u event.UserData
		if f.Event.Decode(&u) == nil && u.ClientMsgID != "" {
			d.mu.Lock()
			r := d.replies[u.ClientMsgID]
			d.mu.Unlock()
			if r != nil {
				d.bind(r, f.Event.Turn)
			}
		}
		return
	case event.ApprovalResult:
		d.approvalDone(ctx, f)
		return
	}
	d.mu.Lock()
	r := d.byTurn[f.Event.Turn]
	d.mu.Unlock()
	if r == nil {
		return
	}
	select {
	case r.frames <- f:
	default: // the streamed text may skip; the final edit is exact
	}
}

// follow streams the reply into the chat until the outcome comes, then
// delivers the final text and drops o from the replies owed. If ctx ends
// first, o stays owed: the next start finishes it.
func (r *reply) follow(ctx context.Context, done <-chan hub.TurnOutcome) {
	d := r.d
	defer d.unregister(r)
	var text strings.Builder
	var lastEdit time.Time
	var flush <-chan time.Time
	var typing <-chan time.Time // nil: the platform has no indicator
	if d.lim.TypingEvery > 0 {
		t := time.NewTicker(d.lim.TypingEvery)
		defer t.Stop()
		typing = t.C
		r.typing(ctx)
	}
	for {
		select {
		case f := <-r.frames:
			switch f.Event.Type {
			case event.Delta:
				var t event.TextData
				if f.Event.Decode(&t) == nil {
					text.WriteString(t.Text)
				}
				if flush == nil {
					flush = time.After(time.Until(lastEdit.Add(d.lim.EditEvery)))
				}
			case event.ApprovalRequest:
				r.ask(ctx, f)
			}
		case <-flush:
			flush, lastEdit = nil, time.Now()
			r.stream(ctx, text.String())
		case <-typing:
			r.typing(ctx)
		case out := <-done:
			r.finish(ctx, out)
			return
		case <-ctx.Done():
			return
		}
	}
}

func (r *reply) typing(ctx context.Context) {
	_ = r.d.conn.Typing(ctx, r.o.Chat) // a missing indicator is not worth a retry
}

// stream shows the text so far in the reply's first message: posted on
// the first words, edited after. Only the first part streams; the rest
// comes with the final text. Failures are not retried: the final is.
func (r *reply) stream(ctx context.Context, md string) {
	if md == "" {
		return
	}
	if utf8.RuneCountInString(md) > r.d.lim.MaxText {
		md = Split(md, r.d.lim.MaxText)[0]
	}
	if err := r.put(ctx, 0, md, false); err != nil {
		r.d.log.Debug("chat: a streamed edit was refused", "err", err)
	}
}

// put makes message i of the reply show md: an edit of the message posted
// before, or a new one (recorded before put returns).
func (r *reply) put(ctx context.Context, i int, md string, final bool) error {
	d := r.d
	text := Render(md, d.lim.Style)
	plain := Render(md, StylePlain)
	if i < len(r.o.Posted) {
		return d.conn.Edit(ctx, Edit{Chat: r.o.Chat, ID: r.o.Posted[i], Text: text, Plain: plain, Final: final})
	}
	replyTo := r.o.ReplyTo
	if i > 0 {
		replyTo = r.o.Posted[i-1]
	}
	id, err := d.conn.Send(ctx, Post{Chat: r.o.Chat, ReplyTo: replyTo, Thread: r.o.Thread, Text: text, Plain: plain})
	if err != nil {
		return err
	}
	return d.state.update(r.o, func(o *owed) { o.Posted = append(o.Posted, id) })
}

// finish delivers the final text, part by part, each retried until the
// platform takes it (or ctx ends: then it stays owed). An edit refused
// editRefusals times (the message was deleted, say) posts the part anew.
func (r *reply) finish(ctx context.Context, out hub.TurnOutcome) {
	d := r.d
	parts := Split(finalText(out), d.lim.MaxText)
	for i, p := range parts {
		refused := 0
		err := d.retry(ctx, func() error {
			err := r.put(ctx, i, p, i == len(parts)-1)
			if err != nil && i < len(r.o.Posted) && !transient(err) {
				if refused++; refused >= editRefusals {
					d.log.Warn("chat: the platform keeps refusing to edit a reply; posting it anew", "err", err)
					r.repost(i)
				}
			}
			return err
		})
		if err != nil {
			return
		}
	}
	if err := d.state.done(r.o); err != nil {
		d.log.Error("chat: a reply was delivered but could not be marked so; it may be edited again at the next start", "err", err)
	}
}

// editRefusals is how many refused edits of a part make finish post it
// anew.
const editRefusals = 3

// transient says whether err is worth the same try again: a 429, or a
// refused token (fixed by a new one, not by another message).
func transient(err error) bool {
	var ra *RetryError
	return errors.As(err, &ra) || errors.Is(err, ErrUnauthorized)
}

// repost forgets the message posted for part i and those after it: the
// next put posts them again.
func (r *reply) repost(i int) {
	if err := r.d.state.update(r.o, func(o *owed) { o.Posted = o.Posted[:i] }); err != nil {
		r.d.log.Warn("chat: could not record a reply posted anew", "err", err)
	}
}

// finalText is what the chat shows at a turn's end.
func finalText(out hub.TurnOutcome) string {
	reply := strings.TrimSpace(out.Reply)
	var note string
	switch out.Status {
	case event.StatusCompleted:
		if reply == "" {
			return "(no answer)"
		}
		return reply
	case event.StatusCancelled:
		note = "_(cancelled)_"
	case event.StatusInterrupted:
		note = "_(interrupted: the server stopped; send it again)_"
	case hub.StatusNotRecorded:
		note = "_(not saved: " + out.Error + " — send it again)_"
	case hub.StatusReplaced:
		note = "_(replaced by a newer message before it ran)_"
	default:
		note = "_(error: " + out.Error + ")_"
	}
	if reply == "" {
		return note
	}
	return reply + "\n\n" + note
}

// retry runs f until it succeeds or ctx ends, waiting between tries
// (backoff.Backoff; a RetryError's After wins). The door is unhealthy meanwhile.
func (d *Door) retry(ctx context.Context, f func() error) error {
	bo := d.newBackoff()
	for {
		err := f()
		if err == nil {
			d.setHealth(false, nil)
			return nil
		}
		d.setHealth(false, err)
		d.log.Warn("chat: the platform refused a reply; trying again", "err", err)
		next := bo.Next()
		var ra *RetryError
		if errors.As(err, &ra) && ra.After > 0 {
			next = ra.After
		}
		if !ctxsleep.Sleep(ctx, next) {
			return ctx.Err()
		}
	}
}
