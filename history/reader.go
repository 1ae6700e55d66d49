package history

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Reader reads the chat log on disk: the live file and every rotated part,
// plain or gzipped, in seq order. It keeps no state between calls, so it
// is safe for concurrent use by any goroutine, and it never blocks the
// Log: the server may append (and rotate) while a Reader reads. (Search
// may return while one of its workers still reads a block of an older part
// it turned out not to need; that worker ends on its own after the block.)
//
// A line the writer has only half written, a malformed line or a damaged
// .gz part is skipped and counted in Stats, never an error; what a damaged
// .gz held before the damage is still read.
//
// Readers rely on what the Log guarantees: one event per line, seq strictly
// increasing, parts named by rotation time (so name order is age order),
// and lines written by encoding/json (Search's byte-level prefilter assumes
// its escaping; see Search).
type Reader struct {
	path string
	// window is the size of the blocks Search reads; 0 means
	// defaultWindow. Tests make it tiny to exercise block boundaries.
	window int
	// workers is how many parts Search reads at once; 0 means GOMAXPROCS.
	workers int
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
	// event, Range looks only at parts that may hold the range, and
	// Search only at lines holding the query's bytes (plus each part's
	// last line).
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

// ---- Lines ----

// decodeLine decodes one chat-log line. It reports false for a line that
// is not a JSON event with a seq and a type: readers skip and count it.
// Lines scanLine is sure of are taken apart without encoding/json's
// reflection, to the very same Event (FuzzReadLine checks).
func decodeLine(line []byte) (event.Event, bool) {
	if f, ok := scanLine(line); ok {
		return f.event(line)
	}
	return decodeLineJSON(line)
}

// decodeLineJSON is decodeLine by encoding/json alone: the reference.
func decodeLineJSON(line []byte) (event.Event, bool) {
	var e event.Event
	if err := json.Unmarshal(line, &e); err != nil || e.Seq <= 0 || e.Type == "" {
		return event.Event{}, false
	}
	return e, true
}

// message is the part of a user or assistant event that Search needs.
type message struct {
	seq     int64
	ts      time.Time
	typ     event.Type
	turn    string
	channel string
	from    string
	content string
}

// decodeMessage is Search's definitive decoder, used where scanLine is
// unsure. ok is false for a malformed line; for event types other than
// user and assistant only seq, ts, typ and turn are set.
func decodeMessage(line []byte) (m message, ok bool) {
	e, ok := decodeLineJSON(line)
	if !ok {
		return message{}, false
	}
	m = message{seq: e.Seq, ts: e.TS.Std(), typ: e.Type, turn: e.Turn}
	if len(e.Data) == 0 {
		return m, true
	}
	switch e.Type {
	case event.User:
		var d event.UserData
		if json.Unmarshal(e.Data, &d) != nil {
			return message{}, false
		}
		m.channel, m.from, m.content = d.Channel, d.From, d.Content
	case event.Assistant:
		var d event.AssistantData
		if json.Unmarshal(e.Data, &d) != nil {
			return message{}, false
		}
		m.content = d.Content
	}
	return m, true
}

// span is a JSON string's body within a line, between its quotes. The zero
// span is the empty string (also what null leaves).
type span struct {
	start, end int
	esc        bool // the body holds backslash escapes
}

// fields is what scanLine finds in a line.
type fields struct {
	v, seq                 int64
	ts                     time.Time
	typ, turn              span
	channel, from, content span
	data                   [2]int // the data value's bytes, if any
	dataKind               byte   // the data value's first byte, 0 if absent
	userOK, assistantOK    bool   // data decodes as UserData / AssistantData
	// The first bytes (kinds) of data's members that the payloads
	// declare; 0 when absent.
	channelV, fromV, msgIDV, contentV, partialV byte
}

// scanLine is a fast, allocation-free reader of a chat-log line that finds
// the members Search needs without decoding the rest. ok means the line
// is valid JSON and json.Unmarshal would have decoded the very same values
// into event.Event and its user or assistant payload; anything it is not
// sure of (an escaped or case-folded member name, a duplicate member, a
// number json rejects, a ts it cannot parse, deep nesting) makes it answer
// false, and the caller falls back to decodeMessage. FuzzScanLine checks
// the agreement.
func scanLine(line []byte) (f fields, ok bool) {
	s := scanner{b: line}
	s.ws()
	if !s.byte('{') {
		return f, false
	}
	var seen uint8
	s.ws()
	if s.byte('}') {
		return f, s.end()
	}
	for {
		s.ws()
		k, ok := s.str()
		if !ok || k.esc {
			return f, false
		}
		key := line[k.start:k.end]
		s.ws()
		if !s.byte(':') {
			return f, false
		}
		s.ws()
		var bit uint8
		switch string(key) {
		case "v":
			bit = 1
			if f.v, ok = s.intOrNull(); !ok {
				return f, false
			}
		case "seq":
			bit = 2
			if f.seq, ok = s.intOrNull(); !ok {
				return f, false
			}
		case "ts":
			bit = 4
			// json hands null to event.Time, which rejects it.
			ts, ok := s.str()
			if !ok || ts.esc {
				return f, false
			}
			var err error
			if f.ts, err = time.Parse(time.RFC3339Nano, string(line[ts.start:ts.end])); err != nil {
				return f, false
			}
		case "type":
			bit = 8
			if f.typ, ok = s.strOrNull(); !ok {
				return f, false
			}
		case "turn":
			bit = 16
			if f.turn, ok = s.strOrNull(); !ok {
				return f, false
			}
		case "data":
			bit = 32
			if s.i < len(line) {
				f.dataKind = line[s.i]
			}
			f.data[0] = s.i
			if f.dataKind == '{' {
				if !s.data(&f) {
					return f, false
				}
			} else if !s.value(0) {
				return f, false
			}
			f.data[1] = s.i
		default:
			if foldsTo(key, "v", "seq", "ts", "type", "turn", "data") {
				return f, false // json would match it case-insensitively
			}
			if !s.value(0) {
				return f, false
			}
		}
		if seen&bit != 0 {
			return f, false // json keeps the last; not worth following
		}
		seen |= bit
		s.ws()
		if s.byte(',') {
			continue
		}
		if !s.byte('}') || !s.end() {
			return f, false
		}
		break
	}
	strOK := func(k byte) bool { return k == 0 || k == '"' || k == 'n' }
	boolOK := func(k byte) bool { return k == 0 || k == 't' || k == 'f' || k == 'n' }
	dataOK := f.dataKind == 0 || f.dataKind == '{' || f.dataKind == 'n'
	f.userOK = dataOK && strOK(f.channelV) && strOK(f.fromV) && strOK(f.contentV) && strOK(f.msgIDV)
	f.assistantOK = dataOK && strOK(f.contentV) && boolOK(f.partialV)
	return f, true
}

// data reads the data object, noting the members of the user and
// assistant payloads. Called at '{'.
func (s *scanner) data(f *fields) bool {
	s.i++
	s.ws()
	if s.byte('}') {
		return true
	}
	var seen uint8
	for {
		s.ws()
		k, ok := s.str()
		if !ok || k.esc {
			return false
		}
		key := s.b[k.start:k.end]
		s.ws()
		if !s.byte(':') {
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		kind := s.b[s.i]
		var bit uint8
		var sp *span
		var v *byte
		switch string(key) {
		case "channel":
			bit, sp, v = 1, &f.channel, &f.channelV
		case "from":
			bit, sp, v = 2, &f.from, &f.fromV
		case "content":
			bit, sp, v = 4, &f.content, &f.contentV
		case "client_msg_id":
			bit, v = 8, &f.msgIDV
		case "partial":
			bit, v = 16, &f.partialV
		default:
			if foldsTo(key, "channel", "from", "content", "client_msg_id", "partial") {
				return false
			}
		}
		if bit != 0 {
			if seen&bit != 0 {
				return false
			}
			seen |= bit
			*v = kind
		}
		if sp != nil && kind == '"' {
			if *sp, ok = s.str(); !ok {
				return false
			}
		} else if !s.value(1) {
			return false
		}
		s.ws()
		if s.byte(',') {
			continue
		}
		return s.byte('}')
	}
}

// foldsTo reports whether key equals one of names under Unicode case
// folding, as encoding/json matches member names.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// scanner walks JSON text; each method reports false on a syntax error.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) byte(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// maxDepth bounds the nesting scanLine follows; deeper lines go to json.
const maxDepth = 64

// str reads a string at s.i.
func (s *scanner) str() (span, bool) {
	if !s.byte('"') {
		return span{}, false
	}
	sp := span{start: s.i}
	b := s.b
	for i := s.i; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			sp.end = i
			s.i = i + 1
			return sp, true
		case c == '\\':
			sp.esc = true
			if i+1 >= len(b) {
				return span{}, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return span{}, false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return span{}, false
					}
				}
				i += 6
			default:
				return span{}, false
			}
		case c < 0x20:
			return span{}, false
		default:
			i++
		}
	}
	return span{}, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (s *scanner) strOrNull() (span, bool) {
	if s.lit("null") {
		return span{}, true
	}
	return s.str()
}

