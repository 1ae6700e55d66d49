package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdisk"
)

var historyT0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// historyData writes a data directory whose chat log has a gzipped part,
// a plain part and the live file (with one malformed line), and returns
// the directory, a config file naming it, and the events in seq order.
func historyData(t *testing.T) (dir, cfg string, evs []event.Event) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	add := func(typ event.Type, turn string, data any) {
		e := event.New(typ, turn, historyT0.Add(time.Duration(len(evs)+1)*time.Minute), data)
		e.Seq, e.V = int64(len(evs)+1), event.LogVersion
		evs = append(evs, e)
	}
	turn := func(n int, channel, from, input, reply string) {
		id := fmt.Sprintf("t%d", n)
		add(event.User, id, event.UserData{Channel: channel, From: from, Content: input})
		add(event.Assistant, id, event.AssistantData{Content: reply})
		add(event.TurnEnd, id, event.TurnEndData{Status: event.StatusCompleted, DurationMS: 1500})
	}
	turn(1, "web", "", "Hello there", "Hi! How can I help?")
	turn(2, "email", "bob@example.com", "J'étais à l'école", "Très bien.")
	turn(3, "console", "", "Tell me about the <b>quarterly</b> report & more", "It is due Friday.")
	turn(4, "web", "", "Write a very long answer please", strings.Repeat("long words here ", 30))
	add(event.Notice, "", event.TextData{Text: "The current request was canceled."})
	add(event.Reset, "", event.ResetData{Reason: "manual", Kept: 20})
	// A webhook message recorded on arrival while a turn ran, started later.
	add(event.User, "t15", event.UserData{Channel: "webhook", From: "ann@x.io", Content: "Are we on for Tuesday?", Queued: true})
	add(event.TurnStart, "t15", event.TurnStartData{InputSeq: 15, WaitedMS: 4200})
	add(event.Assistant, "t15", event.AssistantData{Content: "Yes, Tuesday at ten."})
	add(event.TurnEnd, "t15", event.TurnEndData{Status: event.StatusCompleted, DurationMS: 800})

	lines := func(evs []event.Event) []byte {
		var b []byte
		for _, e := range evs {
			l, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			b = append(append(b, l...), '\n')
		}
		return b
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(lines(evs[:3]))
	zw.Close()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("chat_history-2026-11-22T09-00-00.000.ndjson.gz", gz.Bytes())
	write("chat_history-2026-11-22T10-00-00.000.ndjson", lines(evs[3:6]))
	write("chat_history.ndjson", append(append(lines(evs[6:9]), "{broken\n"...), lines(evs[9:])...))

	cfg = filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "data_dir: %q\n", dir), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, cfg, evs
}

func runHistoryT(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = runHistory(args, func(k string) string { return env[k] }, &out, &errb)
	return out.String(), errb.String(), err
}

