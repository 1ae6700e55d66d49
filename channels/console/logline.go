package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
)

// logWriter takes the server's log lines while the REPL runs and prints
// each through the printer, in the console's own form: it ends a streamed
// line first and keeps the prompt below (a raw slog line ends in a bare
// LF, which in raw mode leaves the next prompt mid-row).
type logWriter struct{ p *printer }

func (l logWriter) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line != "" {
			l.p.say(l.p.o.style(dim, humanLog(line)))
		}
	}
	return len(b), nil
}

// readableLog writes log lines in the console's own form, without a
// prompt to keep (no REPL runs).
type readableLog struct {
	w io.Writer
	o Options
}

func (l readableLog) Write(b []byte) (int, error) {
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line != "" {
			out.WriteString(l.o.style(dim, humanLog(line)) + "\n")
		}
	}
	if _, err := io.WriteString(l.w, out.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}

// humanLog turns one slog line (text or JSON) into "[log] message (k=v …)"
// — "[warning]", "[error]", "[debug]" by level — without the timestamp the
// terminal does not need. A line it cannot read is shown as it is.
func humanLog(line string) string {
	var kv [][2]string
	if strings.HasPrefix(line, "{") {
		kv = jsonPairs(line)
	} else {
		kv = logfmtPairs(line)
	}
	if kv == nil {
		return line
	}
	var level, msg string
	var attrs []string
	for _, p := range kv {
		switch p[0] {
		case "time":
		case "level":
			level = p[1]
		case "msg":
			msg = p[1]
		default:
			v := p[1]
			if v == "" || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || r == '=' }) {
				v = strconv.Quote(v)
			}
			attrs = append(attrs, p[0]+"="+v)
		}
	}
	tag := "[log]"
	switch strings.ToUpper(level) {
	case "WARN":
		tag = "[warning]"
	case "ERROR":
		tag = "[error]"
	case "DEBUG":
		tag = "[debug]"
	}
	s := tag + " " + msg
	if len(attrs) > 0 {
		s += " (" + strings.Join(attrs, " ") + ")"
	}
	return s
}

// logfmtPairs reads slog's text format: key=value, values quoted Go-style
// when they need it. Nil if line is not in that form.
func logfmtPairs(line string) [][2]string {
	var out [][2]string
	for s := strings.TrimSpace(line); s != ""; s = strings.TrimLeft(s, " ") {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || strings.ContainsAny(s[:eq], " \"") {
			return nil
		}
		key, rest := s[:eq], s[eq+1:]
		var val string
		if strings.HasPrefix(rest, `"`) {
			end := 1
			for end < len(rest) && rest[end] != '"' {
				if rest[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(rest) {
				return nil
			}
			v, err := strconv.Unquote(rest[:end+1])
			if err != nil {
				return nil
			}
			val, s = v, rest[end+1:]
		} else {
			sp := strings.IndexByte(rest, ' ')
			if sp < 0 {
				sp = len(rest)
			}
			val, s = rest[:sp], rest[sp:]
		}
		out = append(out, [2]string{key, val})
	}
	return out
}

// jsonPairs reads slog's JSON format, keeping the keys' order; nested
// values are kept as JSON. Nil if line is not a JSON object.
func jsonPairs(line string) [][2]string {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out [][2]string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(bytes.TrimSpace(raw))
		}
		out = append(out, [2]string{key, s})
	}
	return out
}

// Keys at the prompt that readline has no binding for would be kept in
// the line as invisible characters (and sent). Ctrl-\ stops the server
// (see Options.Stop); the others are ignored.
const (
	keyCtrlBackslash = 0x1c
)

// filterRune is readline's FuncFilterInputRune: it drops unbound control
// keys and turns Ctrl-\ into a stop request.
func (r *repl) filterRune(c rune) (rune, bool) {
	switch c {
	case keyCtrlBackslash:
		if r.stop != nil && r.stopping.CompareAndSwap(false, true) {
			r.stop()
		}
		return c, false
	case 0x0f, 0x11, 0x16, 0x18, 0x1d, 0x1e: // Ctrl-O, -Q, -V, -X, -], -^
		return c, false
	}
	return c, true
}

// stripControl removes control characters but tab from a typed line, so
// that a command is recognised and nothing invisible is sent.
func stripControl(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\t' {
			return -1
		}
		return r
	}, s)
}

// clientCount says "1 client", "2 clients".
func clientCount(n int) string {
	if n == 1 {
		return "1 client"
	}
	return fmt.Sprintf("%d clients", n)
}