func (s *scanner) lit(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// number reads a JSON number; isInt means no fraction or exponent.
func (s *scanner) number() (start int, isInt, ok bool) {
	b, i := s.b, s.i
	start = i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return 0, false, false
	}
	isInt = true
	if i < len(b) && b[i] == '.' {
		isInt = false
		i++
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		isInt = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false, false
		}
	}
	s.i = i
	return start, isInt, true
}

// intOrNull reads what json would decode into an int64 (or an int: the
// log's "v" is small): an integer literal in range, or null (zero).
func (s *scanner) intOrNull() (int64, bool) {
	if s.lit("null") {
		return 0, true
	}
	start, isInt, ok := s.number()
	if !ok || !isInt {
		return 0, false
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	return n, err == nil
}

// value skips any JSON value.
func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) || depth > maxDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '{':
		s.i++
		s.ws()
		if s.byte('}') {
			return true
		}
		for {
			s.ws()
			if _, ok := s.str(); !ok {
				return false
			}
			s.ws()
			if !s.byte(':') {
				return false
			}
			s.ws()
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.byte(',') {
				continue
			}
			return s.byte('}')
		}
	case c == '[':
		s.i++
		s.ws()
		if s.byte(']') {
			return true
		}
		for {
			s.ws()
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.byte(',') {
				continue
			}
			return s.byte(']')
		}
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	default:
		_, _, ok := s.number()
		return ok
	}
}

