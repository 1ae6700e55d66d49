package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// Long-term memory items. Every change is a memory_changed event: written
// to the chat log first, then applied to the item store (items.json) and
// broadcast to every subscriber, all on the hub's goroutine. A change the
// log refuses did not happen (a *StorageError, as for an input). A change
// the log took but items.json could not is kept in memory and in the log:
// it is a storage fault (Info.Storage) until items.json is written again,
// and a restart replays it from the log (see catchUpItems).

// partItems names the item store in storage faults.
const partItems = "memory items"

// ErrNoMemory means the session was built without a memory item store.
var ErrNoMemory = errors.New("long-term memory is not enabled")

// Memory item refusals, as InputErrors: every door answers them as bad input.
var (
	ErrEmptyMemory   = &InputError{"empty_text", "text is empty: send the fact to remember as {\"text\":\"…\"}"}
	ErrMemoryTooLong = &InputError{"text_too_long", fmt.Sprintf("text is too long: a memory item holds at most %d characters", memory.MaxItemChars)}
)

// MemoryFullCode is the code of the refusal of a save when memory holds
// Config.MaxMemoryItems items (409 memory_full at the HTTP doors).
const MemoryFullCode = "memory_full"

// memoryFull is the refusal of a save at the cap of max items.
func memoryFull(max int) *InputError {
	return &InputError{MemoryFullCode, fmt.Sprintf("memory is full: it holds %d items, the most memory.max_items allows; "+
		"forget some (DELETE /api/memory/{id}, /forget, memory_forget) or raise memory.max_items", max)}
}

// Operations of memoryCmd.
const (
	memList = iota
	memSave
	memEdit
	memForget
	memUse // no reply: a search found these items (noteUses)
)

type (
	memoryCmd struct {
		op                   int
		id, text, by, source string
		action, turn         string
		door, from           string           // memSave: where it was asked for (see event.MemoryChangedData)
		person               string           // the people id behind the change (MemoryChangedData.Person)
		signedIn             bool             // the door checked a credential (Actor.SignedIn), for a forward
		ids                  []string         // memUse
		reply                chan memoryReply // nil for memUse
	}
	memoryReply struct {
		item  memory.Item
		items []memory.Item
		err   error
	}
)

// cleanMemoryText is the one check of an item's text from any door: valid
// UTF-8, no control characters but newlines and tabs, trimmed, not empty,
// at most memory.MaxItemChars characters.
func cleanMemoryText(s string) (string, error) {
	s = strings.TrimSpace(stripControl(strings.ToValidUTF8(strings.ReplaceAll(s, "\r\n", "\n"), "\uFFFD"), true))
	switch {
	case s == "":
		return "", ErrEmptyMemory
	case utf8.RuneCountInString(s) > memory.MaxItemChars:
		return "", ErrMemoryTooLong
	}
	return s, nil
}

// clean checks and cleans the text of a save or an edit (cleanMemoryText).
func (c *memoryCmd) clean() error {
	if c.op != memSave && c.op != memEdit {
		return nil
	}
	text, err := cleanMemoryText(c.text)
	c.text = text
	return err
}

// MemoryList returns the long-term memory items, oldest first.
func (m *SessionManager) MemoryList(ctx context.Context) ([]memory.Item, error) {
	r, err := m.memory(ctx, memoryCmd{op: memList})
	return r.items, err
}

// MemorySave saves text as a new memory item for a: a.Door (web,
// console, api) is the item's source and the event's by, a.Person its
// person. A *ForbiddenError when a may not change memory, an *InputError
// refuses bad text, a *StorageError a change the chat log could not take
// (nothing changed in each case).
func (m *SessionManager) MemorySave(ctx context.Context, text string, a Actor) (memory.Item, error) {
	if err := m.allow(a, event.PermMemory); err != nil {
		return memory.Item{}, err
	}
	// A door saving under its own name: Source is the door (Door is for
	// the agent's saves, on behalf of a turn's door).
	return m.memorySave(ctx, memoryCmd{text: text, source: a.Door, by: a.Door, person: a.Person, signedIn: a.SignedIn, action: event.MemorySaved})
}

