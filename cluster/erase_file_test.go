package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"
)

// An erased message's attachment leaves the object store on every node:
// once each node has erased the file (as each does when it copies the
// erased event and no other message refers to it), no file of any node's
// JetStream store holds its bytes, and the store no longer has it. A
// second erase, of a file already gone, is no error.
func TestEraseFileThreeNodes(t *testing.T) {
	nodes := startCluster(t, 3, time.Second)
	ctx := context.Background()
	const word = "okapiwhistle77"
	// Over one chunk (128 KiB), so that every chunk must go.
	content := bytes.Repeat([]byte("attachment holding "+word+"\n"), 10000)
	sum := sha256.Sum256(content)
	sha := hex.EncodeToString(sum[:])
	if err := nodes[0].PutFile(ctx, sha, bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	for _, x := range nodes {
		waitFor(t, 10*time.Second, x.Name()+" holds the file", func() bool {
			return len(grepDir(t, x.cfg.Embedded.StoreDir, word)) > 0
		})
	}
	for _, x := range nodes {
		if err := x.EraseFile(ctx, sha); err != nil {
			t.Fatalf("%s: EraseFile: %v", x.Name(), err)
		}
	}
	for _, x := range nodes {
		waitFor(t, 10*time.Second, x.Name()+"'s store rid of the file", func() bool {
			return len(grepDir(t, x.cfg.Embedded.StoreDir, word)) == 0
		})
	}
	var buf bytes.Buffer
	if err := nodes[1].GetFile(ctx, sha, &buf); err == nil {
		t.Errorf("the file is still served after the erase (%d bytes)", buf.Len())
	}
	if err := nodes[2].EraseFile(ctx, sha); err != nil {
		t.Errorf("erasing a file already gone: %v", err)
	}
	if err := nodes[0].EraseFile(ctx, "nope"); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("a bad sha: %v, want an error", err)
	}
}
