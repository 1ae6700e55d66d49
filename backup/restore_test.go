package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// gzMember is one gzip member holding b. A gzip file may be several
// members one after the other; readers see their contents joined.
func gzMember(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := gz.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tarBytes is the raw tar stream of a manifest and of entries (name →
// body), without its end-of-archive blocks.
func tarBytes(t testing.TB, entries ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	m, _ := json.Marshal(Manifest{Format: Format, ChatLog: "chat_history.ndjson", Memory: "memory"})
	for _, e := range append([][2]string{{ManifestName, string(m)}}, entries...) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e[0], Mode: 0o600, Size: int64(len(e[1]))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e[1]))
	}
	tw.Flush()
	return buf.Bytes()
}

// writeBomb writes a valid backup whose entry name holds size bytes of
// zeros, after the given small entries. The zeros are one gzip member of
// 1 MiB repeated: a GiB costs about 1 MB of archive and no time, and
// nothing near that size is ever held or written by the test.
func writeBomb(t *testing.T, archive, name string, size int64, before ...[2]string) {
	t.Helper()
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: size}); err != nil {
		t.Fatal(err)
	}
	f.Write(gzMember(t, append(tarBytes(t, before...), hdr.Bytes()[:512]...)))
	const chunk = 1 << 20
	zeros := gzMember(t, make([]byte, chunk))
	for n := size; n > 0; n -= chunk {
		if n < chunk {
			f.Write(gzMember(t, make([]byte, n)))
			break
		}
		f.Write(zeros)
	}
	// Padding to a whole block, then tar's end: two zero blocks.
	f.Write(gzMember(t, make([]byte, (512-size%512)%512+1024)))
}

// listTree lists everything under dir with its size.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		out = append(out, fmt.Sprintf("%s %d", strings.TrimPrefix(p, dir), fi.Size()))
		return nil
	})
	return out
}

// TestRestoreRefusesBombs: an archive entry larger than its place in the
// data directory can be is refused before anything is written — the
// data directory stays absent (or empty), no temporary directory is
// left — and at once: the GiBs are never expanded.
func TestRestoreRefusesBombs(t *testing.T) {
	small := Limits{Attachment: 1 << 20, LogPart: 64 << 20}
	tests := []struct {
		name    string
		entry   string
		size    int64
		lim     Limits
		wantErr string
	}{
		{"3 GiB session.json", "session.json", 3 << 30, Limits{}, "1.0 MiB allowed for a state file"},
		{"3 GiB memory file", "memory/long_term.md", 3 << 30, Limits{}, "1024.0 MiB allowed for a memory, audit or email file"},
		{"attachment over attachments.max_bytes", "attachments/ab/ab" + strings.Repeat("0", 62), 1<<20 + 1, small, "attachments.max_bytes"},
		{"gzipped chat log part of 3 GiB", "chat_history-2026-11-22T10-00-00.000.ndjson.gz", 3 << 30, small, "log_rotate_mb"},
		{"live chat log of 3 GiB", "chat_history.ndjson", 3 << 30, Limits{}, "log_rotate_mb"},
		{"schedules.json over 64 MiB", "schedules.json", 64<<20 + 1, Limits{}, "schedules file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			archive := filepath.Join(dir, "bomb.tar.gz")
			writeBomb(t, archive, tc.entry, tc.size, [2]string{"memory/short_term.md", "- hi\n"})
			if st, _ := os.Stat(archive); st.Size() > 4<<20 {
				t.Fatalf("the bomb is %d bytes; it should be small", st.Size())
			}
			for _, existing := range []bool{false, true} {
				parent := filepath.Join(dir, fmt.Sprint("srv-", existing))
				os.MkdirAll(parent, 0o700)
				target := filepath.Join(parent, "data")
				if existing {
					os.Mkdir(target, 0o700)
				}
				before := listTree(t, parent)
				start := time.Now()
				_, err := Restore(archive, layoutOf(target), tc.lim)
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.entry) {
					t.Fatalf("restore: %v, want a refusal naming %s and %q", err, tc.entry, tc.wantErr)
				}
				if after := listTree(t, parent); !slices.Equal(after, before) {
					t.Fatalf("the refused restore left files:\nbefore %v\nafter  %v", before, after)
				}
				t.Logf("refused in %v: %v", time.Since(start).Round(time.Millisecond), err)
			}
		})
	}
}

