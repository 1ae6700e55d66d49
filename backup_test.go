package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/frontdesk-hq/frontdesk/backup"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testchat"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
)

// lockedBuffer is a buffer several goroutines may write.
type lockedBuffer = testio.Buffer

// listenWatch is a server's stdout: it hands over the address from the
// "listening on" line.
type listenWatch struct {
	lockedBuffer
	once sync.Once
	addr chan string
}

var listeningRE = regexp.MustCompile(`listening on (http://\S+)`)

func (w *listenWatch) Write(p []byte) (int, error) {
	n, err := w.lockedBuffer.Write(p)
	if m := listeningRE.FindStringSubmatch(w.String()); m != nil {
		w.once.Do(func() { w.addr <- m[1] })
	}
	return n, err
}

// inProcess is the real server run through run in this process.
type inProcess struct {
	url    string
	stderr *lockedBuffer
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// runServer starts run(...) with args on 127.0.0.1:0; it stops at the
// end of the test, or earlier through stop.
func runServer(t *testing.T, args ...string) *inProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &listenWatch{addr: make(chan string, 1)}
	s := &inProcess{stderr: &lockedBuffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() {
		s.done <- run(ctx, append([]string{"frontdesk", "-addr", "127.0.0.1:0"}, args...),
			func(string) string { return "" }, strings.NewReader(""), out, s.stderr)
	}()
	t.Cleanup(func() { s.stop() })
	select {
	case s.url = <-out.addr:
	case err := <-s.done:
		s.done <- err
		t.Fatalf("server exited before listening: %v\n%s", err, s.stderr)
	case <-time.After(15 * time.Second):
		t.Fatalf("server did not listen within 15s\n%s", s.stderr)
	}
	return s
}

func (s *inProcess) stop() error {
	s.once.Do(func() {
		s.cancel()
		s.err = <-s.done
	})
	return s.err
}

// runCmd runs a subcommand through run and returns its stdout.
func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"frontdesk"}, args...), func(string) string { return "" },
		strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		err = fmt.Errorf("%w (stderr: %s)", err, stderr.String())
	}
	return stdout.String(), err
}

// archiveEntries lists a backup's entries.
func archiveEntries(t *testing.T, path string) []*tar.Header {
	t.Helper()
	var hs []*tar.Header
	walkArchive(t, path, func(h *tar.Header, _ io.Reader) { hs = append(hs, h) })
	return hs
}

// walkArchive calls fn with each entry of a backup archive, in order, and
// a reader of its content.
func walkArchive(t *testing.T, path string, fn func(*tar.Header, io.Reader)) {
	testio.WalkArchive(t, path, fn)
}

