package event

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestTombstoneKeepsPlaceLosesContent(t *testing.T) {
	e := New(User, "t7", time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC),
		UserData{Channel: ChannelWeb, From: "zoe@example.com", Content: "the wifi password is hunter2"})
	e.Seq = 7
	d := ErasedOf(e, "web")
	b, _ := json.Marshal(d)
	var back ErasedData
	if err := json.Unmarshal(b, &back); err != nil || back != d {
		t.Fatalf("erased data round trip: %v %+v", err, back)
	}
	ts := Tombstone(back)
	if ts.Seq != 7 || ts.Type != User || ts.Turn != "t7" || ts.TS != e.TS {
		t.Fatalf("tombstone moved: %+v", ts)
	}
	line, _ := json.Marshal(ts)
	if strings.Contains(string(line), "hunter2") || strings.Contains(string(line), "zoe@") {
		t.Fatalf("tombstone keeps content: %s", line)
	}
	if !IsTombstone(ts) || IsTombstone(e) {
		t.Fatal("IsTombstone wrong")
	}
	if m, ok := ts.Message(); !ok || m.Content != "" || m.Channel != ChannelWeb {
		t.Fatalf("tombstone reads as %+v %v", m, ok)
	}
	again, _ := json.Marshal(Tombstone(ErasedOf(e, "web")))
	if string(again) != string(line) {
		t.Fatal("two tombstones of one erasure differ")
	}
}