// memorySave saves c.text as a new item (c.op is set here).
func (m *SessionManager) memorySave(ctx context.Context, c memoryCmd) (memory.Item, error) {
	c.op = memSave
	r, err := m.memory(ctx, c)
	return r.item, err
}

// MemoryEdit replaces the text of item id for a (a.Door names the door:
// web, console, api). memory.ErrNotFound for an unknown id; errors as
// MemorySave otherwise.
func (m *SessionManager) MemoryEdit(ctx context.Context, id, text string, a Actor) (memory.Item, error) {
	if err := m.allow(a, event.PermMemory); err != nil {
		return memory.Item{}, err
	}
	r, err := m.memory(ctx, memoryCmd{op: memEdit, id: id, text: text, by: a.Door, person: a.Person, signedIn: a.SignedIn})
	return r.item, err
}

// MemoryForget deletes item id for a, who needs PermForget.
// memory.ErrNotFound for an unknown id; a *StorageError when the chat log
// could not take it (the item stays).
func (m *SessionManager) MemoryForget(ctx context.Context, id string, a Actor) error {
	if err := m.allow(a, event.PermForget); err != nil {
		return err
	}
	_, err := m.memory(ctx, memoryCmd{op: memForget, id: id, by: a.Door, person: a.Person, signedIn: a.SignedIn})
	return err
}

// memory checks c's text (cleanMemoryText: every door's, and what
// another node forwards, in this one place) and has the holder make the
// change: this node's hub, or the holder's through Forward.
func (m *SessionManager) memory(ctx context.Context, c memoryCmd) (memoryReply, error) {
	if m.cfg.Items == nil {
		return memoryReply{}, ErrNoMemory
	}
	if err := c.clean(); err != nil {
		return memoryReply{}, err
	}
	if c.op != memList && m.following() {
		// The holder writes the log: it makes the change, and this node
		// applies it when the log hands it the event (followMemory).
		var it memory.Item
		err := m.forward(ctx, opMemory, wireMemory{Op: c.op, ID: c.id, Text: c.text, By: c.by,
			Source: c.source, Action: c.action, Turn: c.turn, Actor: Actor{Door: c.by, Person: c.person, SignedIn: c.signedIn}}, &it)
		return memoryReply{item: it}, err
	}
	return m.memoryHere(ctx, c)
}

// memoryHere has this node's hub run c.
func (m *SessionManager) memoryHere(ctx context.Context, c memoryCmd) (memoryReply, error) {
	c.reply = make(chan memoryReply, 1)
	r, err := call(ctx, m, c, c.reply)
	if err != nil {
		return r, err
	}
	return r, r.err
}

// changeMemory runs c on the hub's goroutine.
func (m *SessionManager) changeMemory(c memoryCmd) memoryReply {
	items := m.cfg.Items
	d := event.MemoryChangedData{ID: c.id, By: c.by, Person: c.person}
	switch c.op {
	case memList:
		return memoryReply{items: items.List()}
	case memUse:
		m.used(c.ids)
		return memoryReply{}
	}
	if !m.leading.Load() {
		return memoryReply{err: ErrNoLeader} // this node lost the lease since the change was sent
	}
	// Turn ends the log still owes go first (commit would write them):
	// the change is the next event.
	if err := m.payOwed(); err != nil {
		return memoryReply{err: storageErr("save memory item", err)}
	}
	switch c.op {
	case memSave:
		if max := m.cfg.MaxMemoryItems; max > 0 && items.Len() >= max {
			return memoryReply{err: memoryFull(max)}
		}
		d.Action, d.ID, d.Text, d.Source = c.action, items.NextID(), c.text, c.source
		d.Door, d.From = c.door, c.from
	case memEdit, memForget:
		it, ok := items.Get(c.id) // "m3", "3" or an old id
		if !ok {
			return memoryReply{err: memory.ErrNotFound}
		}
		d.ID = it.ID
		d.Action = event.MemoryDeleted
		if c.op == memEdit {
			d.Action, d.Text = event.MemoryEdited, c.text
			if c.by == memory.ByErase {
				d.Source = c.source // all a replay has of the item once its earlier events are erased
			}
		}
	}
	e, err := m.commit(event.New(event.MemoryChanged, c.turn, m.now(), d))
	if err != nil {
		return memoryReply{err: storageErr(d.Action+" memory item", err)}
	}
	if _, err := items.Apply(e); err != nil {
		panic(fmt.Sprintf("hub: apply own memory_changed: %v", err)) // the hub encoded it
	}
	m.indexed(e.Seq) // now: a search that waits for this seq finds the item as changed
	m.saveItems("seq", e.Seq, "action", d.Action, "id", d.ID)
	m.deliver(e)
	if m.cfg.Index != nil {
		m.cfg.Index.NotifyMemory()
	}
	it, _ := items.Get(d.ID)
	return memoryReply{item: it}
}