// TestBackupWhileTurnStreams backs up a running server while a client keeps
// talking to it through the webhook and a turn is streaming, restores the
// archive into a new directory and starts a server on it: every input the
// server acknowledged (202) before the backup began is in the restored log
// exactly once, the log is whole, and the session goes on where it was.
func TestBackupWhileTurnStreams(t *testing.T) {
	t.Parallel() // its own data directory and binary; it mostly waits on the server
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "cfg.yaml")
	// Inputs of 300 KB and a 1 MB rotation size: the log rotates every few
	// turns, so the backup has rotated parts to take.
	os.WriteFile(cfg, []byte("session:\n  log_rotate_mb: 1\nserver:\n  max_message_bytes: 1048576\nagent:\n  demo:\n    delay_ms: 10\n"), 0o600)
	srv := runServer(t, "-config", cfg, "-data", data)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	var info struct {
		SessionID string `json:"session_id"`
		LastSeq   int64  `json:"last_seq"`
	}
	testio.GetJSON(t, srv.url+"/api/session", &info)

	// A WebSocket client tells the poster when a turn ended and the test
	// when one is streaming.
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.url, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(4 << 20)
	turnEnded := make(chan struct{}, 1)
	streaming := make(chan struct{}, 1)
	go func() {
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			var e event.Event
			json.Unmarshal(b, &e)
			ch := map[event.Type]chan struct{}{event.TurnEnd: turnEnded, event.Delta: streaming}[e.Type]
			if ch != nil {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}()

	// The poster sends input after input; a 409 (busy) waits for the turn
	// to end and tries again. Only a 202 acknowledges an input.
	acks := make(chan string, 1000)
	stopPosting := make(chan struct{})
	posterDone := make(chan error, 1)
	filler := strings.Repeat("lorem ipsum ", 25_000)
	go func() {
		for i := 1; ; i++ {
			id := fmt.Sprint("m-", i)
			body, _ := json.Marshal(map[string]string{"content": id + " " + filler, "client_msg_id": id})
			for {
				select {
				case <-stopPosting:
					posterDone <- nil
					return
				default:
				}
				resp, err := http.Post(srv.url+"/api/messages", "application/json", bytes.NewReader(body))
				if err != nil {
					posterDone <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					acks <- id
					break
				}
				if resp.StatusCode != http.StatusConflict {
					posterDone <- fmt.Errorf("POST %s: %s", id, resp.Status)
					return
				}
				select {
				case <-turnEnded:
				case <-stopPosting:
				case <-ctx.Done():
					posterDone <- ctx.Err()
					return
				}
			}
		}
	}()
	take := func(n int) []string {
		var ids []string
		for range n {
			select {
			case id := <-acks:
				ids = append(ids, id)
			case err := <-posterDone:
				t.Fatalf("poster stopped: %v", err)
			case <-ctx.Done():
				t.Fatalf("only %d inputs acknowledged: %v\n%s", len(ids), ctx.Err(), srv.stderr)
			}
		}
		return ids
	}

	acked := take(6)
	// Wait for a fresh delta: a turn is streaming now.
	select {
	case <-streaming:
	default:
	}
	select {
	case <-streaming:
	case <-ctx.Done():
		t.Fatal("no turn streams")
	}
	// Every 202 received so far came before the backup starts.
	for more := true; more; {
		select {
		case id := <-acks:
			acked = append(acked, id)
		default:
			more = false
		}
	}
	archive := filepath.Join(dir, "backup.tar.gz")
	out, err := runCmd(t, "backup", "-o", archive, "-config", cfg, "-data", data)
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	if !strings.Contains(out, "chat log up to seq") {
		t.Errorf("backup said %q, want the seq it reached", out)
	}
	take(2) // the server went on while the backup ran
	close(stopPosting)
	if err := <-posterDone; err != nil {
		t.Fatal(err)
	}
	c.CloseNow()
	if err := srv.stop(); err != nil {
		t.Fatalf("server: %v", err)
	}

	// The archive: modes as frontdesk creates them, rotated parts, and no
	// search index (the live data directory has one).
	if _, err := os.Stat(filepath.Join(data, "search.db")); err != nil {
		t.Fatalf("the server made no index to leave out: %v", err)
	}
	var names []string
	for _, h := range archiveEntries(t, archive) {
		names = append(names, h.Name)
		want := int64(0o600)
		if h.Typeflag == tar.TypeDir {
			want = 0o700
		}
		if h.Mode != want {
			t.Errorf("%s: mode %o, want %o", h.Name, h.Mode, want)
		}
		if strings.HasPrefix(h.Name, "search.db") {
			t.Errorf("the archive holds the derived index file %s", h.Name)
		}
	}
	for _, want := range []string{backup.ManifestName, "chat_history.ndjson", "session.json", "memory/"} {
		if !slices.Contains(names, want) {
			t.Errorf("the archive lacks %s: %v", want, names)
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "chat_history-") }) {
		t.Errorf("the archive has no rotated part: %v", names)
	}

	restored := filepath.Join(dir, "restored")
	if _, err := runCmd(t, "restore", "-config", cfg, "-data", restored, archive); err != nil {
		t.Fatalf("restore: %v", err)
	}
	evs := testchat.ReadAll(t, filepath.Join(restored, "chat_history.ndjson"))
	seen := map[string]int{}
	var prev int64
	for _, e := range evs {
		if e.Seq <= prev {
			t.Fatalf("restored log: seq %d after %d", e.Seq, prev)
		}
		prev = e.Seq
		if e.Type == event.User {
			var d event.UserData
			e.Decode(&d)
			seen[d.ClientMsgID]++
		}
	}
	for _, id := range acked {
		if seen[id] != 1 {
			t.Errorf("acknowledged input %s is in the restored log %d times, want once", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("input %s is in the restored log %d times", id, n)
		}
	}
	t.Logf("%d inputs acknowledged before the backup, %d in it; last restored seq %d, a turn cut by the backup: %v",
		len(acked), len(seen), prev, evs[len(evs)-1].Type != event.TurnEnd)
	if _, err := os.Stat(filepath.Join(restored, "search.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("restored a search index: %v", err)
	}

	// A server on the restored data: same session, seq goes on, it answers.
	srv2 := runServer(t, "-config", cfg, "-data", restored)
	var health map[string]string
	if code := testio.GetJSON(t, srv2.url+"/healthz", &health); code != 200 {
		t.Fatalf("/healthz on the restored data = %d %v", code, health)
	}
	var info2 struct {
		SessionID string `json:"session_id"`
		LastSeq   int64  `json:"last_seq"`
	}
	testio.GetJSON(t, srv2.url+"/api/session", &info2)
	if info2.SessionID != info.SessionID || info2.LastSeq < prev {
		t.Fatalf("restored session %s at seq %d, want %s at seq ≥ %d", info2.SessionID, info2.LastSeq, info.SessionID, prev)
	}
	resp, err := http.Post(srv2.url+"/api/messages", "application/json", strings.NewReader(`{"content":"after the restore"}`))
	if err != nil {
		t.Fatal(err)
	}
	var ack struct{ Seq int64 }
	json.NewDecoder(resp.Body).Decode(&ack)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || ack.Seq <= info2.LastSeq {
		t.Fatalf("POST after restore: %s seq %d, want 202 after seq %d", resp.Status, ack.Seq, info2.LastSeq)
	}
}

// tarGz builds a tar.gz from entries; a nil body makes a directory.
type tarEntry struct {
	h    tar.Header
	body string
}

func writeTarGz(t *testing.T, path string, entries ...tarEntry) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := e.h
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if h.Mode == 0 {
			h.Mode = 0o600
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	gz.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func manifestEntry() tarEntry {
	b, _ := json.Marshal(backup.Manifest{Format: backup.Format, ChatLog: "chat_history.ndjson", Memory: "memory"})
	return tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: backup.ManifestName}, string(b)}
}

