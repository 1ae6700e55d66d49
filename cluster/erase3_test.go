package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// On three nodes, once each node forgot the erased message (as each does
// when it copies the erased event), no file of any node's JetStream store
// holds its text: not the stream's blocks, not the replication log.
func TestForgetThreeNodes(t *testing.T) {
	nodes := startCluster(t, 3, time.Second)
	ctx := context.Background()
	const word = "zanzibarquokka42"
	evs := []event.Event{msg(1, "hello"), msg(2, "the code is "+word), msg(3, "bye")}
	for _, e := range evs {
		if err := nodes[0].Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range nodes {
		if got := grepDir(t, x.cfg.Embedded.StoreDir, word); len(got) == 0 {
			t.Fatalf("%s: the word is in no file before the erase: the test proves nothing", x.Name())
		}
	}
	d := event.ErasedOf(evs[1], "web")
	for _, x := range nodes {
		if err := x.Forget(ctx, d); err != nil {
			t.Fatalf("%s: Forget: %v", x.Name(), err)
		}
	}
	for _, x := range nodes {
		waitFor(t, 10*time.Second, x.Name()+"'s store rid of the word", func() bool {
			return len(grepDir(t, x.cfg.Embedded.StoreDir, word)) == 0
		})
		if e, err := x.Interior(ctx, 2); err != nil || !event.IsTombstone(e) {
			t.Errorf("%s: Interior(2): got %+v, %v; want the tombstone", x.Name(), e, err)
		}
	}
}

// BenchmarkForget measures one node's share of an erase on three nodes:
// the record, the secure delete and the snapshot of its replica (the log
// holds b.N+1000 small events).
func BenchmarkForget(b *testing.B) {
	nodes := startCluster(b, 3, time.Second)
	n := nodes[0]
	ctx := context.Background()
	for seq := int64(1); seq <= int64(b.N)+1000; seq++ {
		if err := n.Append(ctx, msg(seq, "message number "+time.Duration(seq).String())); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		e := msg(int64(i+1), "")
		if err := n.Forget(ctx, event.ErasedOf(e, "web")); err != nil {
			b.Fatal(err)
		}
	}
}