// TestBombIsValid: the bomb builder makes an archive that restores when
// the limits allow it — what the limits refuse would have been written.
func TestBombIsValid(t *testing.T) {
	dir := t.TempDir()
	archive := filepath.Join(dir, "bomb.tar.gz")
	const size = 3<<20 + 100
	writeBomb(t, archive, "session.json", size, [2]string{"memory/short_term.md", "- hi\n"})
	target := filepath.Join(dir, "data")
	if n, err := Restore(archive, layoutOf(target), Limits{State: 4 << 20}); err != nil || n != 2 {
		t.Fatalf("restore with room for it: %d files, %v", n, err)
	}
	if st, err := os.Stat(filepath.Join(target, "session.json")); err != nil || st.Size() != size {
		t.Fatalf("restored session.json: %v %v, want %d bytes", st, err, size)
	}
}

// TestRestoreChecksFreeSpace: an archive larger than the free space of
// the target's file system is refused with a clear message before
// anything is written; with the space there it restores.
func TestRestoreChecksFreeSpace(t *testing.T) {
	dir := t.TempDir()
	archive := filepath.Join(dir, "b.tar.gz")
	body := strings.Repeat("- a line of memory\n", 200_000) // 3.8 MB
	f, _ := os.Create(archive)
	f.Write(gzMember(t, append(tarBytes(t, [2]string{"memory/long_term.md", body}), make([]byte, 1024)...)))
	f.Close()

	var asked string
	free := uint64(10 << 20) // 10 MiB: not the 16 MiB margin besides the file
	defer func(orig func(string) (uint64, error)) { freeSpace = orig }(freeSpace)
	freeSpace = func(dir string) (uint64, error) { asked = dir; return free, nil }

	target := filepath.Join(dir, "new", "data")
	_, err := Restore(archive, layoutOf(target), Limits{})
	if err == nil || !strings.Contains(err.Error(), "not enough space") || !strings.Contains(err.Error(), "10.0 MiB free") ||
		!strings.Contains(err.Error(), "3.6 MiB") {
		t.Fatalf("restore onto a small disk: %v, want a refusal with the sizes", err)
	}
	if asked != dir {
		t.Errorf("free space asked of %s, want %s (the nearest existing directory)", asked, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused restore created directories: %v", err)
	}
	freeSpace = func(string) (uint64, error) { return 0, errors.New("statfs: boom") }
	if _, err := Restore(archive, layoutOf(target), Limits{}); err == nil || !strings.Contains(err.Error(), "free space") {
		t.Fatalf("restore when the free space is unknown: %v", err)
	}

	free = 1 << 30
	freeSpace = func(dir string) (uint64, error) { return free, nil }
	if n, err := Restore(archive, layoutOf(target), Limits{}); err != nil || n != 1 {
		t.Fatalf("restore with the space there: %d files, %v", n, err)
	}
	if got, _ := os.ReadFile(filepath.Join(target, "memory", "long_term.md")); string(got) != body {
		t.Fatalf("restored %d bytes, want %d", len(got), len(body))
	}
}

// TestRestoreRefusesEmptyArchive: an archive with nothing but its manifest
// (and perhaps directories) would restore an empty data directory: it is
// refused, saying so.
func TestRestoreRefusesEmptyArchive(t *testing.T) {
	for name, extra := range map[string][]byte{
		"manifest only": nil,
		"manifest and a dir": func() []byte {
			var b bytes.Buffer
			tw := tar.NewWriter(&b)
			tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "memory/", Mode: 0o700})
			tw.Flush()
			return b.Bytes()
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			archive := filepath.Join(dir, "b.tar.gz")
			os.WriteFile(archive, gzMember(t, append(append(tarBytes(t), extra...), make([]byte, 1024)...)), 0o600)
			target := filepath.Join(dir, "data")
			n, err := Restore(archive, layoutOf(target), Limits{})
			if err == nil || !strings.Contains(err.Error(), "holds no files, only its manifest") {
				t.Fatalf("restore of an empty archive: %d files, %v; want a refusal", n, err)
			}
			if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the refused restore made %s: %v", target, err)
			}
			if got := listTree(t, dir); len(got) != 2 {
				t.Errorf("left behind: %v", got)
			}
		})
	}
}