// unquote returns the string a span's body decodes to, as json would.
func unquote(line []byte, sp span) string {
	body := line[sp.start:sp.end]
	if !sp.esc && utf8.Valid(body) {
		return string(body)
	}
	var s string
	if sp.start == 0 || json.Unmarshal(line[sp.start-1:sp.end+1], &s) != nil {
		return "" // scanLine validated it; not reached
	}
	return s
}

// message returns what the scanned line holds, as decodeMessage would.
// valid is false for a line decodeMessage rejects.
func (f *fields) message(line []byte) (m message, valid bool) {
	if f.seq <= 0 || f.typ.end == f.typ.start {
		return message{}, false
	}
	m = message{seq: f.seq, ts: f.ts, typ: event.Type(unquote(line, f.typ)), turn: unquote(line, f.turn)}
	switch m.typ {
	case event.User:
		if !f.userOK {
			return message{}, false
		}
		m.channel, m.from, m.content = unquote(line, f.channel), unquote(line, f.from), unquote(line, f.content)
	case event.Assistant:
		if !f.assistantOK {
			return message{}, false
		}
		m.content = unquote(line, f.content)
	}
	return m, true
}

// event returns the scanned line as decodeLineJSON would.
func (f *fields) event(line []byte) (event.Event, bool) {
	if f.seq <= 0 || f.typ.end == f.typ.start {
		return event.Event{}, false
	}
	e := event.Event{V: int(f.v), Seq: f.seq, TS: event.Time(f.ts), Type: event.Type(unquote(line, f.typ)), Turn: unquote(line, f.turn)}
	if f.dataKind != 0 {
		e.Data = bytes.Clone(line[f.data[0]:f.data[1]])
	}
	return e, true
}

// isType reports whether the scanned line's type is t, without allocating.
func (f *fields) isType(line []byte, t event.Type) bool {
	return !f.typ.esc && string(line[f.typ.start:f.typ.end]) == string(t)
}

