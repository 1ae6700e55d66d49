package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// ItemsFile is the item store's file inside the memory directory.
const ItemsFile = "items.json"

// Sources of an item (Item.Source): the door or part that saved it.
const (
	SourceAgent         = "agent"
	SourceWeb           = "web"
	SourceConsole       = "console"
	SourceAPI           = "api"
	SourceConsolidation = "consolidation"
)

// ByErase is the by of the memory_changed events an erase makes: an item
// that quoted an erased message is edited (the quote removed) or deleted.
const ByErase = "erase"

// MaxItemChars caps an item's text, in characters (runes). A
// consolidation's summary (at most maxSummaryChars) and its heading fit.
const MaxItemChars = 16384

// ErrNotFound means no memory item has the id.
var ErrNotFound = errors.New("no memory item has that id")

// Item is one thing the assistant remembers long-term. ID is stable for
// the item's life and short enough to type: "m" and a number counted up
// from 1 as items are saved (see NextID); "3" names m3 too. Old is the id
// an item saved before short ids had ("m" and its event's seq), still
// accepted. Source says who saved it first (Source*), Created and
// Updated are the times of its first and latest memory_changed event.
//
// Door and From say where the agent's save was asked for (see
// event.MemoryChangedData): the door of the turn's input and its sender, so that a fact planted by an email is not
// taken for one a person typed. EditedBy is the door of the latest edit
// (web, console, api), empty when it was never edited. Items saved by
// earlier versions have none of the three.
type Item struct {
	ID       string    `json:"id"`
	Old      string    `json:"old_id,omitempty"`
	Text     string    `json:"text"`
	Source   string    `json:"source"`
	Door     string    `json:"door,omitempty"`
	From     string    `json:"from,omitempty"`
	EditedBy string    `json:"edited_by,omitempty"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// itemsVersion is the "version" of items.json.
const itemsVersion = 1

// itemsFile is items.json: the items and how far into the chat log they
// are up to date.
type itemsFile struct {
	Version int `json:"version"`
	// Applied: every memory_changed event up to this seq is in Items.
	Applied int64  `json:"applied_seq"`
	Items   []Item `json:"items"`
	// Uses counts, per item id, how often and when last the item was
	// found by a search the agent made (see Items.Use).
	Uses map[string]Use `json:"uses,omitempty"`
	// Migrated: long_term.md was turned into items (see MigrateSections).
	Migrated bool `json:"migrated,omitempty"`
	// Next is the number the next item's id gets (see NextID); 0 in a
	// file written before short ids (see Renumber).
	Next int64 `json:"next_id,omitempty"`
	// Forgotten: what is kept of the deleted items (hashes of their
	// words, never their text), oldest first; see Forgotten.
	Forgotten []Forgotten `json:"forgotten,omitempty"`
}

// Items is the long-term memory item store: items.json, a view of the
// memory_changed events in the chat log. The chat log is the truth: an
// event is appended there first, then applied here (Apply) and the file
// replaced atomically (Save). After a crash between the two, the file is
// behind the log, and whoever opens it replays the events after
// Applied() (the hub does as it starts), so the two never disagree for
// longer than a restart. Applying an event twice changes nothing.
//
// One goroutine (the hub's) applies and saves; List, Get and Applied may
// be called from any goroutine (the index reads items while the hub
// writes): a mutex guards the in-memory copy.
type Items struct {
	path string

	mu   sync.RWMutex
	file itemsFile
}

// OpenItems loads dir/items.json (an absent file is an empty store). A
// file that is not a store of this version is an error naming it: it is
// never overwritten silently (move it aside, and the store is rebuilt
// from the chat log).
func OpenItems(dir string) (*Items, error) {
	s := &Items{path: filepath.Join(dir, ItemsFile), file: itemsFile{Version: itemsVersion, Next: 1}}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open memory items: %w", err)
	}
	var f itemsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, &damagedError{path: s.path, problem: readProblem(b, err)}
	}
	if f.Version != itemsVersion {
		return nil, fmt.Errorf("open memory items: %s has version %d, this server reads %d", s.path, f.Version, itemsVersion)
	}
	s.file = f
	if s.file.Next == 0 && len(s.file.Items) == 0 && s.file.Applied == 0 {
		s.file.Next = 1
	}
	return s, nil
}

// Path is items.json's path.
func (s *Items) Path() string { return s.path }

// Applied is the seq up to which every memory_changed event is applied.
func (s *Items) Applied() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.file.Applied
}

// List returns a copy of the items, oldest first.
func (s *Items) List() []Item {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.file.Items)
}

// Len is the number of items.
func (s *Items) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.file.Items)
}

// Get returns the item id names: its id ("m3"), its number ("3") or the
// id it had before short ids.
func (s *Items) Get(id string) (Item, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i := s.find(id)
	if i < 0 {
		return Item{}, false
	}
	return s.file.Items[i], true
}

// find is the index of the item id names (see Get), -1 for none. An id
// and an old id never name two items (see nextLocked).
func (s *Items) find(id string) int {
	id = CanonicalID(id)
	if id == "" {
		return -1
	}
	return slices.IndexFunc(s.file.Items, func(it Item) bool { return it.ID == id || it.Old == id })
}

// Apply applies e to the items in memory if it is a memory_changed event
// newer than Applied, and reports whether an item changed. Events of other
// types, and older ones, only move Applied forward (or not at all). An
// event whose data cannot be read is an error and changes nothing. Save
// makes the change durable.
func (s *Items) Apply(e event.Event) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Seq != 0 && e.Seq <= s.file.Applied {
		return false, nil
	}
	if e.Type != event.MemoryChanged {
		s.file.Applied = max(s.file.Applied, e.Seq)
		return false, nil
	}
	if event.IsTombstone(e) {
		// A change whose text was erased: the erase's own memory_changed
		// (by "erase") follows it in the log. A save still took its id,
		// so that the ids of the items saved after it stay the same.
		var t event.TombstoneData
		if e.Decode(&t) == nil && (t.Action == event.MemorySaved || t.Action == event.MemoryConsolidated) && t.Item != "" {
			s.takeID(t.Item)
		}
		s.file.Applied = max(s.file.Applied, e.Seq)
		return false, nil
	}
	var d event.MemoryChangedData
	if err := e.Decode(&d); err != nil {
		return false, fmt.Errorf("memory_changed at seq %d: %w", e.Seq, err)
	}
	// As the log keeps it (UTC, milliseconds): the live store and one
	// replayed from the log after a restart, or on another node, agree.
	changed := s.apply(d, e.TS.Std().UTC().Truncate(time.Millisecond))
	s.file.Applied = max(s.file.Applied, e.Seq)
	return changed, nil
}

func (s *Items) apply(d event.MemoryChangedData, ts time.Time) bool {
	i := s.find(d.ID)
	switch d.Action {
	case event.MemorySaved, event.MemoryConsolidated:
		if i >= 0 || d.ID == "" {
			return false // applied before
		}
		it := Item{ID: s.nextLocked(), Text: d.Text, Source: d.Source, Door: d.Door, From: d.From, Created: ts, Updated: ts}
		if d.ID != it.ID {
			// Saved before short ids (its id is its event's seq), or by a
			// node whose store counted otherwise: the id it was given
			// keeps naming it.
			it.Old = d.ID
			if u, ok := s.file.Uses[d.ID]; ok {
				delete(s.file.Uses, d.ID)
				s.file.Uses[it.ID] = u
			}
		}
		n, _ := strconv.ParseInt(strings.TrimPrefix(it.ID, "m"), 10, 64)
		s.file.Next = n + 1
		s.file.Items = append(s.file.Items, it)
		return true
	case event.MemoryEdited:
		if i < 0 && d.By == ByErase && d.Source != "" && d.ID != "" {
			// The item's earlier events were erased (tombstones): the
			// erase's edit carries all there is of it.
			s.file.Items = append(s.file.Items, Item{ID: d.ID, Text: d.Text, Source: d.Source, Created: ts, Updated: ts})
			return true
		}
		if i < 0 {
			return false // deleted since
		}
		s.file.Items[i].Text, s.file.Items[i].Updated, s.file.Items[i].EditedBy = d.Text, ts, d.By
		return true
	case event.MemoryDeleted:
		if i < 0 {
			return false
		}
		delete(s.file.Uses, s.file.Items[i].ID)
		s.forget(s.file.Items[i])
		s.file.Items = slices.Delete(s.file.Items, i, i+1)
		return true
	}
	return false // an action of a later version: nothing this one knows to do
}

// Advance records that the chat log holds nothing for the items up to seq
// (a checkpoint, so that a restart need not read the log from the last
// change). Save makes it durable.
func (s *Items) Advance(seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.file.Applied = max(s.file.Applied, seq)
}

// Reset empties the store in memory (Applied 0): the chat log is then
// replayed from its start. For a store ahead of its log (the log was
// replaced). Save makes it durable.
func (s *Items) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.file = itemsFile{Version: itemsVersion, Migrated: s.file.Migrated, Next: 1, Forgotten: s.file.Forgotten}
}

// Use is how often an item was used, and when last.
type Use struct {
	Count int       `json:"count"`
	Last  time.Time `json:"last"`
}

// Use counts one more use at now of each of ids (the agent found the item
// by a search); unknown ids are skipped. It reports whether any counted.
// Uses are kept by the next Save: they order the items for the context
// (see ForContext) and are not in the chat log.
func (s *Items) Use(now time.Time, ids ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	used := false
	for _, id := range ids {
		i := s.find(id)
		if i < 0 {
			continue
		}
		id = s.file.Items[i].ID
		if s.file.Uses == nil {
			s.file.Uses = map[string]Use{}
		}
		u := s.file.Uses[id]
		u.Count++
		u.Last = now
		s.file.Uses[id] = u
		used = true
	}
	return used
}

// Uses returns how often and when last the item id was used.
func (s *Items) Uses(id string) Use {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.file.Uses[id]
}

// ForContext returns the items ranked for a turn's context, first the
// most recently touched — saved, edited or found by the agent's search —
// then, between equals, the most used; and how many of them fit in
// maxTokens when rendered with Doc (a token counted as 4 bytes, plus 4
// per item), at least none. maxTokens <= 0 fits all.
func (s *Items) ForContext(maxTokens int) (ranked []Item, fit int) {
	s.mu.RLock()
	ranked = slices.Clone(s.file.Items)
	uses := make(map[string]Use, len(s.file.Uses))
	for k, v := range s.file.Uses {
		uses[k] = v
	}
	s.mu.RUnlock()
	touched := func(it Item) time.Time {
		if u := uses[it.ID]; u.Last.After(it.Updated) {
			return u.Last
		}
		return it.Updated
	}
	slices.SortStableFunc(ranked, func(a, b Item) int {
		if c := touched(b).Compare(touched(a)); c != 0 {
			return c
		}
		return uses[b.ID].Count - uses[a.ID].Count
	})
	if maxTokens <= 0 {
		return ranked, len(ranked)
	}
	used := 0
	for fit < len(ranked) {
		used += (len(Doc(ranked[fit]))+3)/4 + 4
		if used > maxTokens {
			break
		}
		fit++
	}
	return ranked, fit
}

// Migrated reports whether long_term.md was migrated into items.
func (s *Items) Migrated() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.file.Migrated
}

// SetMigrated marks long_term.md as migrated. Save makes it durable.
func (s *Items) SetMigrated() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.file.Migrated = true
}

// Save replaces items.json (0600) atomically with the items in memory: a
// failed write leaves the old file, and the next Save writes everything.
func (s *Items) Save() error {
	s.mu.RLock()
	f := s.file
	f.Items = slices.Clone(f.Items)
	f.Forgotten = slices.Clone(f.Forgotten)
	if f.Items == nil {
		f.Items = []Item{}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	s.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("save memory items: %w", err)
	}
	if err := atomicfile.Write(s.path, append(b, '\n'), filePerm); err != nil {
		return fmt.Errorf("save memory items: %w", err)
	}
	return nil
}

// Doc is item it as the search index and the agent's context show it: its
// id in brackets, then its text ("[m42] My car is a blue Volvo."), so
// that a search hit names the item to edit or forget (see IDsIn).
func Doc(it Item) string { return "[" + it.ID + "] " + it.Text }

// docID matches the id Doc puts in front of an item's text.
var docID = regexp.MustCompile(`\[(m[0-9]+)\]`)

// IDsIn returns the item ids named in text as Doc writes them, in order,
// each once.
func IDsIn(text string) []string {
	var ids []string
	for _, m := range docID.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(ids, m[1]) {
			ids = append(ids, m[1])
		}
	}
	return ids
}
