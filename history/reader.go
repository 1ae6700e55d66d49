package history

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Reader reads the chat log on disk: the live file and every rotated part,
// plain or gzipped, in seq order. It keeps no state between calls, so it
// is safe for concurrent use by any goroutine, and it never blocks the
// Log: the server may append (and rotate) while a Reader reads.
//
// A line the writer has only half written, a malformed line or a damaged
// .gz part is skipped and counted in Stats, never an error; what a damaged
// .gz held before the damage is still read.
//
// Readers rely on what the Log guarantees: one event per line, seq strictly
// increasing, parts named by rotation time (so name order is age order),
// and lines written by encoding/json. Searching is the index's job
// (package index), which reads the log through Since.
type Reader struct {
	path string
}

// NewReader returns a Reader for the chat log whose live file is
// chatLogPath (session.chat_log_path). The log need not exist: a missing
// log reads as empty.
func NewReader(chatLogPath string) *Reader {
	return &Reader{path: chatLogPath}
}

// Path returns the live file's path.
func (r *Reader) Path() string { return r.path }

// Stats says what a read went through.
type Stats struct {
	// Skipped counts the malformed or partial lines skipped and the .gz
	// parts found damaged (each once; what preceded the damage was read).
	// Readers count only the lines they examine: Recent stops at the n-th
	// event, Range looks only at parts that may hold the range.
	Skipped int `json:"skipped"`
	// Parts counts the files read, wholly or partly.
	Parts int `json:"parts"`
}

func (s *Stats) add(o Stats) {
	s.Skipped += o.Skipped
	s.Parts += o.Parts
}

// ---- Parts ----

// part is one file of the chat log.
type part struct {
	path string
	gz   bool
	// f is the live file, opened while listing so that a rotation cannot
	// swap it for the new, empty live file unnoticed; nil for rotated
	// parts, which are opened when read.
	f *os.File
}

// listParts lists the chat log newest first, as Parts does, with the live
// file already open. A rotation between listing and opening would make the
// listing miss the part just rotated away; it is caught by checking that
// the file opened is the one the path named before the listing (a rotation
// renames it, and the part keeps its inode), and the listing starts over.
// The caller must closeParts.
func listParts(path string) ([]part, error) {
	for attempt := 0; ; attempt++ {
		before, statErr := os.Stat(path)
		names, err := Parts(path)
		if err != nil {
			return nil, err
		}
		ps := make([]part, len(names))
		for i, n := range names {
			ps[i] = part{path: n, gz: strings.HasSuffix(n, ".gz")}
		}
		if len(ps) == 0 || ps[0].path != path {
			return ps, nil
		}
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) && attempt < 3 {
			continue // renamed away between the listing and the open
		}
		if err != nil {
			return nil, fmt.Errorf("open chat log: %w", err)
		}
		opened, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open chat log: %w", err)
		}
		if statErr == nil && os.SameFile(before, opened) || attempt >= 3 {
			ps[0].f = f
			return ps, nil
		}
		f.Close()
	}
}

func closeParts(ps []part) {
	for _, p := range ps {
		if p.f != nil {
			p.f.Close()
		}
	}
}

// errPartGone means a listed rotated part vanished before it was read (and
// no plain or .gz twin took its place): it is skipped and counted.
var errPartGone = errors.New("part vanished")

// open returns the part's file and whether it is gzipped. The caller
// closes it unless it is p.f. A rotated part that vanished since the
// listing may have been gzipped (or gunzipped) meanwhile: its twin is
// opened instead.
func (p *part) open() (*os.File, bool, error) {
	if p.f != nil {
		return p.f, false, nil
	}
	f, err := os.Open(p.path)
	if err == nil {
		return f, p.gz, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, err
	}
	twin, gz := p.path+".gz", true
	if p.gz {
		twin, gz = strings.TrimSuffix(p.path, ".gz"), false
	}
	if f, err := os.Open(twin); err == nil {
		return f, gz, nil
	}
	return nil, false, errPartGone
}

func (p *part) done(f *os.File) {
	if f != p.f {
		f.Close()
	}
}

// maxGzipBytes caps the decompressed size of one .gz part that readers
// hold in memory; a part is one log_rotate_mb's worth, so this is far
// beyond any sane setting.
const maxGzipBytes = 1 << 30

