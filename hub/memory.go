package hub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
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

// Operations of memoryCmd.
const (
	memList = iota
	memSave
	memEdit
	memForget
)

type (
	memoryCmd struct {
		op                   int
		id, text, by, source string
		action, turn         string
		reply                chan memoryReply
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

// MemoryList returns the long-term memory items, oldest first.
func (m *SessionManager) MemoryList(ctx context.Context) ([]memory.Item, error) {
	r, err := m.memory(ctx, memoryCmd{op: memList})
	return r.items, err
}

// MemorySave saves text as a new memory item; source is who saves it
// (memory.Source*: agent, web, console, api, consolidation) and is also
// the event's by. An *InputError refuses bad text, a *StorageError a
// change the chat log could not take (nothing changed).
func (m *SessionManager) MemorySave(ctx context.Context, text, source string) (memory.Item, error) {
	return m.memorySave(ctx, text, source, source, event.MemorySaved, "")
}

func (m *SessionManager) memorySave(ctx context.Context, text, source, by, action, turn string) (memory.Item, error) {
	text, err := cleanMemoryText(text)
	if err != nil {
		return memory.Item{}, err
	}
	r, err := m.memory(ctx, memoryCmd{op: memSave, text: text, source: source, by: by, action: action, turn: turn})
	return r.item, err
}

// MemoryEdit replaces the text of item id; by names the door (web,
// console, api, agent). memory.ErrNotFound for an unknown id; errors as
// MemorySave otherwise.
func (m *SessionManager) MemoryEdit(ctx context.Context, id, text, by string) (memory.Item, error) {
	text, err := cleanMemoryText(text)
	if err != nil {
		return memory.Item{}, err
	}
	r, err := m.memory(ctx, memoryCmd{op: memEdit, id: id, text: text, by: by})
	return r.item, err
}

// MemoryForget deletes item id; by names the door. memory.ErrNotFound for
// an unknown id; a *StorageError when the chat log could not take it (the
// item stays).
func (m *SessionManager) MemoryForget(ctx context.Context, id, by string) error {
	_, err := m.memory(ctx, memoryCmd{op: memForget, id: id, by: by})
	return err
}

func (m *SessionManager) memory(ctx context.Context, c memoryCmd) (memoryReply, error) {
	if m.cfg.Items == nil {
		return memoryReply{}, ErrNoMemory
	}
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
	d := event.MemoryChangedData{ID: c.id, By: c.by}
	switch c.op {
	case memList:
		return memoryReply{items: items.List()}
	case memSave:
		d.Action, d.ID, d.Text, d.Source = c.action, "m"+strconv.FormatInt(m.seq+1, 10), c.text, c.source
	case memEdit, memForget:
		if _, ok := items.Get(c.id); !ok {
			return memoryReply{err: memory.ErrNotFound}
		}
		d.Action = event.MemoryDeleted
		if c.op == memEdit {
			d.Action, d.Text = event.MemoryEdited, c.text
		}
	}
	e, err := m.commit(event.New(event.MemoryChanged, c.turn, m.now(), d))
	if err != nil {
		return memoryReply{err: storageErr(d.Action+" memory item", err)}
	}
	if _, err := items.Apply(e); err != nil {
		panic(fmt.Sprintf("hub: apply own memory_changed: %v", err)) // the hub encoded it
	}
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
// log, so that the next start reads nothing to catch up. Shutdown only.
func (m *SessionManager) checkpointItems() {
	if m.cfg.Items == nil || m.cfg.Items.Applied() >= m.seq {
		return
	}
	m.cfg.Items.Advance(m.seq)
	if err := m.cfg.Items.Save(); err != nil {
		m.cfg.Logger.Warn("memory items: checkpoint not saved; the next start reads the chat log to catch up", "err", err)
	}
}
