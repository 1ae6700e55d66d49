package web_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/channels/ws"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdisk"
	"github.com/frontdesk-hq/frontdesk/web"
)

// TestUploadToFailingDisk: an upload the store cannot write answers like
// every other write — 507 storage_full on a full disk (a 1 MiB tmpfs as
// root), 503 storage_error otherwise (a read-only directory) — not a 500,
// and leaves no part of the file behind. Once the disk heals it works.
func TestUploadToFailingDisk(t *testing.T) {
	disk := testdisk.New(t)
	code, status := hub.StorageFailed, http.StatusServiceUnavailable
	if disk.Full {
		code, status = hub.StorageFull, http.StatusInsufficientStorage
	}
	dir := t.TempDir() // the chat log stays writable: only the store's disk fails
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	storeDir := filepath.Join(disk.Dir, "attachments")
	store, err := attachments.Open(storeDir, fileMax)
	if err != nil {
		t.Fatal(err)
	}
	m := hub.New(hub.Config{DataDir: dir, Attachments: store, MaxAttachments: 10}, lg, &agent.Demo{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	wsh := ws.New(m, ws.Options{})
	srv := httptest.NewServer(web.Handler(m, web.Options{WS: wsh, Attachments: store, AttachmentMaxBytes: fileMax}))
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
		wsh.Wait(context.Background())
		lg.Close()
	})
	e := &fileEnv{hub: m, srv: srv, store: store, dir: storeDir}
	// The hub runs (session.json read) before the disk fails.
	if _, err := m.Info(context.Background()); err != nil {
		t.Fatal(err)
	}

	disk.Fail()
	file := make([]byte, 64<<10) // many pages: it cannot fit in the tmpfs's last one
	rand.Read(file)
	for name, up := range map[string]func() reply{
		"raw":       func() reply { return e.uploadRaw(t, bytes.NewReader(file), "application/octet-stream", "data.bin") },
		"multipart": func() reply { return e.uploadMultipart(t, file, "data.bin") },
	} {
		r := up()
		msg, _ := r.body["message"].(string)
		if r.status != status || r.body["code"] != code || !strings.Contains(msg, "nothing was saved") {
			t.Errorf("%s upload to a failing disk = %d %s, want %d %s", name, r.status, r.raw, status, code)
		}
	}
	var left []string
	filepath.WalkDir(storeDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, p)
		}
		return err
	})
	if len(left) > 0 {
		t.Errorf("a failed upload left files behind: %v", left)
	}

	disk.Heal()
	if r := e.uploadRaw(t, bytes.NewReader(file), "application/octet-stream", "data.bin"); r.status != http.StatusCreated {
		t.Fatalf("upload once the disk healed = %d %s", r.status, r.raw)
	}
}