func regular(name, body string) tarEntry {
	return tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: name}, body}
}

// TestRestoreRefuses: a restore that cannot be done right does nothing —
// no data directory, no temporary directory left beside it.
func TestRestoreRefuses(t *testing.T) {
	// A real backup to damage.
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "session.json"), []byte(`{"session_id":"s-1","generation":1}`+"\n"), 0o600)
	var log bytes.Buffer
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&log, `{"v":1,"seq":%d,"ts":"2026-11-22T10:00:00Z","type":"notice","data":{"text":"%d %s"}}`+"\n", i, i*7919, strings.Repeat("a", i%50))
	}
	os.WriteFile(filepath.Join(src, "chat_history.ndjson"), log.Bytes(), 0o600)
	good := filepath.Join(t.TempDir(), "good.tar.gz")
	if _, err := runCmd(t, "backup", "-o", good, "-data", src); err != nil {
		t.Fatal(err)
	}
	goodBytes, _ := os.ReadFile(good)

	tests := []struct {
		name    string
		make    func(t *testing.T, archive, target string)
		wantErr string
	}{
		{"non-empty data directory", func(t *testing.T, archive, target string) {
			os.WriteFile(archive, goodBytes, 0o600)
			os.MkdirAll(target, 0o700)
			os.WriteFile(filepath.Join(target, "chat_history.ndjson"), []byte("mine\n"), 0o600)
		}, "not empty"},
		{"data directory is a file", func(t *testing.T, archive, target string) {
			os.WriteFile(archive, goodBytes, 0o600)
			os.WriteFile(target, nil, 0o600)
		}, "not a directory"},
		{"dot-dot entry", func(t *testing.T, archive, target string) {
			writeTarGz(t, archive, manifestEntry(), regular("session.json", "{}"), regular("../x", "escaped"))
		}, "climbs out"},
		{"dot-dot inside a name", func(t *testing.T, archive, target string) {
			writeTarGz(t, archive, manifestEntry(), regular("memory/../../x", "escaped"))
		}, "climbs out"},
		{"absolute entry", func(t *testing.T, archive, target string) {
			writeTarGz(t, archive, manifestEntry(), regular("/tmp/frontdesk-restore-x", "escaped"))
		}, "absolute"},
		{"symlink", func(t *testing.T, archive, target string) {
			writeTarGz(t, archive, manifestEntry(), regular("a", "x"),
				tarEntry{tar.Header{Typeflag: tar.TypeSymlink, Name: "memory", Linkname: "/etc"}, ""})
		}, "symbolic link"},
		{"hard link", func(t *testing.T, archive, target string) {
			writeTarGz(t, archive, manifestEntry(), tarEntry{tar.Header{Typeflag: tar.TypeLink, Name: "x", Linkname: "/etc/passwd"}, ""})
		}, "hard link"},
		{"fifo", func(t *testing.T, archive, target string) {
			writeTarGz(t, archive, manifestEntry(), tarEntry{tar.Header{Typeflag: tar.TypeFifo, Name: "x"}, ""})
		}, "FIFO"},
		{"a name twice", func(t *testing.T, archive, target string) {
			writeTarGz(t, archive, manifestEntry(), regular("session.json", "1"), regular("session.json", "2"))
		}, "exists"},
		{"truncated", func(t *testing.T, archive, target string) {
			os.WriteFile(archive, goodBytes[:len(goodBytes)/2], 0o600)
		}, "damaged or truncated"},
		{"truncated, into an existing empty directory", func(t *testing.T, archive, target string) {
			os.WriteFile(archive, goodBytes[:len(goodBytes)/2], 0o600)
			os.Mkdir(target, 0o700)
		}, "damaged or truncated"},
		{"symlink, into an existing empty directory", func(t *testing.T, archive, target string) {
			writeTarGz(t, archive, manifestEntry(), regular("session.json", "{}"),
				tarEntry{tar.Header{Typeflag: tar.TypeSymlink, Name: "memory", Linkname: "/etc"}, ""})
			os.Mkdir(target, 0o700)
		}, "symbolic link"},
		{"trailer cut", func(t *testing.T, archive, target string) {
			os.WriteFile(archive, goodBytes[:len(goodBytes)-4], 0o600)
		}, "damaged or truncated"},
		{"corrupted", func(t *testing.T, archive, target string) {
			b := slices.Clone(goodBytes)
			b[len(b)/2] ^= 0xff
			os.WriteFile(archive, b, 0o600)
		}, "damaged or truncated"},
		{"not gzip", func(t *testing.T, archive, target string) {
			os.WriteFile(archive, []byte("hello"), 0o600)
		}, "not a gzip file"},
		{"no manifest", func(t *testing.T, archive, target string) {
			writeTarGz(t, archive, regular("session.json", "{}"))
		}, "not a frontdesk backup"},
		{"other layout", func(t *testing.T, archive, target string) {
			b, _ := json.Marshal(backup.Manifest{Format: backup.Format, ChatLog: "logs/chat.ndjson", Memory: "memory"})
			writeTarGz(t, archive, tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: backup.ManifestName}, string(b)})
		}, "logs/chat.ndjson"},
		{"missing archive", func(t *testing.T, archive, target string) {}, "no such file"},
		{"only the manifest", func(t *testing.T, archive, target string) {
			writeTarGz(t, archive, manifestEntry())
		}, "holds no files, only its manifest"},
		{"session.json larger than a state file can be", func(t *testing.T, archive, target string) {
			writeTarGz(t, archive, manifestEntry(), regular("memory/short_term.md", "- hi\n"), regular("session.json", strings.Repeat(" ", 2<<20)))
		}, `"session.json" is 2.0 MiB`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			parent := filepath.Join(dir, "srv")
			os.MkdirAll(parent, 0o700)
			archive := filepath.Join(dir, "b.tar.gz")
			target := filepath.Join(parent, "data")
			tc.make(t, archive, target)
			before := tree(t, dir)
			_, err := runCmd(t, "restore", "-data", target, archive)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("restore: %v, want an error about %q", err, tc.wantErr)
			}
			if after := tree(t, dir); !slices.Equal(after, before) {
				t.Fatalf("a failed restore changed the files:\nbefore %v\nafter  %v", before, after)
			}
		})
	}

	// The untouched archive restores into an empty directory, and only
	// into an empty one.
	target := filepath.Join(t.TempDir(), "data")
	os.Mkdir(target, 0o700)
	if _, err := runCmd(t, "restore", "-data", target, good); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(target, "chat_history.ndjson"))
	if !bytes.Equal(got, log.Bytes()) {
		t.Fatalf("restored chat log differs: %d bytes, want %d", len(got), log.Len())
	}
	for _, p := range []string{target, filepath.Join(target, "session.json")} {
		st, _ := os.Stat(p)
		want := os.FileMode(0o600)
		if st.IsDir() {
			want = 0o700
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, st.Mode().Perm(), want)
		}
	}
}

