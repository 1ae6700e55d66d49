package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Parts lists the chat log's files newest first: the live file (if it
// exists), then the rotated parts lumberjack named <base>-<time><ext>,
// plain or .gz. A part present both plain and gzipped is listed once (plain).
func Parts(path string) ([]string, error) {
	dir, file := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ext := filepath.Ext(file)
	prefix := strings.TrimSuffix(file, ext) + "-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list chat log parts: %w", err)
	}
	plain := map[string]bool{}
	var rotated []string
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) || e.IsDir() {
			continue
		}
		switch {
		case strings.HasSuffix(n, ext):
			plain[n] = true
			rotated = append(rotated, n)
		case strings.HasSuffix(n, ext+".gz"):
			rotated = append(rotated, n)
		}
	}
	// Backup names embed a sortable UTC time, so name order is age order.
	slices.SortFunc(rotated, func(a, b string) int { return strings.Compare(b, a) })
	var out []string
	if _, err := os.Stat(path); err == nil {
		out = append(out, path)
	}
	for _, n := range rotated {
		if strings.HasSuffix(n, ".gz") && plain[strings.TrimSuffix(n, ".gz")] {
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	return out, nil
}

// ReadTail returns the last limit events of the chat log, oldest first,
// reading backwards from the end of the live file and then older parts
// only as far as needed. Malformed or partial lines are skipped and counted
// (so is a damaged .gz part). A missing log yields no events.
func ReadTail(path string, limit int) ([]event.Event, int, error) {
	evs, st, err := NewReader(path).Recent(limit)
	return evs, st.Skipped, err
}

// Recent returns the last n events of the chat log, oldest first. It reads
// the live file backwards from its end, and older parts only as far as it
// must; a .gz part, which cannot be read backwards, is decompressed whole.
// n ≤ 0 returns nothing.
func (r *Reader) Recent(n int) ([]event.Event, Stats, error) {
	var st Stats
	if n <= 0 {
		return nil, st, nil
	}
	// Usually the live file alone holds them, and no listing is needed:
	// whatever file the path names now is the newest.
	if f, err := os.Open(r.path); err == nil {
		var rev []event.Event
		skipped, err := readPartBackwards(f, false, n, func(e event.Event) bool {
			if len(rev) > 0 && e.Seq >= rev[len(rev)-1].Seq {
				return false
			}
			rev = append(rev, e)
			return true
		})
		f.Close()
		if err == nil && len(rev) == n {
			slices.Reverse(rev)
			return rev, Stats{Skipped: skipped, Parts: 1}, nil
		}
	}
	parts, err := listParts(r.path)
	if err != nil {
		return nil, st, err
	}
	defer closeParts(parts)
	var rev []event.Event // newest first
	last := int64(math.MaxInt64)
	for i := range parts {
		if len(rev) >= n {
			break
		}
		p := &parts[i]
		f, gz, err := p.open()
		if errors.Is(err, errPartGone) {
			st.Skipped++
			continue
		}
		if err != nil {
			return nil, st, fmt.Errorf("read %s: %w", p.path, err)
		}
		st.Parts++
		skipped, err := readPartBackwards(f, gz, n-len(rev), func(e event.Event) bool {
			if e.Seq >= last {
				return false // out of order: a duplicate part
			}
			last = e.Seq
			rev = append(rev, e)
			return true
		})
		p.done(f)
		st.Skipped += skipped
		if err != nil {
			return nil, st, fmt.Errorf("read %s: %w", p.path, err)
		}
	}
	slices.Reverse(rev)
	return rev, st, nil
}

// readPartBackwards calls fn with up to limit events of one part, newest
// first, and returns how many lines it skipped (plus one if the part is a
// damaged .gz). fn reports whether it took the event.
func readPartBackwards(f *os.File, gz bool, limit int, fn func(event.Event) bool) (int, error) {
	skipped := 0
	take := func(line []byte) bool {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return true
		}
		e, ok := decodeLine(line)
		if !ok {
			skipped++
			return true
		}
		if fn(e) {
			limit--
		}
		return limit > 0
	}
	if gz {
		data, damaged, err := readGz(f, nil)
		if err != nil {
			return 0, err
		}
		if damaged {
			skipped++ // keep what was readable
		}
		for len(data) > 0 {
			i := bytes.LastIndexByte(data, '\n')
			if !take(data[i+1:]) {
				break
			}
			data = data[:max(i, 0)]
		}
		return skipped, nil
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	// Most calls want a few events from the end: start small.
	chunk := int64(16 << 10)
	end := st.Size()
	var carry []byte // the start of a line whose beginning is in an earlier chunk
	var buf []byte
	for end > 0 {
		start := max(0, end-chunk)
		if int64(cap(buf)) < end-start {
			buf = make([]byte, end-start)
		}
		chunk = min(2*chunk, 1<<20)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return skipped, err
		}
		data := append(buf[:n:n], carry...)
		for {
			i := bytes.LastIndexByte(data, '\n')
			if i < 0 {
				break
			}
			if !take(data[i+1:]) {
				return skipped, nil
			}
			data = data[:i]
		}
		carry = append([]byte(nil), data...)
		end = start
	}
	take(carry)
	return skipped, nil
}