// readGz decompresses a whole .gz part into buf (reused if big enough).
// damaged reports a truncated or corrupt stream; data then holds what came
// before the damage.
func readGz(f *os.File, buf []byte) (data []byte, damaged bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	// The trailer holds the size mod 2^32; if the file is truncated it is
	// noise, so it only sizes the buffer, within reason.
	want := 64 << 10
	if st.Size() >= 18 {
		var tail [4]byte
		if _, err := f.ReadAt(tail[:], st.Size()-4); err == nil {
			n := int(binary.LittleEndian.Uint32(tail[:]))
			if n > 0 && int64(n) <= 32*st.Size()+(64<<10) {
				want = n + 1 // +1: the read that sees EOF needs room
			}
		}
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(io.NewSectionReader(f, 0, st.Size()), 64<<10))
	if err != nil {
		return buf[:0], true, nil
	}
	defer zr.Close()
	if cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxGzipBytes {
				return buf, true, nil
			}
			buf = slices.Grow(buf, len(buf))
		}
		n, err := zr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, false, nil
		}
		if err != nil {
			return buf, true, nil
		}
	}
}

// ---- Range ----

// Bound is one end of a Range: a seq or a time. The zero Bound is open
// (no limit on that side); a Bound must not set both.
type Bound struct {
	Seq  int64
	Time time.Time
}

// IsZero reports whether b is open.
func (b Bound) IsZero() bool { return b.Seq == 0 && b.Time.IsZero() }

// String returns b as ParseBound accepts it ("" for an open bound).
func (b Bound) String() string {
	switch {
	case b.Seq != 0:
		return strconv.FormatInt(b.Seq, 10)
	case !b.Time.IsZero():
		return b.Time.Format(time.RFC3339Nano)
	}
	return ""
}

// ParseBound parses a Range bound: a seq number ("123") or an RFC 3339
// time ("2026-11-22T10:00:00Z", fraction optional). An empty (or blank)
// string and seq 0 (from=0: from the start) are the open bound.
func ParseBound(s string) (Bound, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Bound{}, nil
	}
	if strings.Trim(s, "0123456789") == "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Bound{}, fmt.Errorf("seq %s out of range: want 0 to %d", s, int64(math.MaxInt64))
		}
		return Bound{Seq: n}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Bound{}, fmt.Errorf("%q is neither a seq number nor an RFC 3339 time like 2026-11-22T10:00:00Z", s)
	}
	return Bound{Time: t}, nil
}

func (b Bound) check(name string) error {
	if b.Seq != 0 && !b.Time.IsZero() {
		return fmt.Errorf("%s bound sets both a seq and a time", name)
	}
	if b.Seq < 0 {
		return fmt.Errorf("%s bound has negative seq %d", name, b.Seq)
	}
	return nil
}

// after reports whether an event at seq, ts lies past the upper bound b.
func (b Bound) after(seq int64, ts time.Time) bool {
	if b.Seq != 0 {
		return seq > b.Seq
	}
	return !b.Time.IsZero() && ts.After(b.Time)
}

// before reports whether an event at seq, ts lies before the lower bound b.
func (b Bound) before(seq int64, ts time.Time) bool {
	if b.Seq != 0 {
		return seq < b.Seq
	}
	return !b.Time.IsZero() && ts.Before(b.Time)
}

// key is an event's place in the log.
type key struct {
	seq int64
	ts  time.Time
}

// canonPrefix starts every line the Log writes.
var canonPrefix = []byte(`{"v":1,"seq":`)

// lineKey finds a line's seq and ts without decoding the rest of it;
// withTS false skips parsing ts. ok is false for a line decodeLine rejects
// (or, on the fast path for the Log's own layout, may accept: the caller
// decodes the lines it keeps anyway).
func lineKey(line []byte, withTS bool) (k key, ok bool) {
	if rest, found := bytes.CutPrefix(line, canonPrefix); found {
		i := 0
		for i < len(rest) && i < 19 && '0' <= rest[i] && rest[i] <= '9' {
			k.seq = k.seq*10 + int64(rest[i]-'0')
			i++
		}
		if i > 0 && rest[0] != '0' && k.seq > 0 {
			rest = rest[i:]
			if tail, found := bytes.CutPrefix(rest, []byte(`,"ts":"`)); found {
				if j := bytes.IndexByte(tail, '"'); j > 0 && bytes.IndexByte(tail[:j], '\\') < 0 {
					if !withTS {
						return k, true
					}
					t, err := time.Parse(time.RFC3339Nano, string(tail[:j]))
					if err == nil {
						k.ts = t
						return k, true
					}
				}
			}
		}
	}
	if f, ok := scanLine(line); ok {
		if f.seq <= 0 || f.typ.start == f.typ.end {
			return key{}, false
		}
		return key{seq: f.seq, ts: f.ts}, true
	}
	e, ok := decodeLine(line)
	return key{e.Seq, e.TS.Std()}, ok
}

