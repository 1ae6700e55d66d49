package hub

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// Erasing a message. A person (web, console, api) erases one user or
// assistant message: the hub appends an erased event to the log, shows it
// to every client, puts the message's tombstone (event.Tombstone) in place
// of the message in everything it holds (buffer, ring, echoes, outcomes,
// short_term.md's next write) and edits or deletes the memory items that
// quote it, erasing their earlier memory_changed events too. The files
// are rid of the text by Config.Erased (package erasure) on a single
// node, by the cluster's log copier on a cluster node.

// Erase refusals. A door answers ErrNoEvent 404, ErrNotMessage and
// ErrAlreadyErased 409, ErrBadSeq 400.
var (
	ErrNoEvent       = errors.New("no event has that seq")
	ErrNotMessage    = errors.New("the event at that seq is not a user or assistant message: only messages are erased")
	ErrAlreadyErased = errors.New("the message at that seq is already erased")
	ErrBadSeq        = &InputError{"bad_seq", "seq must be a whole number ≥ 1"}
)

type (
	eraseCmd struct {
		seq    int64
		by     string
		person string
		// disk is the event at seq as the chat log holds it (found: it
		// does), read off the hub's goroutine; the buffer's wins.
		disk  event.Event
		found bool
		// item: erase a memory_changed event (an item's text), not a
		// person's message.
		item  bool
		reply chan eraseReply
	}
	eraseReply struct {
		d      event.ErasedData
		quoted []quotedItem
		err    error
	}
	// quotedItem is a memory item an erase edited or deleted: the events
	// that carried its text are erased next.
	quotedItem struct {
		id        string
		changedAt int64     // seq of the erase's own memory_changed
		created   time.Time // its first memory_changed event's ts
	}
)

// Erase erases the user or assistant message at seq; by names the door
// (web, console, api). It returns the erased event's data once the erase
// is in the log and every client was told. ErrBadSeq, ErrNoEvent,
// ErrNotMessage, ErrAlreadyErased refuse it; a *StorageError means the
// log could not take it (nothing was erased). A follower forwards it to
// the holder, which judges it.
func (m *SessionManager) Erase(ctx context.Context, seq int64, a Actor) (event.ErasedData, error) {
	if err := m.allow(a, event.PermErase); err != nil {
		return event.ErasedData{}, err
	}
	if seq <= 0 {
		return event.ErasedData{}, ErrBadSeq
	}
	if m.following() {
		var d event.ErasedData
		err := m.forward(ctx, opErase, wireErase{Seq: seq, By: a.Door, Actor: a}, &d)
		return d, err
	}
	r, err := m.eraseHere(ctx, eraseCmd{seq: seq, by: a.Door, person: a.Person})
	if err != nil {
		return r.d, err
	}
	for _, q := range r.quoted {
		m.eraseItemEvents(ctx, q)
	}
	return r.d, nil
}

// eraseHere reads the event at c.seq from the chat log and has this
// node's hub erase it.
func (m *SessionManager) eraseHere(ctx context.Context, c eraseCmd) (eraseReply, error) {
	if m.cfg.History != nil {
		evs, _, _, err := m.cfg.History.Range(ctx, history.Bound{Seq: c.seq}, history.Bound{Seq: c.seq}, 1)
		if err != nil {
			return eraseReply{}, storageErr("read chat log", err)
		}
		if len(evs) == 1 && evs[0].Seq == c.seq {
			c.disk, c.found = evs[0], true
		}
	}
	c.reply = make(chan eraseReply, 1)
	r, err := call(ctx, m, c, c.reply)
	if err == nil {
		err = r.err
	}
	return r, err
}

// eraseItemEvents erases the memory_changed events that carried the text
// of an item an erase edited or deleted: the one that saved it and every
// edit of it up to the erase's own, found in the log from the item's
// creation on (an item's id names no seq). Failures are logged: the item
// itself is already rid of the text.
func (m *SessionManager) eraseItemEvents(ctx context.Context, q quotedItem) {
	seqs := m.itemEvents(ctx, q)
	for _, s := range seqs {
		_, err := m.eraseHere(ctx, eraseCmd{seq: s, by: memory.ByErase, item: true})
		if err != nil && !errors.Is(err, ErrAlreadyErased) {
			m.cfg.Logger.Error("erase: an event that carried a memory item's text was not erased", "seq", s, "item", q.id, "err", err)
		}
	}
}

