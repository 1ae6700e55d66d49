package testdisk

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"testing"
)

// DamagePages overwrites n whole pages in the middle of the SQLite
// database at path with garbage (the same garbage every run), as a bad
// disk sector or a stray write would: the first page, with the file's
// 100-byte header, stays intact, so SQLite opens the file as usual. It
// returns the damaged pages' numbers (the first page is 1).
func DamagePages(t testing.TB, path string, n int) []int64 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hdr := make([]byte, 100)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		t.Fatalf("read the database header: %v", err)
	}
	size := int64(binary.BigEndian.Uint16(hdr[16:18]))
	if size == 1 {
		size = 65536
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pages := fi.Size() / size
	if pages < int64(2*n+2) {
		t.Fatalf("%s has %d pages: too few to damage %d in the middle", path, pages, n)
	}
	rng := rand.New(rand.NewPCG(20, 3))
	garbage := make([]byte, size)
	var damaged []int64
	for p := pages/2 - int64(n)/2; len(damaged) < n; p++ {
		for i := range garbage {
			garbage[i] = byte(rng.Uint32())
		}
		if _, err := f.WriteAt(garbage, (p-1)*size); err != nil {
			t.Fatal(err)
		}
		damaged = append(damaged, p)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return damaged
}
