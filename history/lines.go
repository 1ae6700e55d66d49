package history

// The hand-written JSON line scanner: decodes a chat-log line without
// encoding/json's reflection for the tail and range readers, and falls
// back to encoding/json for anything it is not sure of.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/frontdesk-hq/frontdesk/event"
)

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

// span is a JSON string's body within a line, between its quotes. The zero
// span is the empty string (also what null leaves).
type span struct {
	start, end int
	esc        bool // the body holds backslash escapes
}

// fields is what scanLine finds in a line.
type fields struct {
	v, seq    int64
	ts        time.Time
	typ, turn span
	data      [2]int // the data value's bytes, if any
	dataKind  byte   // the data value's first byte, 0 if absent
}

// scanLine is a fast, allocation-free reader of a chat-log line that finds
// an event's members without reflection; data is kept as raw bytes. ok
// means the line is valid JSON and json.Unmarshal would have decoded the
// very same event.Event; anything it is not sure of (an escaped or
// case-folded member name, a duplicate member, a number json rejects, a ts
// it cannot parse, deep nesting) makes it answer false, and the caller
// falls back to encoding/json. FuzzReadLine checks the agreement.
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
		bit, ok := s.member(&f, key)
		if !ok {
			return f, false
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
	return f, true
}

// member reads the value of the member named key into f and returns the
// member's bit (0 for one an Event does not have); ok is false when the
// line is one scanLine is not sure of.
func (s *scanner) member(f *fields, key []byte) (bit uint8, ok bool) {
	switch string(key) {
	case "v":
		bit = 1
		if f.v, ok = s.intOrNull(); !ok {
			return 0, false
		}
	case "seq":
		bit = 2
		if f.seq, ok = s.intOrNull(); !ok {
			return 0, false
		}
	case "ts":
		bit = 4
		// json hands null to event.Time, which rejects it.
		ts, ok := s.str()
		if !ok || ts.esc {
			return 0, false
		}
		var err error
		if f.ts, err = time.Parse(time.RFC3339Nano, string(s.b[ts.start:ts.end])); err != nil {
			return 0, false
		}
	case "type":
		bit = 8
		if f.typ, ok = s.strOrNull(); !ok {
			return 0, false
		}
	case "turn":
		bit = 16
		if f.turn, ok = s.strOrNull(); !ok {
			return 0, false
		}
	case "data":
		bit = 32
		if s.i < len(s.b) {
			f.dataKind = s.b[s.i]
		}
		f.data[0] = s.i
		if !s.value(0) {
			return 0, false
		}
		f.data[1] = s.i
	default:
		if foldsTo(key, "v", "seq", "ts", "type", "turn", "data") {
			return 0, false // json would match it case-insensitively
		}
		if !s.value(0) {
			return 0, false
		}
	}
	return bit, true
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
