package event

import "encoding/json"

// Erased: a person erased the event at ErasedData.Seq (a user or
// assistant message; or, when a memory item is forgotten, the events that
// carried its text). The erased event keeps its seq, ts, type and turn —
// a seq a client saw never names another event — and loses its content
// everywhere it was written: every copy of it becomes Tombstone(d).
const Erased Type = "erased"

// ErasedData is the payload of an erased event. Seq names the event that
// was erased and By who erased it (a door: web, console, api; or "forget"
// for the events of a forgotten memory item). Type, TS, Turn and Channel
// are the erased event's own, so that any node — even one that finds only
// a hole where the event was — writes the same tombstone.
type ErasedData struct {
	Seq int64  `json:"seq"`
	By  string `json:"by"`
	// Person is the people id of whoever erased it (also on tombstones'
	// source: not written into the tombstone, which every node rebuilds
	// from the erased event alone).
	Person  string `json:"person,omitempty"`
	Type    Type   `json:"type"`
	TS      Time   `json:"ts"`
	Turn    string `json:"turn,omitempty"`
	Channel string `json:"channel,omitempty"`
	// Item and Action are an erased memory_changed event's item id and
	// action (no text): a store rebuilt from the log still counts the
	// ids a save took (see memory.Items.Apply).
	Item   string `json:"item,omitempty"`
	Action string `json:"action,omitempty"`
}

// TombstoneData is the payload left where an erased event was: no content,
// only the mark and who erased it (and, for a user message, its door).
type TombstoneData struct {
	Erased  bool   `json:"erased"`
	By      string `json:"erased_by"`
	Channel string `json:"channel,omitempty"`
	// Content is always "": a client that reads user.content or
	// assistant.content finds an empty string, never a missing field.
	Content string `json:"content"`
	// Item and Action: see ErasedData (memory_changed tombstones only).
	Item   string `json:"item,omitempty"`
	Action string `json:"action,omitempty"`
}

// ErasedOf describes the erasure of e by by.
func ErasedOf(e Event, by string) ErasedData {
	d := ErasedData{Seq: e.Seq, By: by, Type: e.Type, TS: e.TS, Turn: e.Turn}
	if m, ok := e.Message(); ok {
		d.Channel = m.Channel
	}
	var mc MemoryChangedData
	if e.Type == MemoryChanged && e.Decode(&mc) == nil {
		d.Item, d.Action = mc.ID, mc.Action
	}
	return d
}

// Tombstone is the event that stands where the erased one was: same seq,
// ts, type and turn, data TombstoneData. Every node builds it from the
// erased event alone, so every copy is byte for byte the same.
func Tombstone(d ErasedData) Event {
	b, _ := json.Marshal(TombstoneData{Erased: true, By: d.By, Channel: d.Channel, Item: d.Item, Action: d.Action})
	return Event{V: LogVersion, Seq: d.Seq, TS: d.TS, Type: d.Type, Turn: d.Turn, Data: b}
}

// IsTombstone reports whether e is what is left of an erased event.
func IsTombstone(e Event) bool {
	var d struct {
		Erased bool `json:"erased"`
	}
	return len(e.Data) > 0 && json.Unmarshal(e.Data, &d) == nil && d.Erased
}
