package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// OpenItemsMending keeps a damaged items.json aside byte for byte and
// starts empty at applied seq 0 (the hub then replays the whole log); a
// sound file is read as it is; a file of another version is still an
// error and stays where it is.
func TestOpenItemsMending(t *testing.T) {
	now := time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, content, problem string
		damaged, fails         bool
	}{
		{"cut short", `{"version":1,"applied_seq":9,"items":[{"id":"m3"`, "not readable JSON", true, false},
		{"empty", "", "the file is empty", true, false},
		{"garbage", "\x00\x01 not json", "not readable JSON", true, false},
		{"sound", `{"version":1,"applied_seq":4,"items":[{"id":"m3","text":"a","source":"web"}]}`, "", false, false},
		{"another version", `{"version":2,"applied_seq":4,"items":[]}`, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ItemsFile)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			s, d, err := OpenItemsMending(dir, now)
			switch {
			case tc.fails:
				if err == nil {
					t.Fatalf("opened a file of another version")
				}
				if b, _ := os.ReadFile(path); string(b) != tc.content {
					t.Fatalf("the file was changed: %q", b)
				}
				return
			case err != nil:
				t.Fatal(err)
			case !tc.damaged:
				if d != nil || s.Len() != 1 || s.Applied() != 4 {
					t.Fatalf("sound file: damage %v, %d items, applied %d", d, s.Len(), s.Applied())
				}
				return
			}
			if d == nil || !strings.Contains(d.Problem, tc.problem) || d.File != ItemsFile+".damaged-20261126T220000Z" {
				t.Fatalf("damage %+v, want %q kept as items.json.damaged-20261126T220000Z", d, tc.problem)
			}
			if b, err := os.ReadFile(filepath.Join(dir, d.File)); err != nil || string(b) != tc.content {
				t.Fatalf("kept aside %q, %v; want the bytes as they were", b, err)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("items.json still there: %v", err)
			}
			if s.Len() != 0 || s.Applied() != 0 {
				t.Fatalf("store: %d items, applied %d; want empty at 0", s.Len(), s.Applied())
			}
			if !strings.Contains(d.Message(), "rebuilt from the chat log") {
				t.Fatalf("message %q", d.Message())
			}
		})
	}
}
