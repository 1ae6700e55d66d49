package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
)

// apiDo sends one request to the running binary and decodes its JSON.
func apiDo(t *testing.T, method, url, ctype string, body []byte, want int) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	if resp.StatusCode != want {
		t.Fatalf("%s %s = %d %s, want %d", method, url, resp.StatusCode, b, want)
	}
	return out
}

// filesHolding lists the files under dir whose bytes (decompressed for a
// .gz) hold word.
func filesHolding(t *testing.T, dir, word string) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil // renamed away meanwhile
		}
		if strings.HasSuffix(path, ".gz") {
			if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
				if plain, err := io.ReadAll(zr); err == nil || len(plain) > 0 {
					b = append(b, plain...)
				}
			}
		}
		if bytes.Contains(bytes.ToLower(b), []byte(word)) {
			rel, _ := filepath.Rel(dir, path)
			found = append(found, rel)
		}
		return nil
	})
	return found
}

// The real binary on one node: a message with a secret word, its reply
// (the demo agent echoes it), a file attached to it holding the word, a
// memory item quoting it, a reset (short_term.md, the audit file, a
// consolidation), and a rotation of the chat log into a part gzipped as
// logrotate would — then both messages erased with DELETE
// /api/history/{seq}. Within 10 s no file under data_dir (chat log live
// and rotated, .gz decompressed, audit, memory, items.json, search.db and
// its WAL, attachments) holds the word; the history API, `frontdesk
// history` and /mcp show the tombstones with their seqs.
func TestBinaryEraseLeavesNoTrace(t *testing.T) {
	const secret = "zebrawombat42"
	dir := t.TempDir()
	cfg := "data_dir: state\nsession:\n  log_rotate_mb: 1\n  idle_timeout_sec: 0\nagent:\n  demo:\n    delay_ms: 0\nmcp:\n  serve: true\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, dir, nil, "-addr", "127.0.0.1:0")
	data := filepath.Join(dir, "state")

	att := apiDo(t, "POST", p.url+"/api/attachments?name=locker.txt", "text/plain",
		[]byte("locker note: the code is "+secret+"\n"), 201)
	text := "my locker code is " + secret + " and it opens the blue door"
	body, _ := json.Marshal(map[string]any{"content": text, "attachments": []string{att["sha256"].(string)}})
	apiDo(t, "POST", p.url+"/api/messages?wait=1", "application/json", body, 200)
	var recent struct{ Events []event.Event }
	if testio.GetJSON(t, p.url+"/api/history/recent?n=10", &recent) != 200 {
		t.Fatal("history/recent")
	}
	var seqs []int64
	for _, e := range recent.Events {
		if m, ok := e.Message(); ok && strings.Contains(m.Content, secret) {
			seqs = append(seqs, e.Seq)
		}
	}
	if len(seqs) != 2 {
		t.Fatalf("the message and its echo: seqs %v in %v", seqs, recent.Events)
	}
	apiDo(t, "POST", p.url+"/api/memory", "application/json",
		[]byte(`{"text":"Locker: my locker code is `+secret+` and it opens the blue door. Likes tea."}`), 201)
	apiDo(t, "POST", p.url+"/api/reset", "", nil, 200)
	// Past log_rotate_mb (1 MiB): the secret's lines go into a rotated part.
	filler, _ := json.Marshal(map[string]string{"content": strings.Repeat("filler ", 8000)})
	var parts []string
	for i := 0; i < 60 && len(parts) == 0; i++ {
		apiDo(t, "POST", p.url+"/api/messages?wait=1", "application/json", filler, 200)
		parts, _ = filepath.Glob(filepath.Join(data, "chat_history-*.ndjson"))
	}
	if len(parts) == 0 {
		t.Fatal("the chat log did not rotate")
	}
	testio.GzipFile(t, parts[0]) // the oldest part, holding the secret, as logrotate leaves it
	// Before the erase the word is everywhere the test means to look.
	held := strings.Join(filesHolding(t, data, secret), " ")
	for _, want := range []string{".ndjson.gz", "audit/", "short_term.md", "items.json", "attachments/", "search.db"} {
		if !strings.Contains(held, want) {
			t.Errorf("before the erase no file %s holds the word (it is in %s): the test would prove nothing there", want, held)
		}
	}
	t.Logf("before the erase the word is in %s", held)

	for _, seq := range seqs {
		r := apiDo(t, "DELETE", fmt.Sprintf("%s/api/history/%d", p.url, seq), "", nil, 200)
		if r["seq"] != float64(seq) || r["erased"] != true {
			t.Fatalf("DELETE %d = %v", seq, r)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		held := filesHolding(t, data, secret)
		if len(held) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the erase these files still hold the word: %v", held)
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkErasedEverywhere(t, p.url, dir, seqs, secret)
}

// checkErasedEverywhere: /api/history/range, `frontdesk history range`
// and /mcp's history_range show each erased seq as its tombstone.
func checkErasedEverywhere(t *testing.T, url, dir string, seqs []int64, secret string) {
	t.Helper()
	from, to := seqs[0], seqs[len(seqs)-1]
	var page struct{ Events []event.Event }
	testio.GetJSON(t, fmt.Sprintf("%s/api/history/range?from=%d&to=%d", url, from, to), &page)
	tombs := 0
	for _, e := range page.Events {
		if event.IsTombstone(e) {
			tombs++
		}
	}
	if tombs != len(seqs) {
		t.Errorf("/api/history/range shows %d tombstones in %v, want %d", tombs, page.Events, len(seqs))
	}
	out, err := exec.Command(binary, "history", "range", "-json", "-data", filepath.Join(dir, "state"),
		"-from", fmt.Sprint(from), "-to", fmt.Sprint(to)).CombinedOutput()
	if err != nil || strings.Contains(string(out), secret) || strings.Count(string(out), `"erased":true`) != len(seqs) {
		t.Errorf("frontdesk history range: %v\n%s\nwant %d tombstones and no secret", err, out, len(seqs))
	}
	out, err = exec.Command(binary, "history", "range", "-data", filepath.Join(dir, "state"),
		"-from", fmt.Sprint(from), "-to", fmt.Sprint(to)).CombinedOutput()
	if err != nil || strings.Count(string(out), "[message erased by api]") != len(seqs) {
		t.Errorf("frontdesk history range (table): %v\n%s\nwant %d lines [message erased by api]", err, out, len(seqs))
	}
	rpc := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"history_range","arguments":{"from":"%d","to":"%d"}}}`, from, to)
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(rpc))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), secret) || !strings.Contains(string(b), `erased_by`) {
		t.Errorf("/mcp history_range = %d %s; want the tombstones and no secret", resp.StatusCode, b)
	}
}