// itemEvents returns the seqs of the memory_changed events before
// q.changedAt that gave item q.id a text.
func (m *SessionManager) itemEvents(ctx context.Context, q quotedItem) []int64 {
	if m.cfg.History == nil {
		return nil
	}
	// The first event at or after the item's creation (a second early:
	// the log's clock and the item's agree to the millisecond).
	first, _, _, err := m.cfg.History.Range(ctx, history.Bound{Time: q.created.Add(-time.Second)}, history.Bound{Seq: q.changedAt}, 1)
	if err != nil || len(first) == 0 {
		return nil
	}
	var seqs []int64
	for from := first[0].Seq; from < q.changedAt; {
		evs, err := m.cfg.History.Since(from, catchUpBatch)
		if err != nil || len(evs) == 0 {
			break
		}
		for _, e := range evs {
			var d event.MemoryChangedData
			if e.Seq < q.changedAt && e.Type == event.MemoryChanged && e.Decode(&d) == nil && d.ID == q.id && d.Text != "" {
				seqs = append(seqs, e.Seq)
			}
		}
		from = evs[len(evs)-1].Seq + 1
	}
	return seqs
}

// erase runs c on the hub's goroutine.
func (m *SessionManager) erase(c eraseCmd) eraseReply {
	if !m.leading.Load() {
		return eraseReply{err: ErrNoLeader}
	}
	if c.seq > m.seq {
		return eraseReply{err: ErrNoEvent}
	}
	e, ok := m.buffered(c.seq)
	if !ok {
		e, ok = c.disk, c.found
	}
	if !ok {
		return eraseReply{err: ErrNoEvent}
	}
	if m.erasedSeqs[c.seq] || event.IsTombstone(e) {
		return eraseReply{err: ErrAlreadyErased}
	}
	want := e.Type == event.User || e.Type == event.Assistant
	if c.item {
		want = e.Type == event.MemoryChanged
	}
	if !want {
		return eraseReply{err: ErrNotMessage}
	}
	d := event.ErasedOf(e, c.by)
	d.Person = c.person
	ee, err := m.commit(event.New(event.Erased, "", m.now(), d))
	if err != nil {
		return eraseReply{err: storageErr("erase", err)}
	}
	m.tombstone(d)
	m.deliver(ee)
	m.saveShortTerm()
	if m.cfg.Cluster == nil && m.cfg.Erased != nil {
		m.cfg.Erased(d)
	}
	var quoted []quotedItem
	if msg, ok := e.Message(); ok && !c.item {
		quoted = m.scrubMemory(msg.Content)
	}
	m.cfg.Logger.Info("message erased", "seq", d.Seq, "type", d.Type, "by", d.By, "memory_items", len(quoted))
	return eraseReply{d: d, quoted: quoted}
}

// buffered returns the persisted event at seq if the buffer holds it.
func (m *SessionManager) buffered(seq int64) (event.Event, bool) {
	for i := len(m.buf) - 1; i >= 0; i-- {
		if e := m.buf[i].Event; e.Seq == seq && e.Type.Persisted() {
			return e, true
		}
	}
	return event.Event{}, false
}

