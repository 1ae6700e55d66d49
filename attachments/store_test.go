package attachments

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"image"
	"image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// PNG returns a real PNG image of w×h pixels.
func testPNG(t testing.TB, w, h int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// zipBomb is a small zip holding one large run of zeros.
func zipBomb(t testing.TB, unpacked int) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("zeros.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(w, zeroReader{}, int64(unpacked)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// noTemp fails if a temporary file is left in the store.
func noTemp(t *testing.T, dir string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(dir, tempPattern))
	if len(left) > 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
}

func TestPutSniffsAndSanitises(t *testing.T) {
	pngBytes := testPNG(t, 4, 4)
	bomb := zipBomb(t, 50<<20)
	tests := []struct {
		name, file string
		data       []byte
		wantType   string
		wantName   string
	}{
		{"png", "cat.png", pngBytes, "image/png", "cat.png"},
		{"png named txt", "cat.txt", pngBytes, "image/png", "cat.txt"},
		{"html named png", "x.png", []byte("<!DOCTYPE html><html><script>alert(1)</script></html>"), "text/html; charset=utf-8", "x.png"},
		{"svg with script", "x.svg", []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), "text/xml; charset=utf-8", "x.svg"},
		{"zip bomb named txt", "notes.txt", bomb, "application/zip", "notes.txt"},
		{"markdown", "README.md", []byte("# Title\n\nSome *text*.\n"), "text/markdown; charset=utf-8", "README.md"},
		{"csv", "a.csv", []byte("a,b\n1,2\n"), "text/csv; charset=utf-8", "a.csv"},
		{"json", "a.json", []byte(`{"a":1}`), "application/json", "a.json"},
		{"binary named md", "a.md", []byte{0, 1, 2, 3, 0xff, 0xfe}, "application/octet-stream", "a.md"},
		{"path in name", "../../x", []byte("hi"), "text/plain; charset=utf-8", "x"},
		{"windows path", `C:\Users\a\evil.txt`, []byte("hi"), "text/plain; charset=utf-8", "evil.txt"},
		{"rtl override", "gpj\u202e.exe", []byte("hi"), "text/plain; charset=utf-8", "gpj.exe"},
		{"empty name", "", []byte("hi"), "text/plain; charset=utf-8", "file"},
		{"dot dot", "..", []byte("hi"), "text/plain; charset=utf-8", "file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			a, err := s.Put(bytes.NewReader(tc.data), tc.file)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(tc.data)
			if a.SHA256 != hex.EncodeToString(sum[:]) || a.Size != int64(len(tc.data)) {
				t.Errorf("got %s %d, want %x %d", a.SHA256, a.Size, sum, len(tc.data))
			}
			if a.Type != tc.wantType || a.Name != tc.wantName {
				t.Errorf("got type %q name %q, want %q %q", a.Type, a.Name, tc.wantType, tc.wantName)
			}
			got, err := os.ReadFile(s.Path(a.SHA256))
			if err != nil || !bytes.Equal(got, tc.data) {
				t.Fatalf("stored bytes differ (err %v)", err)
			}
			fi, _ := os.Stat(s.Path(a.SHA256))
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
			st, err := s.Stat(a.SHA256)
			if err != nil || st != a {
				t.Errorf("Stat = %+v, %v; want %+v", st, err, a)
			}
			noTemp(t, dir)
		})
	}
}

func TestPutLimitsAndErrors(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Put(io.LimitReader(zeroReader{}, 1<<20+1), "big.bin")
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 1<<20 {
		t.Errorf("1 MiB + 1 byte: got %v, want *TooLargeError", err)
	}
	if _, err := s.Put(io.LimitReader(zeroReader{}, 1<<20), "exact.bin"); err != nil {
		t.Errorf("exactly the limit: %v", err)
	}
	broken := io.MultiReader(strings.NewReader("abc"), errReader{io.ErrUnexpectedEOF})
	if _, err := s.Put(broken, "cut.txt"); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated short body: got %v, want io.ErrUnexpectedEOF", err)
	}
	longBroken := io.MultiReader(io.LimitReader(zeroReader{}, 4096), errReader{io.ErrUnexpectedEOF})
	if _, err := s.Put(longBroken, "cut.bin"); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated long body: got %v, want io.ErrUnexpectedEOF", err)
	}
	noTemp(t, dir)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 { // only the exact-size file's directory
		t.Errorf("store holds %d entries, want 1", len(entries))
	}
	for _, h := range []string{"", "abc", strings.Repeat("A", 64), strings.Repeat("g", 64), "../" + strings.Repeat("a", 61)} {
		if _, err := s.Stat(h); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Stat(%q) = %v, want fs.ErrInvalid", h, err)
		}
	}
	if _, err := s.Stat(strings.Repeat("a", 64)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unknown hash: got %v, want fs.ErrNotExist", err)
	}
}

func TestPutDeduplicates(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, 0)
	a1, err := s.Put(strings.NewReader("same bytes"), "one.txt")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := s.Put(strings.NewReader("same bytes"), "two.txt")
	if err != nil {
		t.Fatal(err)
	}
	if a1.SHA256 != a2.SHA256 || a2.Name != "two.txt" {
		t.Fatalf("got %+v and %+v", a1, a2)
	}
	st, _ := s.Stat(a1.SHA256)
	if st.Name != "two.txt" {
		t.Errorf("Stat name %q, want the latest, two.txt", st.Name)
	}
	files := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if !d.IsDir() && !strings.HasSuffix(p, ".json") {
			files++
		}
		return nil
	})
	if files != 1 {
		t.Errorf("%d files stored, want 1", files)
	}
}

func TestOpenRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".put-123"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, 0); err != nil {
		t.Fatal(err)
	}
	noTemp(t, dir)
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func BenchmarkPut(b *testing.B) {
	s, err := Open(b.TempDir(), 64<<20)
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 5<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		data[0] = byte(i) // new content each time: no deduplication
		data[1] = byte(i >> 8)
		if _, err := s.Put(bytes.NewReader(data), "f.bin"); err != nil {
			b.Fatal(err)
		}
	}
}
