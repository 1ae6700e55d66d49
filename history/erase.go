package history

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// EraseStats says what an erase rewrote: the files replaced and their
// bytes (the erased line's file, decompressed size for a .gz).
type EraseStats struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

func (s *EraseStats) add(o EraseStats) { s.Files += o.Files; s.Bytes += o.Bytes }

// Erase puts tomb (event.Tombstone of an erasure) in place of the line
// with tomb's seq, byte for byte the line Append would write for it, in
// whichever file of the chat log holds it: the live file or a rotated
// part, plain or .gz (and its twin, if a part is there both ways). Each
// file is replaced whole: a temporary file written next to it, fsynced,
// renamed over it, the directory fsynced — so no file ever holds half an
// erase, and the old bytes are in no file the log keeps (the file system
// may keep them in free blocks until they are reused). The live file is
// replaced under the Log's mutex and appending goes on in the new one.
//
// A seq no file holds is no error (zero stats): a node whose copy of the
// log has not reached it yet, or a line already the tombstone.
func (l *Log) Erase(tomb event.Event) (EraseStats, error) {
	tomb.V = event.LogVersion
	line, err := json.Marshal(tomb)
	if err != nil {
		return EraseStats{}, fmt.Errorf("erase from chat log: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return EraseStats{}, ErrClosed
	}
	file, err := holder(l.path, tomb.Seq)
	if err != nil || file == "" {
		return EraseStats{}, err
	}
	var st EraseStats
	if file == l.path {
		st, err = l.eraseLive(tomb.Seq, line)
	} else {
		st, err = erasePart(file, tomb.Seq, line)
	}
	if err != nil {
		return st, fmt.Errorf("erase from chat log: %w", err)
	}
	return st, nil
}

// holder names the file of the chat log that may hold seq: the one whose
// first event is the newest at or before it ("" if none).
func holder(path string, seq int64) (string, error) {
	ps, err := listParts(path)
	if err != nil {
		return "", err
	}
	defer closeParts(ps)
	best, bestSeq := "", int64(0)
	for i := range ps {
		k, found, _, err := head(&ps[i])
		if errors.Is(err, errPartGone) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", ps[i].path, err)
		}
		if found && k.seq <= seq && k.seq > bestSeq {
			best, bestSeq = ps[i].path, k.seq
		}
	}
	return best, nil
}

// eraseLive rewrites the live file: lumberjack's descriptor is closed
// (its next write opens the new file for appending) and fd moves to the
// new file. l.mu must be held.
func (l *Log) eraseLive(seq int64, line []byte) (EraseStats, error) {
	if err := l.lj.Close(); err != nil {
		return EraseStats{}, err
	}
	st, err := EraseInFile(l.path, seq, line)
	if err != nil || st.Files == 0 {
		return st, err
	}
	nf, err := os.Open(l.path)
	if err != nil {
		return st, err
	}
	fi, err := nf.Stat()
	if err != nil {
		nf.Close()
		return st, err
	}
	l.fd.Close()
	l.fd, l.fdInfo, l.size, l.dirty = nf, fi, fi.Size(), false // the new file was fsynced whole
	return st, nil
}

// erasePart rewrites a rotated part, and its twin (the same part plain
// and gzipped) if there is one.
func erasePart(path string, seq int64, line []byte) (EraseStats, error) {
	st, err := EraseInFile(path, seq, line)
	if err != nil {
		return st, err
	}
	twin := path + ".gz"
	if strings.HasSuffix(path, ".gz") {
		twin = strings.TrimSuffix(path, ".gz")
	}
	if _, err := os.Stat(twin); err == nil {
		o, err := EraseInFile(twin, seq, line)
		st.add(o)
		return st, err
	}
	return st, nil
}

// EraseInFile replaces the line of seq in the NDJSON file at path (gzipped
// if its name ends in .gz) with line, by writing the file anew beside it
// and renaming it over (fsynced, and the directory). A file without that
// seq, or where the line is line already, is left alone (zero stats). For
// the chat log's parts and the audit files a reset writes; the caller
// keeps writers away.
func EraseInFile(path string, seq int64, line []byte) (EraseStats, error) {
	gz := strings.HasSuffix(path, ".gz")
	in, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return EraseStats{}, nil
	}
	if err != nil {
		return EraseStats{}, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return EraseStats{}, err
	}
	var r io.Reader = in
	if gz {
		zr, err := gzip.NewReader(bufio.NewReaderSize(in, 64<<10))
		if err != nil {
			return EraseStats{}, fmt.Errorf("read %s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	found, err := holds(r, seq, line)
	if err != nil || !found {
		return EraseStats{}, err
	}
	if _, err := in.Seek(0, io.SeekStart); err != nil {
		return EraseStats{}, err
	}
	r = in
	if gz {
		zr, err := gzip.NewReader(bufio.NewReaderSize(in, 64<<10))
		if err != nil {
			return EraseStats{}, err
		}
		defer zr.Close()
		r = zr
	}
	n, err := rewrite(path, fi.Mode().Perm(), gz, r, seq, line)
	if err != nil {
		return EraseStats{}, fmt.Errorf("rewrite %s: %w", path, err)
	}
	return EraseStats{Files: 1, Bytes: n}, nil
}

// holds reports whether r has a line of seq that is not line already.
func holds(r io.Reader, seq int64, line []byte) (bool, error) {
	lr := newLineReader(r)
	for {
		l, more := lr.next()
		if !more {
			return false, lr.err
		}
		if k, ok := lineKey(l, false); ok && k.seq == seq {
			return !bytes.Equal(l, line), nil
		}
	}
}

// rewrite copies r to a temporary file beside path with the line of seq
// replaced, makes it durable and renames it over path. It returns the
// bytes written (uncompressed).
func rewrite(path string, perm os.FileMode, gz bool, r io.Reader, seq int64, line []byte) (int64, error) {
	var n int64
	err := atomicfile.WriteFunc(path, perm, func(w io.Writer) error {
		if !gz {
			var err error
			n, err = copyReplacing(w, r, seq, line)
			return err
		}
		zw := gzip.NewWriter(w)
		var err error
		if n, err = copyReplacing(zw, r, seq, line); err != nil {
			return err
		}
		return zw.Close()
	})
	return n, err
}

// copyReplacing copies r's lines to w, line in place of seq's.
func copyReplacing(w io.Writer, r io.Reader, seq int64, line []byte) (int64, error) {
	lr := newLineReader(r)
	var n int64
	for {
		l, more := lr.next()
		if !more {
			return n, lr.err
		}
		if k, ok := lineKey(l, false); ok && k.seq == seq {
			l = line
		}
		m, err := w.Write(l)
		n += int64(m)
		if err != nil {
			return n, err
		}
		if !lr.partial {
			if _, err := w.Write([]byte{'\n'}); err != nil {
				return n, err
			}
			n++
		}
	}
}
