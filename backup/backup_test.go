package backup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testchat"
)

// layoutOf is the default layout of the data directory dir.
func layoutOf(dir string) Layout {
	return Layout{DataDir: dir, ChatLog: "chat_history.ndjson", Memory: "memory", Index: filepath.Join(dir, "search.db")}
}

// TestBackupRotationDuringCopy rotates the chat log at each step of the
// backup's copy: the restored log is always whole — seq 1 up to at least
// where the log stood when the live file was copied, with no gap and no
// line twice.
func TestBackupRotationDuringCopy(t *testing.T) {
	t.Parallel() // its own data directory and binary; it mostly waits on the server
	tests := []struct {
		name      string
		at        string // the backup step at which to rotate
		rotations int
		partial   bool // leave half a line at the end of the live file
	}{
		{"no rotation", "", 0, false},
		{"partial last line", "", 0, true},
		{"rotation after the parts were copied", "parts-copied", 1, false},
		{"two rotations after the parts were copied", "parts-copied", 2, false},
		{"rotation after the live file was opened", "live-opened", 1, false},
		{"rotation after the live file was copied", "live-copied", 1, false},
		{"two rotations after the live file was copied", "live-copied", 2, false},
	}
	filler := strings.Repeat("x", 300_000)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			livePath := filepath.Join(data, "chat_history.ndjson")
			lg, err := history.Open(history.Options{Path: livePath, RotateMB: 1, Fsync: history.FsyncNever})
			if err != nil {
				t.Fatal(err)
			}
			defer lg.Close()
			var seq int64
			add := func() {
				seq++
				e := event.New(event.User, fmt.Sprint("t", seq), time.Now(), event.UserData{Channel: "web", Content: filler})
				e.Seq = seq
				if err := lg.Append(e); err != nil {
					t.Fatal(err)
				}
			}
			parts := func() int {
				ps, err := history.Parts(livePath)
				if err != nil {
					t.Fatal(err)
				}
				return len(ps) - 1
			}
			// Rotate n times, with a line in each new live file.
			rotate := func(n int) {
				for range n {
					want := parts() + 1
					for parts() < want {
						add()
					}
				}
			}
			rotate(1)
			add()
			if tc.partial {
				f, _ := os.OpenFile(livePath, os.O_WRONLY|os.O_APPEND, 0)
				f.WriteString(`{"v":1,"seq":`)
				f.Close()
			}
			atLeast := seq // appended before the live file was read
			step = func(step string) {
				if step == tc.at {
					rotate(tc.rotations)
					// Opened after these rotations, the live file holds
					// their lines too. Rotated after it was opened, the
					// copy ends where that file did.
					if step == "parts-copied" {
						atLeast = seq
					}
				}
			}
			defer func() { step = func(string) {} }()

			archive := filepath.Join(dir, "b.tar.gz")
			if _, err := Write(layoutOf(data), archive, "test"); err != nil {
				t.Fatal(err)
			}
			restored := filepath.Join(dir, "restored")
			if _, err := Restore(archive, layoutOf(restored), Limits{}); err != nil {
				t.Fatal(err)
			}
			evs := testchat.ReadAll(t, filepath.Join(restored, "chat_history.ndjson"))
			for i, e := range evs {
				if e.Seq != int64(i+1) {
					t.Fatalf("restored log: event %d has seq %d, want %d (a gap or a line twice)", i, e.Seq, i+1)
				}
			}
			if got := int64(len(evs)); got < atLeast || got > seq {
				t.Fatalf("restored log ends at seq %d, want %d to %d", got, atLeast, seq)
			}
		})
	}
}
