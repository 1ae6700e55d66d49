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
// only as far as needed. Malformed or partial lines are skipped and counted.
// A missing log yields no events.
func ReadTail(path string, limit int) ([]event.Event, int, error) {
	parts, err := Parts(path)
	if err != nil {
		return nil, 0, err
	}
	var rev []event.Event // newest first
	skipped := 0
	for _, p := range parts {
		if len(rev) >= limit {
			break
		}
		n, err := readPartBackwards(p, limit-len(rev), func(e event.Event) { rev = append(rev, e) })
		skipped += n
		if err != nil {
			return nil, skipped, err
		}
	}
	slices.Reverse(rev)
	return rev, skipped, nil
}

// readPartBackwards calls fn with up to limit events of one part, newest
// first, and returns how many lines it skipped.
func readPartBackwards(path string, limit int, fn func(event.Event)) (int, error) {
	skipped := 0
	take := func(line []byte) bool {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return true
		}
		var e event.Event
		if err := json.Unmarshal(line, &e); err != nil || e.Seq <= 0 || e.Type == "" {
			skipped++
			return true
		}
		fn(e)
		limit--
		return limit > 0
	}
	if strings.HasSuffix(path, ".gz") {
		// A gzip stream cannot be read backwards; parts are small (log_rotate_mb).
		lines, err := gzipLines(path)
		if err != nil {
			skipped++ // a truncated or corrupt part: keep what was readable
		}
		for i := len(lines) - 1; i >= 0; i-- {
			if !take(lines[i]) {
				break
			}
		}
		return skipped, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	const chunk = 64 << 10
	end := st.Size()
	var carry []byte // the start of a line whose beginning is in an earlier chunk
	buf := make([]byte, chunk)
	for end > 0 {
		start := max(0, end-chunk)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return skipped, fmt.Errorf("read %s: %w", path, err)
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

func gzipLines(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var lines [][]byte
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	return lines, sc.Err()
}
