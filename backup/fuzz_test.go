package backup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRestore: whatever the archive, a restore never panics, never writes
// outside the target, and one that fails leaves nothing behind.
func FuzzRestore(f *testing.F) {
	f.Add(gzMember(f, append(tarBytes(f, [2]string{"session.json", "{}"}, [2]string{"memory/long_term.md", "- x\n"}), make([]byte, 1024)...)))
	f.Add(gzMember(f, append(tarBytes(f), make([]byte, 1024)...)))
	f.Add(gzMember(f, tarBytes(f, [2]string{"../x", "escaped"})))
	f.Add([]byte("not gzip"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		archive := filepath.Join(dir, "b.tar.gz")
		if err := os.WriteFile(archive, b, 0o600); err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, "data")
		_, err := Restore(archive, layoutOf(target), Limits{Attachment: 1 << 20, LogPart: 1 << 20, State: 1 << 20, Schedules: 1 << 20, Other: 1 << 20})
		entries, _ := os.ReadDir(dir)
		if err != nil {
			if _, serr := os.Stat(target); !errors.Is(serr, fs.ErrNotExist) || len(entries) != 1 {
				t.Fatalf("a failed restore (%v) left %d entries in its parent", err, len(entries))
			}
			return
		}
		if len(entries) != 2 {
			t.Fatalf("a restore left %d entries in its parent, want the archive and the data directory", len(entries))
		}
		filepath.WalkDir(target, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !d.Type().IsRegular() {
				t.Fatalf("restored %s of type %v", p, d.Type())
			}
			return err
		})
	})
}