// lineReader yields the lines of a part in order.
type lineReader struct {
	br      *bufio.Reader
	acc     []byte
	partial bool  // the part ended in an unterminated line
	err     error // a read error other than EOF (a damaged .gz)
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its newline; the slice is valid until
// the next call. At the end of the part it returns an unterminated last
// line (with partial set), then false.
func (lr *lineReader) next() ([]byte, bool) {
	if lr.partial || lr.err != nil {
		return nil, false
	}
	lr.acc = lr.acc[:0]
	for {
		b, err := lr.br.ReadSlice('\n')
		switch {
		case err == nil && len(lr.acc) == 0:
			return b[:len(b)-1], true
		case err == nil:
			lr.acc = append(lr.acc, b[:len(b)-1]...)
			return lr.acc, true
		case errors.Is(err, bufio.ErrBufferFull):
			lr.acc = append(lr.acc, b...)
			continue
		}
		lr.acc = append(lr.acc, b...)
		if err != io.EOF {
			lr.err = err
		}
		if len(bytes.TrimSpace(lr.acc)) == 0 {
			return nil, false
		}
		lr.partial = true
		return lr.acc, true
	}
}

// openLines opens a part for reading in order. damaged is called with
// true at the end if the part was a .gz that turned out damaged.
func openLines(p *part) (lr *lineReader, closeFn func() (damaged bool), err error) {
	f, gz, err := p.open()
	if err != nil {
		return nil, nil, err
	}
	if !gz {
		// A live file may grow while it is read: read what it held at
		// the start.
		st, err := f.Stat()
		if err != nil {
			p.done(f)
			return nil, nil, err
		}
		lr := newLineReader(io.NewSectionReader(f, 0, st.Size()))
		return lr, func() bool { p.done(f); return false }, nil
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		p.done(f)
		return newLineReader(bytes.NewReader(nil)), func() bool { return true }, nil
	}
	lr = newLineReader(zr)
	return lr, func() bool {
		zr.Close()
		p.done(f)
		return lr.err != nil
	}, nil
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
// range ends.
func (r *Reader) Range(from, to Bound, limit int) (evs []event.Event, truncated bool, st Stats, err error) {
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

	rr := rangeRead{from: from, to: to, limit: limit, withTS: !from.Time.IsZero() || !to.Time.IsZero(), st: st}
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
	for {
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

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ---- Search ----

// Hit is one Search result: a user or assistant message holding the query.
// For an assistant message, Channel is that of the input that started its
// turn (the channel the reply went back through), when that input is in
// the same part; From is empty.
type Hit struct {
	Seq     int64     `json:"seq"`
	TS      time.Time `json:"ts"`
	Turn    string    `json:"turn,omitempty"`
	Type    string    `json:"type"`
	Channel string    `json:"channel,omitempty"`
	From    string    `json:"from,omitempty"`
	// Snippet is about SnippetRunes runes of the content around the first
	// match, whitespace flattened to spaces, with "…" where it was cut.
	Snippet string `json:"snippet"`
}

// MarshalJSON writes TS as events do, in UTC with milliseconds.
func (h Hit) MarshalJSON() ([]byte, error) {
	type plain Hit
	return json.Marshal(struct {
		plain
		TS event.Time `json:"ts"`
	}{plain(h), event.Time(h.TS)})
}

// SnippetRunes is the length of Hit.Snippet, in runes, when the content is
// longer.
const SnippetRunes = 160

// defaultWindow is the block Search reads at a time from a plain part.
const defaultWindow = 1 << 20

// Search returns the user and assistant messages whose content contains
// query, newest first, at most limit (limit ≤ 0: no limit). Matching is
// case-insensitive under Unicode simple case folding (as strings.EqualFold:
// "ÉCOLE" finds "école", "k" finds "K" (Kelvin)). An empty query is an
// error.
//
// Search does not decode every line. It turns the query into a byte
// pattern that every line holding a match must contain in its JSON form
// (as encoding/json writes it: "<" as \u003c, "\"" as \", and each
// letter as any of its case forms), finds that pattern in big blocks with
// bytes.IndexByte on the pattern's rarest byte, and decodes only the lines
// around a find, checking the match lies in a user or assistant content.
// Case forms whose encoding has another length (K for k, ſ for s) cannot
// be in the pattern; lines holding one are checked in full. Parts are read
// newest first, several at once, and reading stops once limit hits are
// certain to be the newest.
func (r *Reader) Search(query string, limit int) ([]Hit, Stats, error) {
	q, err := compileQuery(query)
	if err != nil {
		return nil, Stats{}, err
	}
	parts, err := listParts(r.path)
	if err != nil {
		return nil, Stats{}, err
	}
	defer closeParts(parts)

	n := len(parts)
	type result struct {
		hits []Hit // newest first
		st   Stats
		err  error
	}
	res := make([]result, n)
	var (
		next   atomic.Int64 // the next part to take
		cutoff atomic.Int64 // parts after this one are not needed
		mu     sync.Mutex   // guards res, finished, prefix, have, over
	)
	cutoff.Store(math.MaxInt64)
	finished := make([]bool, n)
	prefix, have := 0, 0 // parts 0..prefix-1 are finished and hold have hits
	over := make(chan struct{})
	closed := n == 0
	if closed {
		close(over)
	}
	lower := func(c int) {
		if int64(c) < cutoff.Load() {
			cutoff.Store(int64(c))
		}
	}
	work := func(buf *searchBuf) {
		for {
			i := int(next.Add(1) - 1)
			if i >= n || int64(i) > cutoff.Load() {
				return
			}
			stop := func() bool { return int64(i) > cutoff.Load() }
			hits, st, err := r.searchPart(&parts[i], q, limit, stop, buf)
			mu.Lock()
			res[i] = result{hits, st, err}
			finished[i] = true
			if err != nil {
				lower(i) // nothing older matters now
			}
			for prefix < n && finished[prefix] {
				have += len(res[prefix].hits)
				prefix++
				if limit > 0 && have >= limit {
					lower(prefix - 1)
				}
			}
			if !closed && (prefix == n || int64(prefix) > cutoff.Load()) {
				closed = true
				close(over)
			}
			mu.Unlock()
		}
	}
	workers := r.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers = min(workers, n); workers <= 1 {
		buf := getSearchBuf()
		work(buf)
		putSearchBuf(buf)
	} else {
		// Workers still reading a part that turned out not to be needed
		// are not waited for: they see stop() at their next block and
		// end. They never touch the live file, which is part 0 and
		// always needed.
		for range workers {
			go func() {
				buf := getSearchBuf()
				defer putSearchBuf(buf)
				work(buf)
			}()
		}
	}
	<-over

	var hits []Hit
	var st Stats
	mu.Lock()
	for i := 0; i < n && int64(i) <= cutoff.Load(); i++ {
		if res[i].err != nil {
			mu.Unlock()
			return nil, st, fmt.Errorf("search %s: %w", parts[i].path, res[i].err)
		}
		hits = append(hits, res[i].hits...)
		st.add(res[i].st)
	}
	mu.Unlock()
	// Parts are in seq order already unless names and seqs disagree.
	slices.SortStableFunc(hits, func(a, b Hit) int { return cmpInt(b.Seq, a.Seq) })
	hits = slices.CompactFunc(hits, func(a, b Hit) bool { return a.Seq == b.Seq })
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, st, nil
}

// searchBuf is one worker's memory, reused across parts and searches.
type searchBuf struct {
	win []byte // a block of a plain part
	gz  []byte // a whole decompressed .gz part
	aux []byte // bytes before a block, when a turn's input is looked up
}

var searchBufs sync.Pool

func getSearchBuf() *searchBuf {
	if b, ok := searchBufs.Get().(*searchBuf); ok {
		return b
	}
	return &searchBuf{}
}

func putSearchBuf(b *searchBuf) { searchBufs.Put(b) }

// blockSource reads a part: either a plain file by ReadAt or a .gz part
// decompressed in memory.
type blockSource struct {
	f    *os.File
	mem  []byte
	size int64
}

// read returns the part's bytes [start, end), in buf if it must copy.
func (s *blockSource) read(start, end int64, buf *[]byte) ([]byte, error) {
	if s.f == nil {
		return s.mem[start:end], nil
	}
	n := int(end - start)
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	got, err := s.f.ReadAt(b, start)
	if got < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF // the file shrank: not a chat log's way
		}
		return nil, err
	}
	return b, nil
}

// searchPart searches one part from its end backwards, block by block,
// and returns its hits newest first: at most limit when limit > 0, since
// older ones could never be returned. stop reports that the part is no
// longer needed.
func (r *Reader) searchPart(p *part, q *query, limit int, stop func() bool, buf *searchBuf) (hits []Hit, st Stats, err error) {
	f, gz, err := p.open()
	if errors.Is(err, errPartGone) {
		return nil, Stats{Skipped: 1}, nil
	}
	if err != nil {
		return nil, st, err
	}
	defer p.done(f)
	st.Parts = 1
	src := blockSource{f: f}
	if gz {
		data, damaged, err := readGz(f, buf.gz)
		if err != nil {
			return nil, st, err
		}
		buf.gz = data
		if damaged {
			st.Skipped++
		}
		src = blockSource{mem: data, size: int64(len(data))}
	} else {
		fi, err := f.Stat()
		if err != nil {
			return nil, st, err
		}
		src.size = fi.Size()
	}

	s := lineSearch{q: q}
	// The last line may lack its newline: a crash mid-append, a damaged
	// .gz, or an append in progress. It is searched (in full) only if it
	// is nonetheless a whole event.
	end, err := lastNewline(&src, &buf.win)
	if err != nil {
		return nil, st, err
	}
	if end < src.size {
		tail, err := src.read(end, src.size, &buf.win)
		if err != nil {
			return nil, st, err
		}
		if tail = bytes.TrimSpace(tail); len(tail) > 0 {
			if h, ok := s.checkLine(tail, nil); ok {
				hits = append(hits, h...)
			}
		}
	}

	// Blocks start small and grow: a common query finds its newest hits
	// near the end, and each hit costs a decode.
	full := int64(r.window)
	if full <= 0 {
		full = defaultWindow
	}
	step := min(full, 64<<10)
	w := step
	for end > 0 && (limit <= 0 || len(hits) < limit) {
		if stop() {
			return nil, st, nil
		}
		start := max(0, end-w)
		data, err := src.read(start, end, &buf.win)
		if err != nil {
			return nil, st, err
		}
		off := start
		if start > 0 {
			// The block's first bytes end a line that began earlier.
			i := bytes.IndexByte(data, '\n')
			if i < 0 || i == len(data)-1 {
				w *= 2 // a line longer than the block
				continue
			}
			data, off = data[i+1:], start+int64(i)+1
		}
		// Bytes before the block, for finding a turn's input.
		prev := func(n int) []byte {
			from := max(0, off-int64(n))
			if from == off {
				return nil
			}
			b, err := src.read(from, off, &buf.aux)
			if err != nil {
				return nil
			}
			return b
		}
		found := s.block(data, prev)
		slices.Reverse(found)
		hits = append(hits, found...)
		end = off
		step = min(2*step, full)
		w = step
	}
	st.Skipped += s.skipped
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, st, nil
}

// lastNewline returns the offset just past the part's last newline (0 if
// it has none).
func lastNewline(src *blockSource, buf *[]byte) (int64, error) {
	const chunk = 4 << 10
	for end := src.size; end > 0; {
		start := max(0, end-chunk)
		b, err := src.read(start, end, buf)
		if err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// lineSearch finds hits in blocks of whole lines.
type lineSearch struct {
	q       *query
	skipped int
	fd      finder
}

// block returns the hits in data (whole lines, each ending in '\n'),
// oldest first. prev(n) returns up to n bytes preceding data.
func (s *lineSearch) block(data []byte, prev func(int) []byte) []Hit {
	var hits []Hit
	q := s.q
	if q.slow {
		for ls := 0; ls < len(data); {
			le := ls + bytes.IndexByte(data[ls:], '\n')
			if h, ok := s.checkLine(data[ls:le], func() lookback { return before(data, ls, prev) }); ok {
				hits = append(hits, h...)
			}
			ls = le + 1
		}
		return hits
	}
	s.fd.reset(q)
	pos := 0
	lineStart, lineEnd := -1, -1 // the line last scanned
	var f fields
	var scanned bool
	for pos < len(data) {
		at, trig := s.fd.next(data, pos)
		if at < 0 {
			break
		}
		if at >= lineEnd { // a new line
			lineStart = bytes.LastIndexByte(data[:at], '\n') + 1
			lineEnd = at + bytes.IndexByte(data[at:], '\n')
			f, scanned = scanLine(data[lineStart:lineEnd])
		}
		line := data[lineStart:lineEnd]
		next := lineEnd + 1
		if !scanned || trig || f.typ.esc {
			// Unsure, or a case form the pattern cannot see: decide
			// on the decoded line.
			if h, ok := s.checkLine(line, func() lookback { return before(data, lineStart, prev) }); ok {
				hits = append(hits, h...)
			}
			pos = next
			continue
		}
		if !f.isType(line, event.User) && !f.isType(line, event.Assistant) {
			pos = next
			continue
		}
		// The find must lie inside the content string to count.
		rel := at - lineStart
		if rel < f.content.start {
			pos = lineStart + f.content.start
			continue
		}
		if rel+len(q.sets) > f.content.end {
			pos = at + 1
			continue
		}
		m, valid := f.message(line)
		if !valid {
			s.skipped++
			pos = next
			continue
		}
		if h, ok := s.hit(m, func() lookback { return before(data, lineStart, prev) }); ok {
			hits = append(hits, h)
		}
		pos = next
	}
	return hits
}

// lookback is where to look for an assistant hit's turn input: first the
// bytes before its line in the block, then (if prev is set) up to 64 KiB
// more from before the block.
type lookback struct {
	block []byte
	prev  func(n int) []byte
}

func before(data []byte, lineStart int, prev func(int) []byte) lookback {
	return lookback{data[:lineStart], prev}
}

// channel returns the channel of the user event that started turn.
func (lb lookback) channel(turn string) string {
	ch, done := turnChannel(lb.block, turn)
	if done || lb.prev == nil {
		return ch
	}
	ch, _ = turnChannel(lb.prev(64<<10), turn)
	return ch
}

// checkLine decodes a whole line and returns its hit, if any. A malformed
// line is counted.
func (s *lineSearch) checkLine(line []byte, before func() lookback) ([]Hit, bool) {
	var m message
	f, ok := scanLine(line)
	if ok {
		m, ok = f.message(line)
	} else {
		m, ok = decodeMessage(line)
	}
	if !ok {
		if len(bytes.TrimSpace(line)) > 0 {
			s.skipped++
		}
		return nil, false
	}
	if m.typ != event.User && m.typ != event.Assistant {
		return nil, false
	}
	h, ok := s.hit(m, before)
	if !ok {
		return nil, false
	}
	return []Hit{h}, true
}

// hit checks a decoded message against the query and builds its Hit.
func (s *lineSearch) hit(m message, before func() lookback) (Hit, bool) {
	ms, me := foldIndex(m.content, s.q.folded)
	if ms < 0 {
		return Hit{}, false
	}
	h := Hit{Seq: m.seq, TS: m.ts, Turn: m.turn, Type: string(m.typ), Channel: m.channel, From: m.from,
		Snippet: snippet(m.content, ms, me)}
	if m.typ == event.Assistant && m.turn != "" && before != nil {
		h.Channel = before().channel(m.turn)
	}
	return h, true
}

// turnChannel looks back through the lines at the end of b (whole lines,
// each ending in a newline; the first may be cut) for the user event that
// started turn and returns its channel. done is false if b ran out first.
func turnChannel(b []byte, turn string) (channel string, done bool) {
	for range 256 {
		if len(b) == 0 {
			return "", false
		}
		b = b[:len(b)-1] // the newline ending the line before
		i := bytes.LastIndexByte(b, '\n') + 1
		line := b[i:]
		b = b[:i]
		var m message
		f, ok := scanLine(line)
		if ok {
			if !f.isType(line, event.User) {
				continue
			}
			m, ok = f.message(line)
		} else {
			m, ok = decodeMessage(line)
		}
		if !ok || m.typ != event.User {
			continue
		}
		if m.turn == turn {
			return m.channel, true
		}
		return "", true // an earlier turn's input: this turn's is not here
	}
	return "", true
}

// ---- The query ----

// query is a compiled Search query.
type query struct {
	folded []rune // the query, each rune folded by canon
	// sets[i] holds the bytes allowed at offset i of a find: every line
	// whose content holds the query holds such a run of bytes, unless it
	// holds one of triggers.
	sets     [][256]bool
	anchor   int    // the offset whose bytes are rarest
	anchors  []byte // the bytes allowed there
	triggers [][]byte
	// slow means the pattern cannot be trusted (the query holds U+FFFD,
	// which json also makes of invalid UTF-8): every message is decoded.
	slow bool
}

func compileQuery(s string) (*query, error) {
	if s == "" {
		return nil, errors.New("search: empty query")
	}
	// Invalid UTF-8 reads as U+FFFD per byte, as json decodes it.
	q := &query{}
	for _, r := range s {
		q.folded = append(q.folded, canon(r))
	}
	if strings.ContainsRune(s, utf8.RuneError) {
		q.slow = true
		return q, nil
	}
	for _, r := range s {
		enc := jsonEncode(r)
		base := len(q.sets)
		q.sets = append(q.sets, make([][256]bool, len(enc))...)
		for _, c := range orbit(r) {
			for _, alt := range encodings(c) {
				if len(alt) != len(enc) {
					q.addTrigger(alt)
					continue
				}
				for i, b := range alt {
					q.sets[base+i][b] = true
				}
			}
		}
	}
	best := math.MaxFloat64
	for i := range q.sets {
		cost := 0.0
		for b, ok := range q.sets[i] {
			if ok {
				cost += byteFreq(byte(b))
			}
		}
		if cost < best {
			best, q.anchor = cost, i
		}
	}
	for b, ok := range q.sets[q.anchor] {
		if ok {
			q.anchors = append(q.anchors, byte(b))
		}
	}
	return q, nil
}

func (q *query) addTrigger(t []byte) {
	for _, have := range q.triggers {
		if bytes.Equal(have, t) {
			return
		}
	}
	q.triggers = append(q.triggers, t)
}

// jsonEncode returns r as encoding/json writes it inside a string.
func jsonEncode(r rune) []byte {
	b, _ := json.Marshal(string(r))
	return b[1 : len(b)-1]
}

// encodings returns the ways a writer of the chat log may have put r:
// encoding/json's, and for <, > and & also the raw byte (json with
// SetEscapeHTML(false)).
func encodings(r rune) [][]byte {
	out := [][]byte{jsonEncode(r)}
	if r == '<' || r == '>' || r == '&' {
		out = append(out, []byte{byte(r)})
	}
	return out
}

// orbit returns r and every rune that folds to it.
func orbit(r rune) []rune {
	out := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, f)
	}
	return out
}

// canon folds r to the smallest rune of its simple-folding orbit, so that
// two runes are equal under folding iff their canon is.
func canon(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

// byteFreq estimates how often b occurs in a chat log, to pick the rarest
// byte of a pattern as the one to look for.
func byteFreq(b byte) float64 {
	const letters = "etaoinshrdlcumwfgypbvkjxqz" // most frequent first
	switch {
	case b == ' ':
		return 15
	case 'a' <= b && b <= 'z':
		return 10 / float64(1+strings.IndexByte(letters, b))
	case 'A' <= b && b <= 'Z':
		return 1 / float64(1+strings.IndexByte(letters, b-'A'+'a'))
	case '0' <= b && b <= '9':
		return 3
	case b == '"' || b == ':' || b == ',':
		return 6
	case b >= 0x80:
		return 0.5
	}
	return 0.8
}

// foldIndex returns the byte range of the first match of q (folded by
// canon) in s under simple folding, or -1, -1.
func foldIndex(s string, q []rune) (int, int) {
	if len(q) == 0 {
		return 0, 0
	}
	for i := 0; i < len(s); {
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		if canon(r) == q[0] {
			j, k := i+n, 1
			for ; k < len(q) && j < len(s); k++ {
				r2, n2 := rune(s[j]), 1
				if r2 >= utf8.RuneSelf {
					r2, n2 = utf8.DecodeRuneInString(s[j:])
				}
				if canon(r2) != q[k] {
					break
				}
				j += n2
			}
			if k == len(q) {
				return i, j
			}
		}
		i += n
	}
	return -1, -1
}

// snippet returns about SnippetRunes runes of s around s[ms:me], with
// whitespace flattened to spaces and "…" where it was cut.
func snippet(s string, ms, me int) string {
	room := SnippetRunes - utf8.RuneCountInString(s[ms:me])
	if room < 0 {
		room = 0
		me = ms
		for range SnippetRunes {
			_, n := utf8.DecodeRuneInString(s[me:])
			me += n
		}
	}
	// What is there on each side, up to room runes.
	haveB, haveA := 0, 0
	for i := ms; i > 0 && haveB < room; haveB++ {
		_, n := utf8.DecodeLastRuneInString(s[:i])
		i -= n
	}
	for i := me; i < len(s) && haveA < room; haveA++ {
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
	}
	b := min(haveB, room/2)
	a := min(haveA, room-b)
	b = min(haveB, room-a)
	start, end := ms, me
	for range b {
		_, n := utf8.DecodeLastRuneInString(s[:start])
		start -= n
	}
	for range a {
		_, n := utf8.DecodeRuneInString(s[end:])
		end += n
	}
	var sb strings.Builder
	sb.Grow(end - start + 8)
	if start > 0 {
		sb.WriteString("…")
	}
	for _, r := range s[start:end] {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			r = ' '
		}
		sb.WriteRune(r)
	}
	if end < len(s) {
		sb.WriteString("…")
	}
	return sb.String()
}

// finder finds the next place in a block where a query's pattern, or one
// of its triggers, occurs.
type finder struct {
	q      *query
	at     []int // per anchor byte: its next occurrence, -1 if unknown, len if none
	trigAt []int // per trigger: likewise
}

func (fd *finder) reset(q *query) {
	fd.q = q
	fd.at = fd.at[:0]
	for range q.anchors {
		fd.at = append(fd.at, -1)
	}
	fd.trigAt = fd.trigAt[:0]
	for range q.triggers {
		fd.trigAt = append(fd.trigAt, -1)
	}
}

// next returns the first offset ≥ pos where the pattern occurs in data,
// or where a trigger starts (trig true), whichever comes first; -1 if
// neither does. Successive calls must pass the same data and a pos that
// never decreases.
func (fd *finder) next(data []byte, pos int) (at int, trig bool) {
	q := fd.q
	plen := len(q.sets)
	best := len(data)
	for i, t := range q.triggers {
		if fd.trigAt[i] < pos {
			j := bytes.Index(data[pos:], t)
			if j < 0 {
				fd.trigAt[i] = len(data)
			} else {
				fd.trigAt[i] = pos + j
			}
		}
		if fd.trigAt[i] < best {
			best, trig = fd.trigAt[i], true
		}
	}
	from := pos
	for {
		// The first occurrence of any anchor byte at or after from+anchor.
		min := len(data)
		ap := from + q.anchor
		for i, c := range q.anchors {
			if fd.at[i] < ap {
				if ap >= len(data) {
					fd.at[i] = len(data)
				} else if j := bytes.IndexByte(data[ap:], c); j < 0 {
					fd.at[i] = len(data)
				} else {
					fd.at[i] = ap + j
				}
			}
			if fd.at[i] < min {
				min = fd.at[i]
			}
		}
		p := min - q.anchor
		if min == len(data) || p+plen > len(data) || p >= best {
			break
		}
		if matchAt(q.sets, data[p:p+plen]) {
			return p, false
		}
		from = p + 1
	}
	if best < len(data) {
		return best, trig
	}
	return -1, false
}

func matchAt(sets [][256]bool, b []byte) bool {
	for i := range sets {
		if !sets[i][b[i]] {
			return false
		}
	}
	return true
}