// tree lists the files and directories under dir with their sizes.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %v %d", strings.TrimPrefix(p, dir), fi.Mode(), fi.Size()))
		return nil
	})
	return out
}

func TestBackupCommandErrors(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside.yaml")
	os.WriteFile(outside, []byte("session:\n  chat_log_path: /var/log/chat.ndjson\n"), 0o600)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"backup without -o", []string{"backup", "-data", dir}, "missing -o"},
		{"backup of a missing data dir", []string{"backup", "-o", filepath.Join(dir, "b.tar.gz"), "-data", filepath.Join(dir, "none")}, "no data directory"},
		{"backup into a missing dir", []string{"backup", "-o", filepath.Join(dir, "no", "b.tar.gz"), "-data", dir}, "no such file"},
		{"backup stray argument", []string{"backup", "-o", "x", "y"}, `unexpected argument "y"`},
		{"backup of a chat log outside data_dir", []string{"backup", "-o", filepath.Join(dir, "b.tar.gz"), "-config", outside, "-data", dir}, "outside data_dir"},
		{"restore without a file", []string{"restore", "-data", dir}, "missing FILE"},
		{"restore two files", []string{"restore", "a", "b"}, `unexpected argument "b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCmd(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "b.tar.gz")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed backup left an archive: %v", err)
	}
}

// TestBackupToStdout: -o - streams the archive to stdout and the summary
// to stderr; it restores like a file.
func TestBackupToStdout(t *testing.T) {
	src := t.TempDir()
	line := `{"v":1,"seq":1,"ts":"2026-11-22T10:00:00Z","type":"notice","data":{"text":"hi"}}` + "\n"
	os.WriteFile(filepath.Join(src, "chat_history.ndjson"), []byte(line+`{"v":1,"se`), 0o600)
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"frontdesk", "backup", "-o", "-", "-data", src}, func(string) string { return "" },
		strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "up to seq 1") {
		t.Errorf("stderr %q, want the summary", stderr.String())
	}
	archive := filepath.Join(t.TempDir(), "b.tar.gz")
	os.WriteFile(archive, stdout.Bytes(), 0o600)
	target := filepath.Join(t.TempDir(), "data")
	if _, err := runCmd(t, "restore", "-data", target, archive); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(target, "chat_history.ndjson")); string(got) != line {
		t.Fatalf("restored log %q, want %q (the partial line cut)", got, line)
	}
}

