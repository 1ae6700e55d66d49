package hub

import (
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// TestRecordPersonChange: a person change is a persisted person_changed
// event in the log, seen by subscribers; a change without an action or
// person is refused and nothing is logged.
func TestRecordPersonChange(t *testing.T) {
	h := startHub(t, Config{}, testagent.NewGate())
	sub, _ := subscribe(t, h, 0)
	if err := h.RecordPersonChange(ctxT(t), event.PersonChangedData{Person: "ann"}); err == nil {
		t.Fatal("a change without an action was taken")
	}
	d := event.PersonChangedData{Action: event.TokenAdded, Person: "ann", By: "cli", Label: "laptop", Credential: "0123456789ab"}
	if err := h.RecordPersonChange(ctxT(t), d); err != nil {
		t.Fatal(err)
	}
	e := next(t, sub)
	if e.Type != event.PersonChanged || e.Seq != 1 {
		t.Fatalf("got %+v", e)
	}
	var got event.PersonChangedData
	if err := e.Decode(&got); err != nil || got.Credential != d.Credential || got.By != "cli" {
		t.Fatalf("data %+v %v", got, err)
	}
	if info, err := h.Info(ctxT(t)); err != nil || info.LastSeq != 1 {
		t.Fatalf("last seq %+v %v: the refused change was logged?", info, err)
	}
}

// TestRecordPersonChangeForwarded: on a cluster a node that does not hold
// the lease forwards the change; the holder appends it once.
func TestRecordPersonChangeForwarded(t *testing.T) {
	s, c := newMemStream(), &memCluster{}
	a, _ := startNode(t, s, c, testagent.NewGate())
	b, _ := startNode(t, s, c, testagent.NewGate())
	c.lead(t, a, s)
	if err := b.RecordPersonChange(ctxT(t), event.PersonChangedData{Action: event.TokenRevoked, Person: "bo", By: "cli"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range s.all() {
		if e.Type == event.PersonChanged {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d person_changed events in the stream", n)
	}
}