// saveItems writes items.json and records how it went (see stored).
func (m *SessionManager) saveItems(attrs ...any) {
	m.stored(partItems, m.cfg.Items.Save(), attrs...)
}

// catchUpBatch is how many chat-log events one read of catchUpItems takes.
const catchUpBatch = 4096

// catchUpItems brings the item store up to the chat log as the hub
// starts: it applies the memory_changed events after the store's Applied
// seq (those a crash kept out of items.json), read from the chat log, or
// from restore (the log's tail) when the hub has no log reader. A store
// ahead of the log (the log was replaced) is rebuilt from the log's start.
// Then it checkpoints the store at the log's last seq. Run's goroutine,
// before the first command.
func (m *SessionManager) catchUpItems(restore []event.Event) {
	items := m.cfg.Items
	if items == nil {
		return
	}
	if items.Applied() > m.seq {
		m.cfg.Logger.Warn("memory items are ahead of the chat log; rebuilding them from the log",
			"items_seq", items.Applied(), "log_seq", m.seq, "file", items.Path())
		items.Reset()
	}
	if items.NeedsRenumber() && m.cfg.History != nil {
		// Written before short ids: replayed from the log's start, every
		// node numbers the items alike; their old ids keep working.
		m.cfg.Logger.Info("memory items get short ids (m1, m2, …) from the chat log; their old ids keep working", "file", items.Path())
		items.Renumber()
	}
	if items.Applied() == m.seq {
		return
	}
	from := items.Applied()
	applied, err := m.replayItems(restore)
	if err != nil {
		m.cfg.Logger.Error("memory items: cannot read the chat log to catch up; they may miss changes until the next start",
			"from_seq", from+1, "err", err)
		return
	}
	items.Advance(m.seq)
	m.saveItems("caught_up_from", from+1, "changes", applied)
	if applied > 0 {
		m.cfg.Logger.Info("memory items caught up with the chat log", "changes", applied, "from_seq", from+1)
	}
}

// replayItems applies the events after the store's Applied seq and counts
// the changes.
func (m *SessionManager) replayItems(restore []event.Event) (int, error) {
	items, applied := m.cfg.Items, 0
	apply := func(evs []event.Event) {
		for _, e := range evs {
			ok, err := items.Apply(e)
			if err != nil {
				m.cfg.Logger.Warn("memory items: skipping an unreadable memory_changed event", "seq", e.Seq, "err", err)
				items.Advance(e.Seq)
			}
			if ok {
				applied++
			}
		}
	}
	if m.cfg.History == nil {
		apply(restore)
		return applied, nil
	}
	for {
		from := items.Applied() + 1
		evs, err := m.cfg.History.Since(from, catchUpBatch)
		if err != nil {
			return applied, err
		}
		if len(evs) == 0 {
			return applied, nil
		}
		apply(evs)
		if items.Applied() < from {
			return applied, nil // the log's events are older than from: nothing more
		}
	}
}

