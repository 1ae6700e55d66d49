// Package vtscreen is just enough of a VT100/xterm for tests to see what a
// person would see in a terminal: printable text with auto-wrap, CR, LF,
// BS, and the CSI sequences readline uses (cursor up/down/forward/back,
// column, erase line/screen, cursor position report). Colours are
// ignored. Scrollback is unbounded. It is imported only by tests.
//
// Auto-wrap is deferred as in xterm and tmux: a character written in the
// last column leaves the cursor there with a wrap pending, and only the
// next printable character moves it to the next row. CR, BS, cursor
// movements and erases cancel the pending wrap; a cursor position report
// in that state names the last column. Programs that assume the cursor
// already moved to the next row go wrong on real terminals, and here.
package vtscreen

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Screen is a terminal of a fixed width.
type Screen struct {
	width, height int
	rows          [][]rune
	soft          map[int]bool // rows that continue the previous one (auto-wrap)
	row, col      int          // col is 0..width-1
	pending       bool         // a character was written in the last column: wrap before the next
	partial       []byte       // an escape sequence or a UTF-8 rune cut by the end of a chunk
}

// New returns an empty screen width columns wide. height bounds only the
// row a cursor position report names.
func New(width, height int) *Screen {
	return &Screen{width: width, height: height, rows: [][]rune{nil}, soft: map[int]bool{}}
}

func (s *Screen) line() *[]rune {
	for len(s.rows) <= s.row {
		s.rows = append(s.rows, nil)
	}
	return &s.rows[s.row]
}

func (s *Screen) put(r rune) {
	if s.pending {
		s.row++
		s.col = 0
		s.soft[s.row] = true
		s.pending = false
	}
	l := s.line()
	for len(*l) <= s.col {
		*l = append(*l, ' ')
	}
	(*l)[s.col] = r
	if s.col == s.width-1 {
		s.pending = true
	} else {
		s.col++
	}
}

// Feed shows b and returns what the terminal answers (cursor position
// reports), to be written back to the program.
func (s *Screen) Feed(b []byte) (answer []byte) {
	b = append(s.partial, b...)
	s.partial = nil
	for len(b) > 0 {
		if b[0] == 0x1b {
			if len(b) == 1 {
				s.partial = b
				return answer
			}
			if b[1] != '[' {
				b = b[2:] // a two-character escape: ignored
				continue
			}
			i := 2
			for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
				i++
			}
			if i == len(b) {
				s.partial = b
				return answer
			}
			answer = append(answer, s.csi(string(b[2:i]), b[i])...)
			b = b[i+1:]
			continue
		}
		if !utf8.FullRune(b) {
			s.partial = b
			return answer
		}
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		s.control(r)
	}
	return answer
}

// Write shows p (answers are dropped); Screen is an io.Writer.
func (s *Screen) Write(p []byte) (int, error) {
	s.Feed(p)
	return len(p), nil
}

func (s *Screen) control(r rune) {
	switch r {
	case '\r':
		s.col, s.pending = 0, false
	case '\n':
		s.row++
		s.pending = false
	case '\b':
		if s.col > 0 && !s.pending {
			s.col--
		}
		s.pending = false
	case 0x07:
	default:
		if r >= 0x20 {
			s.put(r)
		}
	}
}

func (s *Screen) csi(params string, final byte) (answer []byte) {
	n := 1
	if v, err := strconv.Atoi(strings.TrimPrefix(params, "?")); err == nil && v > 0 {
		n = v
	}
	switch final {
	case 'm': // colours: no effect on the cursor
		return nil
	case 'n':
		if params == "6" {
			return fmt.Appendf(nil, "\x1b[%d;%dR", min(s.row, s.height-1)+1, s.col+1)
		}
		return nil
	case 'A':
		s.row = max(0, s.row-n)
	case 'B':
		s.row += n
	case 'C':
		s.col = min(s.width-1, s.col+n)
	case 'D':
		s.col = max(0, s.col-n)
	case 'G':
		s.col = min(s.width-1, n-1)
	case 'K':
		s.eraseLine()
	case 'J':
		s.eraseLine()
		if s.row+1 < len(s.rows) {
			s.rows = s.rows[:s.row+1]
		}
		for r := range s.soft {
			if r > s.row {
				delete(s.soft, r)
			}
		}
	}
	s.pending = false
	return nil
}

// eraseLine clears from the cursor (included) to the end of its row; a
// row cleared whole no longer continues the one above.
func (s *Screen) eraseLine() {
	if l := s.line(); len(*l) > s.col {
		*l = (*l)[:s.col]
	}
	if s.col == 0 {
		delete(s.soft, s.row)
	}
}

// Cursor returns the cursor's row (from the top of the scrollback) and
// column, both from 0.
func (s *Screen) Cursor() (row, col int) { return s.row, s.col }

// String returns the logical lines: rows joined where the terminal
// wrapped a long line, trailing blanks trimmed.
func (s *Screen) String() string {
	var b strings.Builder
	for i, l := range s.rows {
		if i > 0 && !s.soft[i] {
			b.WriteByte('\n')
		}
		text := string(l)
		if i+1 >= len(s.rows) || !s.soft[i+1] {
			text = strings.TrimRight(text, " ")
		}
		b.WriteString(text)
	}
	return b.String()
}
