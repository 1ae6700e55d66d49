package event

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The wire example pinned by DESIGN.md, byte for byte.
const pinned = `{"seq":42,"ts":"2026-11-22T10:00:00.123Z","type":"user","turn":"t42","data":{"channel":"web","from":"","content":"hello","client_msg_id":"c-1"}}`

func TestWireFormatIsPinned(t *testing.T) {
	ts := time.Date(2026, 11, 22, 11, 0, 0, 123456789, time.FixedZone("CET", 3600))
	e := New(User, "t42", ts, UserData{Channel: ChannelWeb, Content: "hello", ClientMsgID: "c-1"})
	e.Seq = 42
	b, err := json.Marshal(e)
	if err != nil || string(b) != pinned {
		t.Fatalf("marshal = %s, %v\nwant    %s", b, err, pinned)
	}
	var back Event
	if err := json.Unmarshal([]byte(pinned), &back); err != nil {
		t.Fatal(err)
	}
	if b2, _ := json.Marshal(back); string(b2) != pinned {
		t.Fatalf("round trip = %s", b2)
	}
	var d UserData
	if err := back.Decode(&d); err != nil || d.ClientMsgID != "c-1" {
		t.Fatalf("decode data: %+v, %v", d, err)
	}
	// Log lines carry "v":1 first; per-connection replies carry no seq.
	e.V = LogVersion
	if b, _ := json.Marshal(e); string(b[:7]) != `{"v":1,` {
		t.Errorf("log line starts %s", b[:7])
	}
	c, _ := json.Marshal(New(Synced, "", ts, SyncedData{LastSeq: 42, Gapless: true}))
	if want := `{"ts":"2026-11-22T10:00:00.123Z","type":"synced","data":{"last_seq":42,"gapless":true}}`; string(c) != want {
		t.Errorf("synced = %s, want %s", c, want)
	}
}

func TestPersistedTypes(t *testing.T) {
	for typ, want := range map[Type]bool{
		User: true, Assistant: true, ToolCall: true, ToolResult: true, TurnEnd: true, Notice: true, Reset: true,
		Delta: false, Status: false, Connected: false, Synced: false, Busy: false, Error: false,
	} {
		if typ.Persisted() != want {
			t.Errorf("%s.Persisted() = %v, want %v", typ, !want, want)
		}
	}
}

func TestTimeAcceptsAnyRFC3339(t *testing.T) {
	for _, s := range []string{`"2026-11-22T10:00:00Z"`, `"2026-11-22T11:00:00.5+01:00"`} {
		var tm Time
		if err := json.Unmarshal([]byte(s), &tm); err != nil || tm.Std().UTC().Hour() != 10 {
			t.Errorf("%s: %v %v", s, tm.Std(), err)
		}
	}
	var tm Time
	if err := json.Unmarshal([]byte(`"yesterday"`), &tm); err == nil {
		t.Error("accepted a non-time")
	}
}

func TestMessage(t *testing.T) {
	ts := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		e    Event
		want Message
		ok   bool
	}{
		{"user", New(User, "t1", ts, UserData{Channel: "email", From: "a@b.c", Content: "hi"}), Message{Channel: "email", From: "a@b.c", Content: "hi"}, true},
		{"attachments", New(User, "t1", ts, UserData{Channel: "web", Content: "see", Attachments: []Attachment{{SHA256: "ab", Name: "a.png", Type: "image/png", Size: 3}}}),
			Message{Channel: "web", Content: "see", Attachments: []Attachment{{SHA256: "ab", Name: "a.png", Type: "image/png", Size: 3}}}, true},
		{"assistant", New(Assistant, "t1", ts, AssistantData{Content: "yo", Partial: true}), Message{Content: "yo", Partial: true}, true},
		{"notice", New(Notice, "", ts, TextData{Text: "x"}), Message{}, false},
		{"bad payload", Event{Type: User, Data: []byte(`{"content":1}`)}, Message{}, false},
		{"no payload", Event{Type: Assistant}, Message{}, false},
	} {
		got, ok := tc.e.Message()
		if !reflect.DeepEqual(got, tc.want) || ok != tc.ok {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