// tombstone puts Tombstone(d) in place of the erased event in everything
// the hub holds: the buffer (what replays show), the ring (the next
// turns' context), the echoes kept for resends and the outcomes kept for
// doors that wait. The hub's goroutine, on the holder and on followers.
func (m *SessionManager) tombstone(d event.ErasedData) {
	if m.erasedSeqs == nil {
		m.erasedSeqs = map[int64]bool{}
	}
	m.erasedSeqs[d.Seq] = true
	t := event.Tombstone(d)
	t.V = 0
	f := newFrame(t)
	for i, b := range m.buf {
		if b.Event.Seq == d.Seq && b.Event.Type.Persisted() {
			m.buf[i] = f
		}
	}
	m.ring.Replace(t)
	for id, a := range m.accepted {
		if a.Event.Seq == d.Seq {
			m.accepted[id] = f
		}
	}
	if m.pending != nil && m.pending.echo.Event.Seq == d.Seq {
		m.pending.echo = f
		m.pending.in.Content = ""
	}
	for _, q := range m.patient {
		if q.echo.Event.Seq == d.Seq {
			q.echo, q.in.Content = f, ""
		}
	}
	if d.Type == event.Assistant {
		if o, ok := m.outcomes[d.Turn]; ok {
			o.Reply = ""
			m.outcomes[d.Turn] = o
		}
	}
}

// scrubMemory edits (the quote removed) or deletes every memory item that
// quotes content (see memory.Redact), by ByErase, through the usual
// memory_changed path, and returns them.
func (m *SessionManager) scrubMemory(content string) []quotedItem {
	if m.cfg.Items == nil || strings.TrimSpace(content) == "" {
		return nil
	}
	var out []quotedItem
	for _, it := range m.cfg.Items.List() {
		kept, quoted := memory.Redact(it.Text, content)
		if !quoted {
			continue
		}
		c := memoryCmd{op: memForget, id: it.ID, by: memory.ByErase}
		if kept != "" {
			c = memoryCmd{op: memEdit, id: it.ID, text: kept, by: memory.ByErase, source: it.Source}
		}
		if r := m.changeMemory(c); r.err != nil {
			m.cfg.Logger.Error("erase: a memory item quoting the erased message was not changed", "item", it.ID, "err", r.err)
			continue
		}
		out = append(out, quotedItem{id: it.ID, changedAt: m.seq, created: it.Created})
	}
	return out
}

// restoreErased puts the tombstones of the erased events in tail in place
// of the events they erased (a crash may have come before the files were
// rewritten) and returns the erasures, to be applied again.
func restoreErased(tail []event.Event) ([]event.Event, []event.ErasedData) {
	var ds []event.ErasedData
	at := map[int64]int{}
	for i, e := range tail {
		at[e.Seq] = i
		if e.Type != event.Erased {
			continue
		}
		var d event.ErasedData
		if e.Decode(&d) != nil {
			continue
		}
		ds = append(ds, d)
		if j, ok := at[d.Seq]; ok {
			tail[j] = event.Tombstone(d)
		}
	}
	return tail, ds
}

// opErase forwards an erase to the node holding the lease.
const opErase = "erase"

// wireErase is a forwarded erase.
type wireErase struct {
	Seq   int64  `json:"seq"`
	By    string `json:"by"`
	Actor Actor  `json:"actor"`
}

// serveErase erases what another node forwarded, judged as a door here
// would: a seq ≥ 1, from a door that forwards (forwardedBy).
func (m *SessionManager) serveErase(ctx context.Context, req []byte) (event.ErasedData, error) {
	var w wireErase
	if err := json.Unmarshal(req, &w); err != nil {
		return event.ErasedData{}, err
	}
	if w.Actor.Door == "" {
		w.Actor.Door = w.By // a node of an earlier version names no actor
	}
	if err := forwardedActor(m, w.Actor, event.PermErase); err != nil || w.Actor.Door != w.By {
		return event.ErasedData{}, cmp.Or[error](err, errForwardedBy)
	}
	if w.Seq <= 0 {
		return event.ErasedData{}, ErrBadSeq
	}
	r, err := m.eraseHere(ctx, eraseCmd{seq: w.Seq, by: w.By, person: w.Actor.Person})
	if err != nil {
		return r.d, err
	}
	for _, q := range r.quoted {
		m.eraseItemEvents(ctx, q)
	}
	return r.d, nil
}

// followErased puts the tombstone of an erased event the log handed a
// follower in place of what it erased (see tombstone).
func (m *SessionManager) followErased(e event.Event) {
	var d event.ErasedData
	if e.Type != event.Erased || e.Decode(&d) != nil {
		return
	}
	m.tombstone(d)
	m.saveShortTerm()
}