// TestRestoreIntoExistingDir: an existing empty data directory (a volume,
// systemd's StateDirectory) is kept with its mode and owner, and the
// restored files get its owner, through a symbolic link too.
func TestRestoreIntoExistingDir(t *testing.T) {
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "session.json"), []byte(`{"session_id":"s-1","generation":1}`+"\n"), 0o600)
	os.MkdirAll(filepath.Join(src, "memory"), 0o700)
	os.WriteFile(filepath.Join(src, "memory", "long_term.md"), []byte("- x\n"), 0o600)
	archive := filepath.Join(t.TempDir(), "b.tar.gz")
	if _, err := runCmd(t, "backup", "-o", archive, "-data", src); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	real := filepath.Join(dir, "private", "frontdesk")
	os.MkdirAll(real, 0o750)
	os.Chmod(real, 0o750)
	link := filepath.Join(dir, "frontdesk")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 { // as root, the files must go to the directory's owner
		uid, gid = 4242, 4343
		if err := os.Chown(real, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runCmd(t, "restore", "-data", link, archive); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", st.Mode(), err)
	}
	if st, _ := os.Stat(real); st.Mode().Perm() != 0o750 {
		t.Errorf("the directory's mode became %v, want it kept (0750)", st.Mode().Perm())
	}
	var got []string
	filepath.WalkDir(real, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s owned by %d:%d, want %d:%d", p, st.Uid, st.Gid, uid, gid)
		}
		got = append(got, strings.TrimPrefix(p, real))
		return nil
	})
	want := []string{"", "/memory", "/memory/long_term.md", "/session.json"}
	if !slices.Equal(got, want) {
		t.Fatalf("restored %v, want %v (no temporary directory left)", got, want)
	}
}