func ndjsonSeqs(t *testing.T, out string) []int64 {
	t.Helper()
	var seqs []int64
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var v struct{ Seq int64 }
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("not NDJSON: %q: %v", sc.Text(), err)
		}
		seqs = append(seqs, v.Seq)
	}
	return seqs
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func TestHistoryJSON(t *testing.T) {
	_, cfg, evs := historyData(t)
	last := evs[len(evs)-1].Seq
	tests := []struct {
		name        string
		args        []string
		want        []int64
		wantStderr  string
		noStderr    bool
		wantInLines []string
	}{
		{"recent", []string{"recent", "-n", "3"}, seqRange(last-2, last), "", true, nil},
		{"recent across parts", []string{"recent", "-n", "100"}, seqRange(1, last), "skipped 1", false, nil},
		{"range by seq", []string{"range", "-from", "2", "-to", "8"}, seqRange(2, 8), "", true, nil},
		{"range by time", []string{"range", "-from", historyT0.Add(4 * time.Minute).Format(time.RFC3339), "-to", historyT0.Add(5 * time.Minute).In(time.FixedZone("", 3600)).Format(time.RFC3339)},
			[]int64{4, 5}, "", true, nil},
		{"range open end", []string{"range", "-from", "12"}, seqRange(12, last), "", false, nil},
		{"range limited", []string{"range", "-limit", "2"}, []int64{1, 2}, "continue with -from 3", false, nil},
		{"search", []string{"search", "ecole"}, []int64{4}, "no index at", false, []string{`"channel":"email"`, `"from":"bob@example.com"`, `"snippet":"J'étais à l'«école»"`, `"score":`}},
		{"search flags after the query", []string{"search", "<B>quarterly</b>", "-limit", "5"}, []int64{7}, "scanning the chat log", false, nil},
		{"search several words in any order", []string{"search", "-limit", "5", "REPORT", "quarterly</b>"}, []int64{7}, "", false, nil},
		{"search partial matches", []string{"search", "answer", "zebra"}, []int64{10}, "best partial matches", false, nil},
		{"search filter", []string{"search", "channel:email"}, []int64{5, 4}, "", false, nil},
		{"search none", []string{"search", "zebra"}, nil, "", false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runHistoryT(t, nil, append(append([]string{}, tc.args...), "-json", "-config", cfg)...)
			if err != nil {
				t.Fatalf("err %v, stderr %q", err, errOut)
			}
			if got := ndjsonSeqs(t, out); !slices.Equal(got, tc.want) {
				t.Errorf("seqs %v, want %v\n%s", got, tc.want, out)
			}
			if !strings.Contains(errOut, tc.wantStderr) || tc.noStderr && errOut != "" {
				t.Errorf("stderr %q, want it to hold %q", errOut, tc.wantStderr)
			}
			for _, s := range tc.wantInLines {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %s:\n%s", s, out)
				}
			}
		})
	}
}

func TestHistoryJSONEventsAreTheLogLines(t *testing.T) {
	dir, _, evs := historyData(t)
	out, _, err := runHistoryT(t, nil, "range", "-json", "-data", dir)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for _, e := range evs {
		b, _ := json.Marshal(e)
		want.Write(append(b, '\n'))
	}
	if out != want.String() {
		t.Errorf("NDJSON:\n%s\nwant:\n%s", out, want.String())
	}
}

