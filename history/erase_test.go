package history

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
)

// fileText is a file's text, decompressed if it is a .gz.
func fileText(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEraseRewritesTheFileThatHoldsTheSeq erases one message in a gzipped
// part, one in a plain part and one in the live file: each file then holds
// the tombstone's line where the message was and nothing of its text, every
// other line is as it was, appending goes on, and erasing again changes
// nothing.
func TestEraseRewritesTheFileThatHoldsTheSeq(t *testing.T) {
	path := testPath(t)
	l := openLog(t, Options{Path: path, RotateMB: 1, Fsync: FsyncAlways})
	pad := strings.Repeat("y", 900)
	const n = 2600 // three files at 1 MiB
	secret := func(seq int64) string { return fmt.Sprintf("secret%dword", seq) }
	for i := int64(1); i <= n; i++ {
		mustAppend(t, l, userEvent(i, secret(i)+" "+pad))
	}
	files := logFiles(t, path)
	if len(files) < 3 {
		t.Fatalf("got %d files, want 3 or more", len(files))
	}
	files[0] = testio.GzipFile(t, files[0])
	before := map[string]string{}
	for _, f := range files {
		before[f] = fileText(t, f)
	}
	targets := []int64{5, 1500, n - 1} // first part (gz), a middle part, the live file
	for _, seq := range targets {
		orig := userEvent(seq, secret(seq)+" "+pad)
		d := event.ErasedOf(orig, "web")
		st, err := l.Erase(event.Tombstone(d))
		if err != nil {
			t.Fatalf("Erase(%d): %v", seq, err)
		}
		if st.Files != 1 || st.Bytes == 0 {
			t.Errorf("Erase(%d) stats %+v, want one file rewritten", seq, st)
		}
		again, err := l.Erase(event.Tombstone(d))
		if err != nil || again.Files != 0 {
			t.Errorf("Erase(%d) again: %+v, %v; want nothing rewritten", seq, again, err)
		}
	}
	mustAppend(t, l, userEvent(n+1, "after"))
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	var all string
	for _, f := range files {
		got := fileText(t, f)
		all += got
		want := before[f]
		for _, seq := range targets {
			orig := string(wantLine(t, userEvent(seq, secret(seq)+" "+pad)))
			d := event.ErasedOf(userEvent(seq, ""), "web")
			want = strings.Replace(want, orig, string(wantLine(t, event.Tombstone(d))), 1)
		}
		if f == path {
			want += string(wantLine(t, userEvent(n+1, "after")))
		}
		if got != want {
			t.Errorf("%s differs from the original with the tombstones in place (len %d, want %d)", f, len(got), len(want))
		}
	}
	for _, seq := range targets {
		if strings.Contains(all, secret(seq)+" ") {
			t.Errorf("the log still holds %q", secret(seq))
		}
	}
	evs, _, _, err := NewReader(path).Range(context.Background(), Bound{Seq: 1500}, Bound{Seq: 1500}, 1)
	if err != nil || len(evs) != 1 || !event.IsTombstone(evs[0]) {
		t.Errorf("Range(1500) = %v, %v; want the tombstone", evs, err)
	}
}

// TestEraseUnknownSeqIsNoError: a seq beyond the log rewrites nothing.
func TestEraseUnknownSeqIsNoError(t *testing.T) {
	path := testPath(t)
	l := openLog(t, Options{Path: path, RotateMB: 1})
	mustAppend(t, l, userEvent(1, "hello"))
	st, err := l.Erase(event.Tombstone(event.ErasedOf(userEvent(9, ""), "web")))
	if err != nil || st.Files != 0 {
		t.Fatalf("Erase(9) = %+v, %v; want nothing, no error", st, err)
	}
}
