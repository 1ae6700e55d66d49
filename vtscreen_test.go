package main

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// vtScreen is just enough of a VT100 to show what a person would see:
// printable text with auto-wrap, CR, LF, BS, and the CSI sequences
// readline uses (cursor up/down/forward/back, column, erase line/screen).
// Colours and queries are ignored. Scrollback is unbounded.
type vtScreen struct {
	width    int
	rows     [][]rune
	soft     map[int]bool // rows that continue the previous one (auto-wrap)
	row, col int
}

func newVTScreen(width int) *vtScreen {
	return &vtScreen{width: width, rows: [][]rune{nil}, soft: map[int]bool{}}
}

func (s *vtScreen) line() *[]rune {
	for len(s.rows) <= s.row {
		s.rows = append(s.rows, nil)
	}
	return &s.rows[s.row]
}

func (s *vtScreen) put(r rune) {
	if s.col >= s.width {
		s.row++
		s.col = 0
		s.soft[s.row] = true
	}
	l := s.line()
	for len(*l) <= s.col {
		*l = append(*l, ' ')
	}
	(*l)[s.col] = r
	s.col++
}

func (s *vtScreen) write(b []byte) {
	for len(b) > 0 {
		if b[0] == 0x1b && len(b) > 1 && b[1] == '[' {
			i := 2
			for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
				i++
			}
			if i == len(b) {
				return // an incomplete sequence at the end of a chunk
			}
			s.csi(string(b[2:i]), b[i])
			b = b[i+1:]
			continue
		}
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		switch r {
		case '\r':
			s.col = 0
		case '\n':
			s.row++
			delete(s.soft, s.row)
		case '\b':
			if s.col > 0 {
				s.col--
			}
		case 0x07, 0x1b:
		default:
			s.put(r)
		}
	}
}

func (s *vtScreen) csi(params string, final byte) {
	n := 1
	if v, err := strconv.Atoi(strings.TrimPrefix(params, "?")); err == nil && v > 0 {
		n = v
	}
	switch final {
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
		if l := s.line(); len(*l) > s.col {
			*l = (*l)[:s.col]
		}
	case 'J':
		if l := s.line(); len(*l) > s.col {
			*l = (*l)[:s.col]
		}
		if s.row+1 < len(s.rows) {
			s.rows = s.rows[:s.row+1]
		}
	}
}

// String returns the logical lines: rows joined where the terminal
// wrapped a long line, trailing blanks trimmed.
func (s *vtScreen) String() string {
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