func TestHistoryTable(t *testing.T) {
	_, cfg, evs := historyData(t)
	var out, errOut string
	var err error
	for _, width := range []int{80, 100, 150} {
		env := map[string]string{"COLUMNS": fmt.Sprint(width)}
		if width == 100 {
			env = nil // the default
		}
		out, errOut, err = runHistoryT(t, env, "recent", "-n", "100", "-config", cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(errOut, "skipped 1 ") {
			t.Errorf("stderr %q, want a note of the skipped line", errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != len(evs)+1 {
			t.Fatalf("%d lines, want a header and %d rows:\n%s", len(lines), len(evs), out)
		}
		if f := strings.Fields(lines[0]); !slices.Equal(f, []string{"SEQ", "TIME", "TYPE", "CHANNEL", "TEXT"}) {
			t.Errorf("header %q", lines[0])
		}
		textCol := utf8.RuneCountInString(lines[0][:strings.Index(lines[0], "TEXT")])
		for i, l := range lines {
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("width %d: line %d has %d runes: %q", width, i, n, l)
			}
			if i == 0 {
				continue
			}
			if !strings.Contains(l, evs[i-1].TS.Std().Local().Format(time.RFC3339)) {
				t.Errorf("line %d lacks its local time: %q", i, l)
			}
			if r := []rune(l); len(r) <= textCol || r[textCol-1] != ' ' || r[textCol] == ' ' {
				t.Errorf("line %d is not aligned: %q", i, l)
			}
		}
		if l := lines[11]; !strings.Contains(l, "long words here") || !strings.HasSuffix(l, "…") {
			t.Errorf("width %d: the long answer is not cut with …: %q", width, l)
		}
	}
	for _, want := range []string{
		"email:bob@example.com  J'étais à l'école",
		"Tell me about the <b>quarterly</b> report & more",
		"completed in 1.5s",
		"manual, kept 20 exchanges",
		"webhook:ann@x.io       [queued] Are we on for Tuesday?",
		"queued input #15 started after waiting 4.2s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	out, _, err = runHistoryT(t, nil, "search", "quarterly", "-config", cfg)
	if err != nil || !strings.HasPrefix(out, "SEQ") || !strings.Contains(out, "console") ||
		!strings.Contains(out, "Tell me about the <b>«quarterly»</b>") {
		t.Errorf("search table (err %v):\n%s", err, out)
	}
	out, errOut, err = runHistoryT(t, nil, "search", "nothing-like-this", "-config", cfg)
	if err != nil || out != "" || !strings.Contains(errOut, "no matches") {
		t.Errorf("no match: out %q, stderr %q, err %v", out, errOut, err)
	}
}

// With an index file, search reads it (read-only) and says how far it is
// behind the log; a damaged one is passed over for a scan.
func TestHistorySearchUsesIndex(t *testing.T) {
	dir, cfg, evs := historyData(t)
	path := filepath.Join(dir, index.FileName)
	ix, _, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(context.Background(), evs[:6]); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	before, _ := os.ReadFile(path)
	out, errOut, err := runHistoryT(t, nil, "search", "-json", "-config", cfg, "ecole")
	if err != nil || !slices.Equal(ndjsonSeqs(t, out), []int64{4}) {
		t.Fatalf("out %q err %v", out, err)
	}
	if !strings.Contains(errOut, "searching the index "+path) || !strings.Contains(errOut, fmt.Sprintf("%d events behind", evs[len(evs)-1].Seq-evs[5].Seq)) {
		t.Errorf("stderr %q", errOut)
	}
	// Seq 7 is not indexed yet: the index answers for what it holds.
	if out, _, _ := runHistoryT(t, nil, "search", "-json", "-config", cfg, "quarterly"); out != "" {
		t.Errorf("found what the index does not hold: %s", out)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a read-only search changed the index file")
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = runHistoryT(t, nil, "search", "-json", "-config", cfg, "quarterly")
	if err != nil || !slices.Equal(ndjsonSeqs(t, out), []int64{7}) || !strings.Contains(errOut, "not usable") {
		t.Errorf("damaged index: out %q stderr %q err %v", out, errOut, err)
	}
	// A bad query is the caller's error, with or without an index.
	if _, _, err := runHistoryT(t, nil, "search", "-config", cfg, "type:robot"); err == nil || !strings.Contains(err.Error(), "type:user") {
		t.Errorf("bad query: %v", err)
	}
}

func TestHistoryErrors(t *testing.T) {
	dir, cfg, _ := historyData(t)
	empty := t.TempDir()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no command", nil, "missing command"},
		{"unknown command", []string{"tail"}, `unknown command "tail"`},
		{"bad flag", []string{"recent", "-x"}, "flag provided but not defined: -x"},
		{"bad n", []string{"recent", "-n", "0"}, "-n 0"},
		{"stray argument", []string{"recent", "5"}, `unexpected argument "5"`},
		{"bad bound", []string{"range", "-from", "yesterday"}, "-from: \"yesterday\" is neither"},
		{"inverted seqs", []string{"range", "-from", "9", "-to", "3"}, "-from 9 is after -to 3"},
		{"inverted times", []string{"range", "-from", "2026-11-22T12:00:00Z", "-to", "2026-11-22T11:00:00Z"}, "is after"},
		{"negative limit", []string{"range", "-limit", "-1"}, "-limit -1"},
		{"no query", []string{"search", "-limit", "3"}, "missing QUERY"},
		{"no log", []string{"recent", "-data", empty}, "no chat log at " + filepath.Join(empty, "chat_history.ndjson")},
		{"bad config", []string{"recent", "-config", filepath.Join(dir, "none.yaml")}, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if len(args) > 0 && !slices.Contains(args, "-data") && !slices.Contains(args, "-config") {
				args = append(args, "-config", cfg)
			}
			out, _, err := runHistoryT(t, nil, args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err %v, want it to mention %q", err, tc.wantErr)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
	for _, args := range [][]string{{"-h"}, {"search", "-h"}} {
		_, errOut, err := runHistoryT(t, nil, args...)
		if err != nil || !strings.Contains(errOut, "usage: frontdesk history recent") {
			t.Errorf("%v: err %v, stderr %q; want the usage", args, err, errOut)
		}
	}
	// After "--" a word that looks like a flag is part of the query.
	out, _, err := runHistoryT(t, nil, "search", "-json", "-config", cfg, "--", "-n")
	if err != nil || out != "" {
		t.Errorf("search -- -n: out %q, err %v", out, err)
	}
}

// An index damaged in its middle (header intact) opens read-only; the
// search that reads a damaged page falls back to scanning the log and
// gives every hit, instead of failing.
func TestHistorySearchIndexDamagedInTheMiddle(t *testing.T) {
	dir := t.TempDir()
	var evs []event.Event
	for i := range 300 {
		turn := fmt.Sprintf("t%d", 2*i+1)
		for _, e := range []event.Event{
			event.New(event.User, turn, historyT0.Add(time.Duration(i)*time.Minute), event.UserData{Channel: "web", Content: fmt.Sprintf("question %d about the lilies in the garden", i)}),
			event.New(event.Assistant, turn, historyT0.Add(time.Duration(i)*time.Minute), event.AssistantData{Content: fmt.Sprintf("answer %d: the lilies look fine", i)}),
		} {
			e.Seq, e.V = int64(len(evs)+1), event.LogVersion
			evs = append(evs, e)
		}
	}
	var log bytes.Buffer
	for _, e := range evs {
		l, _ := json.Marshal(e)
		log.Write(append(l, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_history.ndjson"), log.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "data_dir: %q\n", dir), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, index.FileName)
	ix, _, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	testdisk.DamagePages(t, path, 4)
	out, errOut, err := runHistoryT(t, nil, "search", "-json", "-limit", "200", "-config", cfg, "lilies")
	if err != nil || len(ndjsonSeqs(t, out)) != 200 || !strings.Contains(errOut, "is damaged") {
		t.Errorf("out %d lines, stderr %q, err %v", len(ndjsonSeqs(t, out)), errOut, err)
	}
}

func TestHealthcheck(t *testing.T) {
	// The real server, and stand-ins for the answers it gives in trouble.
	real := runServer(t, "-data", t.TempDir())
	unhealthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"status":"shutting down"}`, http.StatusServiceUnavailable)
	}))
	defer unhealthy.Close()
	tokenOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer tokenOnly.Close()
	hang := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer hanging.Close()
	defer close(hang)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now

	host := func(u string) string { p, _ := url.Parse(u); return p.Host }
	port := func(u string) string { _, p, _ := net.SplitHostPort(host(u)); return p }
	tests := []struct {
		name    string
		args    []string
		token   string
		wantErr string // "" for exit 0
	}{
		{"healthy", []string{"-addr", host(real.url)}, "", ""},
		{"healthy on a wildcard address", []string{"-addr", "0.0.0.0:" + port(real.url)}, "", ""},
		{"503", []string{"-addr", host(unhealthy.URL)}, "", "503"},
		{"token sent", []string{"-addr", host(tokenOnly.URL)}, "s3cret", ""},
		{"token missing", []string{"-addr", host(tokenOnly.URL)}, "", "401"},
		{"nothing listening", []string{"-addr", closed}, "", "connection refused"},
		{"no answer in time", []string{"-addr", host(hanging.URL), "-timeout", "200ms"}, "", "did not answer within 200ms"},
		{"bad flag", []string{"-nope"}, "", "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			getenv := func(k string) string {
				if k == "FRONTDESK_AUTH_TOKEN" {
					return tc.token
				}
				return ""
			}
			err := run(t.Context(), append([]string{"frontdesk", "healthcheck"}, tc.args...), getenv,
				strings.NewReader(""), &stdout, &stderr)
			if tc.wantErr == "" {
				if err != nil || !strings.Contains(stdout.String(), "ok") {
					t.Fatalf("err %v, stdout %q; want ok", err, stdout.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
}

// TestMCPStdio drives `frontdesk mcp` as a desktop MCP client would: over
// its stdin and stdout, with no server running.
func TestMCPStdio(t *testing.T) {
	_, cfg, _ := historyData(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"frontdesk", "mcp", "-config", cfg}, func(string) string { return "" }, inR, outW, &stderr)
		outW.Close()
	}()
	c := sdk.NewClient(&sdk.Implementation{Name: "desktop", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "history_search", Arguments: map[string]any{"query": "ecole"}})
	if err != nil || res.IsError {
		t.Fatalf("search: %+v %v", res, err)
	}
	if out := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(out, `"seq":4`) || !strings.Contains(out, "«école»") {
		t.Errorf("search: %s", out)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "history_recent", Arguments: map[string]any{"n": 10}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "long words here") {
		t.Errorf("recent: %+v %v", res, err)
	}
	cs.Close() // the client goes away: frontdesk mcp ends cleanly
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("frontdesk mcp: %v", err)
	}
	if !strings.Contains(stderr.String(), "scanning the chat log") {
		t.Errorf("stderr %q does not say how it searched", stderr.String())
	}
}

// TestMCPStdioAnswersEverythingReadAtEndOfInput pipes requests into
// `frontdesk mcp` without waiting for answers, as `printf … | frontdesk
// mcp` does: every request read is answered before it exits (before, the
// end of input dropped 1 or 2 of the 2 answers), a garbage line and a
// batch are answered with JSON-RPC errors and the lines after them still
// run, and a search without hits says "hits":[] as the HTTP API does.
func TestMCPStdioAnswersEverythingReadAtEndOfInput(t *testing.T) {
	_, cfg, _ := historyData(t)
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"history_search","arguments":{"query":"zzzunfound"}}}`,
		`this is not json`,
		`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"history_search","arguments":{"query":"ecole"}}}`,
	}, "\n") + "\n"
	for i := range 20 {
		var stdout, stderr strings.Builder
		pr, pw, err := os.Pipe() // as a shell's printf | frontdesk mcp
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = pw.WriteString(input); pw.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = run(ctx, []string{"frontdesk", "mcp", "-config", cfg}, func(string) string { return "" }, pr, &stdout, &stderr)
		cancel()
		pr.Close()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, stderr.String())
		}
		byID := map[string]string{}
		for line := range strings.Lines(stdout.String()) {
			var m struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("run %d: stdout line %q: %v", i, line, err)
			}
			key := string(m.ID)
			if m.Error != nil {
				key += fmt.Sprintf("/%d", m.Error.Code)
			}
			byID[key] = line
		}
		for _, want := range []string{"1", "2", "3", "null/-32700", "null/-32600"} {
			if byID[want] == "" {
				t.Fatalf("run %d: no answer %s among %d lines:\n%s", i, want, len(byID), stdout.String())
			}
		}
		if !strings.Contains(byID["2"], `\"hits\":[]`) {
			t.Errorf("run %d: an empty search answered %s, want \"hits\":[]", i, byID["2"])
		}
		if !strings.Contains(byID["3"], `\"seq\":4`) {
			t.Errorf("run %d: the search after the bad lines answered %s", i, byID["3"])
		}
	}
}
