package hub

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// startItemsNode is startNode with a memory item store of the node's own.
func startItemsNode(t *testing.T, s *memStream, c *memCluster) *testHub {
	t.Helper()
	h, _ := joinNode(t, s, c, withItems(t, Config{}), testagent.NewGate())
	return h
}

// A memory change made on a follower is made by the holder (it writes the
// log), and every node's item store applies it from the log: all agree,
// ids included; refusals cross the wire as the same errors.
func TestMemoryOnClusterNodesAgrees(t *testing.T) {
	s, c := newMemStream(), &memCluster{}
	a := startItemsNode(t, s, c)
	b := startItemsNode(t, s, c)
	if _, err := b.MemorySave(ctxT(t), "too early", Actor{Door: memory.SourceWeb}); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("save with no leader: %v, want ErrNoLeader", err)
	}
	c.lead(t, a, s)
	subB, _ := subscribe(t, b, 0)

	it, err := b.MemorySave(ctxT(t), "The user's car is a blue Volvo.", Actor{Door: memory.SourceWeb})
	if err != nil || it.ID == "" || it.Source != memory.SourceWeb {
		t.Fatalf("save through the follower: %+v, %v", it, err)
	}
	if d := memoryChange(t, subB); d.Action != event.MemorySaved || d.ID != it.ID {
		t.Fatalf("follower saw %+v", d)
	}
	if _, err := b.MemoryEdit(ctxT(t), it.ID, "The user's car is a red Volvo.", Actor{Door: "web"}); err != nil {
		t.Fatal(err)
	}
	memoryChange(t, subB)
	if err := b.MemoryForget(ctxT(t), "m999", Actor{Door: "web"}); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("forget unknown through the follower: %v, want memory.ErrNotFound", err)
	}
	if _, err := b.MemorySave(ctxT(t), " ", Actor{Door: "web"}); !errors.Is(err, ErrEmptyMemory) {
		t.Fatalf("empty text: %v", err)
	}
	onA, _ := a.MemoryList(ctxT(t))
	onB, _ := b.MemoryList(ctxT(t))
	if len(onA) != 1 || onA[0].Text != "The user's car is a red Volvo." || !reflect.DeepEqual(onA, onB) {
		t.Fatalf("holder %+v, follower %+v", onA, onB)
	}
	b.stop()
	onDisk, err := memory.OpenItems(filepath.Join(b.dir, "memory"))
	if err != nil || !reflect.DeepEqual(onDisk.List(), onA) {
		t.Fatalf("follower's items.json %+v, %v; want %+v", onDisk.List(), err, onA)
	}
}