// checkpointItems saves the item store as up to date with the whole chat
// log, so that the next start reads nothing to catch up, with the uses
// counted since the last write. Shutdown only.
func (m *SessionManager) checkpointItems() {
	if m.cfg.Items == nil {
		return
	}
	m.cfg.Items.Advance(m.seq)
	if err := m.cfg.Items.Save(); err != nil {
		m.cfg.Logger.Warn("memory items: checkpoint not saved; the next start reads the chat log to catch up", "err", err)
	}
}

// migrateLongTerm turns long_term.md, the memory file of earlier
// versions, into items once: each section not already an item (by its
// text) is saved as one (action consolidated, by "migration"), then the
// file is renamed long_term.md.migrated (kept, readable, no longer read)
// and the store marked migrated. A crash part way is safe: the sections
// already saved are in the log, the catch-up restores them, and the next
// start skips them by their text. Run's goroutine, before the first
// command.
func (m *SessionManager) migrateLongTerm() {
	items, mem := m.cfg.Items, m.cfg.Memory
	if items == nil || mem == nil || items.Migrated() || !m.leading.Load() {
		return // a follower writes no log: the node that leads migrates its file
	}
	text, err := mem.LongTerm()
	if err != nil {
		m.cfg.Logger.Error("memory items: cannot read long_term.md to migrate it; trying again at the next start", "err", err)
		return
	}
	have := map[string]bool{}
	for _, it := range items.List() {
		have[it.Text] = true
	}
	saved := 0
	for _, sec := range memory.Sections(text) {
		t, err := cleanMemoryText(strings.TrimPrefix(sec.Text, "## "))
		if errors.Is(err, ErrMemoryTooLong) {
			t, err = string([]rune(t)[:memory.MaxItemChars-1])+"…", nil
		}
		if err != nil || have[t] {
			continue
		}
		r := m.changeMemory(memoryCmd{op: memSave, text: t, source: memory.SourceConsolidation,
			by: "migration", action: event.MemoryConsolidated})
		if r.err != nil {
			m.cfg.Logger.Error("memory items: long_term.md not migrated; trying again at the next start", "err", r.err)
			return
		}
		have[t] = true
		saved++
	}
	path := filepath.Join(mem.Dir(), memory.LongTermFile)
	if text != "" {
		if err := os.Rename(path, path+".migrated"); err != nil {
			m.cfg.Logger.Error("memory items: long_term.md was migrated but not renamed; trying again at the next start", "err", err)
			return
		}
		m.cfg.Logger.Info("long_term.md migrated into memory items; the file is kept as long_term.md.migrated", "items", saved)
	}
	items.SetMigrated()
	m.saveItems("migrated", saved)
}

// defaultMemoryContextTokens is Config.MemoryContextTokens' default.
const defaultMemoryContextTokens = 2000