// head finds the first event of a part. Lines skipped on the way are
// counted only if there is none (the part is then wholly read): otherwise
// the part is read again if it is in range, and counted then.
func head(p *part) (k key, found bool, st Stats, err error) {
	lr, closeFn, err := openLines(p)
	if err != nil {
		return key{}, false, st, err
	}
	skipped := 0
	for {
		line, more := lr.next()
		if !more {
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if k, ok := lineKey(line, true); ok {
			closeFn()
			return k, true, st, nil
		}
		skipped++
	}
	st.Parts++
	st.Skipped += skipped
	if closeFn() {
		st.Skipped++
	}
	return key{}, false, st, nil
}

// Range returns the events with from ≤ event ≤ to, oldest first, at most
// limit of them (limit ≤ 0: no limit); truncated reports that more events
// in the range follow the last one returned. A bound is a seq or a time
// (each end independently); the zero Bound is open. Time bounds compare
// with the events' ts and assume ts never decreases along seq.
//
// It reads the first line of every part to learn where each part starts,
// then reads only the parts that may hold the range, each up to where the
// range ends. It stops with ctx's error when ctx ends (a caller that went
// away).
func (r *Reader) Range(ctx context.Context, from, to Bound, limit int) (evs []event.Event, truncated bool, st Stats, err error) {
	if err := errors.Join(from.check("from"), to.check("to")); err != nil {
		return nil, false, st, err
	}
	all, err := listParts(r.path)
	if err != nil {
		return nil, false, st, err
	}
	defer closeParts(all)

	type headed struct {
		p *part
		k key
	}
	var ps []headed
	for i := len(all) - 1; i >= 0; i-- { // oldest first
		p := &all[i]
		k, found, hst, err := head(p)
		st.add(hst)
		if errors.Is(err, errPartGone) {
			st.Skipped++
			continue
		}
		if err != nil {
			return nil, false, st, fmt.Errorf("read %s: %w", p.path, err)
		}
		if found {
			ps = append(ps, headed{p, k})
		}
	}
	// Names sort by rotation time; seq is the real order.
	slices.SortStableFunc(ps, func(a, b headed) int { return cmpInt(a.k.seq, b.k.seq) })

	rr := rangeRead{ctx: ctx, from: from, to: to, limit: limit, withTS: !from.Time.IsZero() || !to.Time.IsZero(), st: st}
	for i, h := range ps {
		if to.after(h.k.seq, h.k.ts) {
			break // this part and all later ones start past the range
		}
		// Every event of part i comes before part i+1's first.
		if i+1 < len(ps) {
			next := ps[i+1].k
			if from.Seq != 0 && next.seq <= from.Seq || !from.Time.IsZero() && next.ts.Before(from.Time) {
				continue
			}
		}
		done, err := rr.part(h.p)
		if err != nil {
			return nil, false, rr.st, err
		}
		if done {
			break
		}
	}
	return rr.evs, rr.truncated, rr.st, nil
}

// rangeRead is one Range call's progress.
type rangeRead struct {
	ctx       context.Context
	from, to  Bound
	limit     int
	withTS    bool  // a bound is a time: lines' ts must be parsed
	last      int64 // seq of the last event taken: later ones must exceed it
	evs       []event.Event
	truncated bool
	st        Stats
}

// part adds the events of one part that lie in the range. It reports done
// when nothing later can be in the range or the limit is hit.
func (rr *rangeRead) part(p *part) (done bool, err error) {
	lr, closeFn, err := openLines(p)
	if errors.Is(err, errPartGone) {
		rr.st.Skipped++
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", p.path, err)
	}
	rr.st.Parts++
	defer func() {
		if closeFn() {
			rr.st.Skipped++
		}
	}()
	for n := 0; ; n++ {
		if n%ctxCheckLines == 0 && rr.ctx.Err() != nil {
			return false, rr.ctx.Err()
		}
		line, more := lr.next()
		if !more {
			return done, nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		k, ok := lineKey(line, rr.withTS)
		if !ok {
			rr.st.Skipped++
			continue
		}
		if k.seq <= rr.last || rr.from.before(k.seq, k.ts) {
			continue
		}
		if rr.to.after(k.seq, k.ts) {
			if rr.to.Seq != 0 {
				return true, nil // seq only grows from here
			}
			// ts might step back within the part: look on, but read no
			// later part.
			done = true
			continue
		}
		e, ok := decodeLine(line)
		if !ok {
			rr.st.Skipped++
			continue
		}
		if rr.limit > 0 && len(rr.evs) >= rr.limit {
			rr.truncated = true
			return true, nil
		}
		rr.evs = append(rr.evs, e)
		rr.last = e.Seq
	}
}

// ctxCheckLines is how many lines a range reads between looks at its
// context: cheap enough to be unnoticed, often enough to stop in a few ms.
const ctxCheckLines = 4096

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Since returns up to limit persisted events with seq ≥ from, oldest
// first: what the search index reads to catch up (index.Source).
func (r *Reader) Since(from int64, limit int) ([]event.Event, error) {
	evs, _, _, err := r.Range(context.Background(), Bound{Seq: max(from, 1)}, Bound{}, limit)
	return evs, err
}
