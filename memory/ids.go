package memory

import (
	"slices"
	"strconv"
	"strings"
)

// Short item ids (see Item): "m" and a counter the store keeps in
// items.json ("next_id"), given by the node that writes the log and
// carried in the memory_changed event (see apply).

// CanonicalID is id as items carry it: "3" and "M3" are "m3". Anything
// else is returned as is (an unknown id), "" for empty.
func CanonicalID(id string) string {
	n := strings.TrimPrefix(strings.TrimPrefix(id, "m"), "M")
	if n == "" || strings.Trim(n, "0123456789") != "" || n[0] == '0' {
		return id
	}
	return "m" + n
}

// NextID is the id the next saved item gets: "m" and the store's counter,
// skipping a number an item's old id still uses, so that an id names one
// item only. The holder puts it in the memory_changed event, and every
// node applying the event reaches the same counter (see apply). The hub's
// goroutine, between changes.
func (s *Items) NextID() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.nextLocked()
}

func (s *Items) nextLocked() string {
	n := max(s.file.Next, 1)
	for {
		id := "m" + strconv.FormatInt(n, 10)
		if !slices.ContainsFunc(s.file.Items, func(it Item) bool { return it.Old == id || it.ID == id }) {
			return id
		}
		n++
	}
}

// NeedsRenumber reports whether the file was written before short ids:
// its items have the ids of their events' seqs. Renumber, then replaying
// the chat log from its start, gives them short ones.
func (s *Items) NeedsRenumber() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.file.Next == 0
}

// Renumber empties the store in memory (Applied 0, the counter at 1) for
// the chat log to be replayed from its start: each item saved gets the
// next short id and keeps its old one (Old); uses and the migration mark
// stay. Save makes it durable.
func (s *Items) Renumber() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.file.Items, s.file.Applied, s.file.Next = nil, 0, 1
}

// takeID moves the counter past the id a save whose event was erased
// took: the next save gets the id it got when the log was written.
func (s *Items) takeID(id string) {
	if id != s.nextLocked() {
		return // saved before short ids, or counted otherwise: nothing to keep in step
	}
	n, _ := strconv.ParseInt(strings.TrimPrefix(id, "m"), 10, 64)
	s.file.Next = n + 1
}