// memoryContext renders the memory items for a turn's context within
// Config.MemoryContextTokens: the newest and most used first (see
// memory.Items.ForContext), the rest left to history_search type:memory.
func (m *SessionManager) memoryContext() string {
	ranked, fit := m.cfg.Items.ForContext(m.cfg.MemoryContextTokens)
	if len(ranked) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Long-term memory, one item a line as [id] text (newest and most used first). " +
		"Save a new fact with memory_save; remove a wrong or unwanted item with memory_forget and its id.\n")
	for _, it := range ranked[:fit] {
		b.WriteString("- ")
		b.WriteString(strings.ReplaceAll(memory.Doc(it), "\n", "\n  "))
		b.WriteByte('\n')
	}
	if left := len(ranked) - fit; left > 0 {
		fmt.Fprintf(&b, "(%d older or less used %s not shown here for space: find them with history_search and type:memory in the query.)\n",
			left, plural(left, "item is", "items are"))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// noteUses counts the memory items a tool's search found (their ids are
// in the hits' snippets, see memory.Doc) as used, so that they rank
// higher in the next turns' context. The search's goroutine; it does not
// wait for the hub.
func (m *SessionManager) noteUses(res SearchResult) {
	if m.cfg.Items == nil {
		return
	}
	var ids []string
	for _, h := range res.Hits {
		if h.Type == index.TypeMemory && h.Item != "" {
			ids = append(ids, h.Item) // named even when the snippet starts past its "[id]"
		} else if h.Type == index.TypeMemory {
			ids = append(ids, memory.IDsIn(h.Snippet)...)
		}
	}
	if len(ids) == 0 {
		return
	}
	select {
	case m.cmds <- memoryCmd{op: memUse, ids: ids}:
	case <-m.done:
	}
}

// used records uses on the hub's goroutine (memUse). They are written
// with the next change or the checkpoint at shutdown, not now: a search
// must not cost a write of items.json (about 12 ms with 1000 items), and
// a crash losing a few uses only reorders the context a little.
func (m *SessionManager) used(ids []string) {
	m.cfg.Items.Use(m.now(), ids...)
}

// opMemory forwards a memory change to the node holding the lease.
const opMemory = "memory"

// wireMemory is a forwarded memory change (a memoryCmd).
type wireMemory struct {
	Op     int    `json:"op"`
	ID     string `json:"id,omitempty"`
	Text   string `json:"text,omitempty"`
	By     string `json:"by"`
	Source string `json:"source,omitempty"`
	Action string `json:"action,omitempty"`
	Turn   string `json:"turn,omitempty"`
	// Actor is who asked, judged again here (the Gate).
	Actor Actor `json:"actor"`
}

// serveMemory makes a memory change another node forwarded (see Serve),
// checked as the door's own would be: the text (cleanMemoryText), and
// who asks — a door that forwards (forwardedBy) saving under its own name,
// never the agent or a consolidation, which run on the holder alone.
func (m *SessionManager) serveMemory(ctx context.Context, req []byte) (memory.Item, error) {
	var w wireMemory
	if err := json.Unmarshal(req, &w); err != nil {
		return memory.Item{}, err
	}
	if w.Op != memSave && w.Op != memEdit && w.Op != memForget {
		return memory.Item{}, fmt.Errorf("unknown memory operation %d", w.Op)
	}
	if m.cfg.Items == nil {
		return memory.Item{}, ErrNoMemory
	}
	if err := forwardedBy(w.By); err != nil {
		return memory.Item{}, err
	}
	perm := event.PermMemory
	if w.Op == memForget {
		perm = event.PermForget
	}
	if w.Actor.Door == "" {
		w.Actor.Door = w.By // a node of an earlier version names no actor
	}
	if w.Actor.Door != w.By {
		return memory.Item{}, errForwardedBy
	}
	if err := m.allow(w.Actor, perm); err != nil {
		return memory.Item{}, err
	}
	c := memoryCmd{op: w.Op, id: w.ID, text: w.Text, by: w.By, person: w.Actor.Person}
	if w.Op == memSave {
		if w.Source != w.By || (w.Action != "" && w.Action != event.MemorySaved) || w.Turn != "" {
			return memory.Item{}, errForwardedBy
		}
		c.source, c.action = w.By, event.MemorySaved
	}
	if err := c.clean(); err != nil {
		return memory.Item{}, err
	}
	r, err := m.memoryHere(ctx, c)
	return r.item, err
}

// followMemory applies an event the log handed a follower to its item
// store (see Ingest): every node keeps its own items.json, all from the
// same events. The hub's goroutine.
func (m *SessionManager) followMemory(e event.Event) {
	if m.cfg.Items == nil {
		return
	}
	changed, err := m.cfg.Items.Apply(e)
	if err != nil {
		m.cfg.Logger.Warn("memory items: skipping an unreadable memory_changed event", "seq", e.Seq, "err", err)
		return
	}
	if changed {
		m.saveItems("seq", e.Seq)
		if m.cfg.Index != nil {
			m.cfg.Index.NotifyMemory()
		}
	}
}
