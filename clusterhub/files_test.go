package clusterhub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// twoNodes returns the attachment stores of two nodes sharing one NATS
// server: a runs it embedded (R1), b connects to it by URL.
func twoNodes(t *testing.T) (a, b *Files) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const secret = "test-secret-0123456789" // a client port needs one
	na, err := cluster.Start(ctx, cluster.Config{Node: "a", Embedded: cluster.Embedded{Listen: addr, StoreDir: t.TempDir(), Secret: secret}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(na.Close)
	nb, err := cluster.Start(ctx, cluster.Config{Node: "b", URL: "nats://" + addr, Token: secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Close)
	store := func() FileStore {
		s, err := attachments.Open(t.TempDir(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return &Files{Local: store(), Node: na}, &Files{Local: store(), Node: nb}
}

// A file put on one node is found on the other with its name and type,
// fetched into that node's store once; an id nobody stored is
// fs.ErrNotExist and a malformed one fs.ErrInvalid, as for the local
// store; Prefetch fetches a logged input's files; with NATS gone an upload
// is refused as no_leader.
func TestFilesAcrossNodes(t *testing.T) {
	a, b := twoNodes(t)
	content := []byte("%PDF-1.4 a small pdf, or its first bytes\n")
	put, err := a.Put(bytes.NewReader(content), "report.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.Local.Path(put.SHA256)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("b has the file before it was asked: %v", err)
	}
	got, err := b.Stat(put.SHA256)
	if err != nil || got != put {
		t.Fatalf("b: Stat = %+v, %v; want %+v", got, err, put)
	}
	f, _, err := b.Open(put.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(body, content) {
		t.Errorf("b read %q", body)
	}
	if p := b.Path(put.SHA256); filepath.Dir(filepath.Dir(p)) == "" || !strings.HasSuffix(p, put.SHA256) {
		t.Errorf("b: Path %q", p)
	}
	if _, err := b.Stat(strings.Repeat("0", 64)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an id nobody stored: %v, want fs.ErrNotExist", err)
	}
	if _, err := b.Stat("../../etc/passwd"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("a malformed id: %v, want fs.ErrInvalid", err)
	}

	// b puts, a learns of it from the log only.
	other, err := b.Put(strings.NewReader("minutes of the meeting"), "minutes.txt")
	if err != nil {
		t.Fatal(err)
	}
	e := event.New(event.User, "t1", time.Now(), event.UserData{Channel: "web", Content: "see", Attachments: []event.Attachment{other}})
	a.Prefetch(e)
	// Its record (the name) is written just after the file.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if got, err := a.Local.Stat(other.SHA256); err == nil && got == other {
			break
		}
		if time.Now().After(end) {
			got, err := a.Local.Stat(other.SHA256)
			t.Fatalf("Prefetch did not fetch the logged input's file within 10 s: %+v, %v", got, err)
		}
	}

	a.Node.Close() // the NATS server goes: b cannot store anything
	start := time.Now()
	_, err = b.Put(strings.NewReader(fmt.Sprint("late ", time.Now())), "late.txt")
	if !errors.Is(err, hub.ErrNoLeader) {
		t.Errorf("upload without NATS: %v, want hub.ErrNoLeader", err)
	}
	if d := time.Since(start); d > putWait+time.Second {
		t.Errorf("the refusal took %v", d)
	}
}
