package index_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
)

// chatLog is a real chat log in a temp dir, written the way the server
// writes it.
type chatLog struct {
	t    *testing.T
	dir  string
	path string
	log  *history.Log
	seq  int64
	msgs int // user + assistant events appended
}

func newChatLog(t *testing.T, dir string, rotateMB int) *chatLog {
	t.Helper()
	path := filepath.Join(dir, "chat_history.ndjson")
	l, err := history.Open(history.Options{Path: path, RotateMB: rotateMB, Fsync: history.FsyncNever})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &chatLog{t: t, dir: dir, path: path, log: l}
}

// turn appends one exchange (user, assistant, turn_end) and returns the
// seq of the turn_end.
func (c *chatLog) turn(ask, answer string) int64 {
	c.t.Helper()
	turn := "t" + strconv.FormatInt(c.seq+1, 10)
	for _, e := range []event.Event{
		event.New(event.User, turn, t0.Add(time.Duration(c.seq)*time.Minute), event.UserData{Channel: event.ChannelWeb, Content: ask}),
		event.New(event.Assistant, turn, t0.Add(time.Duration(c.seq+1)*time.Minute), event.AssistantData{Content: answer}),
		event.New(event.TurnEnd, turn, t0.Add(time.Duration(c.seq+2)*time.Minute), event.TurnEndData{Status: event.StatusCompleted}),
	} {
		c.seq++
		e.Seq = c.seq
		if err := c.log.Append(e); err != nil {
			c.t.Fatal(err)
		}
	}
	c.msgs += 2
	return c.seq
}

func (c *chatLog) fill(n int, word func(i int) string) {
	for i := range n {
		c.turn(fmt.Sprintf("question %d about %s and the weather in the garden", i, word(i)),
			fmt.Sprintf("answer %d: the %s looks fine, nothing else to add here", i, word(i)))
	}
}

// logBuf collects log lines from any goroutine.
type logBuf struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed at the next Write
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.written != nil {
		close(l.written)
		l.written = nil
	}
	return l.b.Write(p)
}

func (l *logBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// waitFor waits until the log holds want, failing after d.
func (l *logBuf) waitFor(t *testing.T, want string, d time.Duration) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		if strings.Contains(l.b.String(), want) {
			l.mu.Unlock()
			return
		}
		if l.written == nil {
			l.written = make(chan struct{})
		}
		written := l.written
		l.mu.Unlock()
		select {
		case <-written:
		case <-deadline.C:
			t.Fatalf("the log never said %q within %v:\n%s", want, d, l.String())
		}
	}
}

func follower(t *testing.T, dir string, logSeq int64, mem index.MemorySource) (*index.Follower, func()) {
	t.Helper()
	return followerLog(t, dir, logSeq, mem, io.Discard)
}

func followerLog(t *testing.T, dir string, logSeq int64, mem index.MemorySource, logs io.Writer) (*index.Follower, func()) {
	t.Helper()
	f, err := index.NewFollower(index.FollowerOptions{
		Path: filepath.Join(dir, index.FileName), Log: history.NewReader(filepath.Join(dir, "chat_history.ndjson")).Since,
		Memory: mem, LogSeq: logSeq, Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return f, stop
}

// caughtUp searches until the index covers the log (Search waits up to a
// second each time), failing after 30 s.
func caughtUp(t *testing.T, f *index.Follower, q string) index.Result {
	t.Helper()
	// It fails when the follower stops making progress, not after a fixed
	// time: under -race on a loaded machine a big catch-up can take a
	// minute, and that is not what the tests check.
	const stall = 30 * time.Second
	var last int64 = -1
	deadline := time.Now().Add(stall)
	for {
		res, err := f.Search(context.Background(), q, index.Options{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if res.Indexing == nil {
			return res
		}
		if res.Indexing.IndexedSeq > last {
			last, deadline = res.Indexing.IndexedSeq, time.Now().Add(stall)
		}
		if time.Now().After(deadline) {
			t.Fatalf("index stopped catching up for %v: %+v", stall, res.Indexing)
		}
	}
}

func docs(t *testing.T, dir string) index.Stats {
	t.Helper()
	ix, err := index.OpenReadOnly(filepath.Join(dir, index.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	st, err := ix.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestFollowerCatchesUpAcrossPartsAndFollows(t *testing.T) {
	t.Parallel() // independent: its own data directory
	dir := t.TempDir()
	c := newChatLog(t, dir, 1)
	c.fill(6000, func(i int) string {
		if i%1000 == 7 {
			return "zeppelin"
		}
		return "roses"
	})
	parts, _ := history.Parts(c.path)
	if len(parts) < 3 {
		t.Fatalf("only %d parts; the test wants rotation", len(parts))
	}
	for _, p := range parts {
		if p != c.path {
			testio.GzipFile(t, p) // the oldest
			break
		}
	}
	f, stop := follower(t, dir, c.seq, nil)
	res := caughtUp(t, f, "zeppelin")
	if len(res.Hits) != 12 {
		t.Errorf("%d hits for the planted word, want 12", len(res.Hits))
	}
	// Live: an append is found by the next search, which waits for it.
	seq := c.turn("the spare key is under the blue flowerpot", "noted")
	f.Notify(seq)
	res, err := f.Search(context.Background(), "flowerpot key", index.Options{})
	if err != nil || res.Indexing != nil || len(res.Hits) != 1 || res.Hits[0].Seq != seq-2 {
		t.Fatalf("live search: %+v %v", res, err)
	}
	stop()
	if st := docs(t, dir); st.Docs != int64(c.msgs) || st.LastSeq != c.seq {
		t.Errorf("index holds %+v, want %d docs up to seq %d", st, c.msgs, c.seq)
	}

	// Deleted: the next start rebuilds it, with the same content.
	if err := index.Remove(filepath.Join(dir, index.FileName)); err != nil {
		t.Fatal(err)
	}
	f, stop = follower(t, dir, c.seq, nil)
	caughtUp(t, f, "zeppelin")
	stop()
	if st := docs(t, dir); st.Docs != int64(c.msgs) {
		t.Errorf("rebuilt index holds %d docs, want %d", st.Docs, c.msgs)
	}
}

func TestFollowerWhileLogRotatesAndIsGzipped(t *testing.T) {
	t.Parallel() // independent: its own data directory
	dir := t.TempDir()
	c := newChatLog(t, dir, 1)
	f, _ := follower(t, dir, 0, nil)
	var wg sync.WaitGroup
	stopGz := make(chan struct{})
	wg.Add(1)
	go func() { // a user gzipping finished parts while the server runs
		defer wg.Done()
		for {
			select {
			case <-stopGz:
				return
			case <-time.After(5 * time.Millisecond):
			}
			parts, _ := history.Parts(c.path)
			for _, p := range parts {
				if !strings.HasSuffix(p, ".gz") && p != c.path {
					testio.GzipFile(t, p)
				}
			}
		}
	}()
	for i := range 8000 {
		seq := c.turn(fmt.Sprintf("message %d about tulips", i), "ok tulips")
		f.Notify(seq)
	}
	close(stopGz)
	wg.Wait()
	res := caughtUp(t, f, "tulips")
	if len(res.Hits) != 1000 { // the limit
		t.Errorf("%d hits", len(res.Hits))
	}
	st, _ := f.Stats(context.Background())
	if st.Docs != int64(c.msgs) || st.LastSeq != c.seq {
		t.Errorf("index holds %+v, want %d docs up to %d", st, c.msgs, c.seq)
	}
}

func TestFollowerRebuildsDamagedIndexAndIndexesMemory(t *testing.T) {
	t.Parallel() // independent: its own data directory
	dir := t.TempDir()
	c := newChatLog(t, dir, 5)
	c.fill(300, func(int) string { return "lilies" })
	path := filepath.Join(dir, index.FileName)
	f, stop := follower(t, dir, c.seq, nil)
	caughtUp(t, f, "lilies")
	stop()
	if err := os.WriteFile(path, []byte("garbage garbage garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	memText := []index.Doc{{TS: t0, Content: "The user's cat is called Marmalade."}}
	mem := func() ([]index.Doc, error) { mu.Lock(); defer mu.Unlock(); return memText, nil }
	var logs logBuf
	f, _ = followerLog(t, dir, c.seq, mem, &logs)
	if res := caughtUp(t, f, "lilies"); len(res.Hits) != 600 {
		t.Errorf("%d hits after rebuild, want 600", len(res.Hits))
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"search index rebuilt from the chat log\"") {
		t.Errorf("no warning about the rebuild in the log:\n%s", logs.String())
	}
	if res := caughtUp(t, f, "marmalade"); len(res.Hits) != 1 || res.Hits[0].Type != index.TypeMemory {
		t.Errorf("memory: %+v", res.Hits)
	}
	mu.Lock()
	memText = append(memText, index.Doc{TS: t0.Add(time.Hour), Content: "The user's dog is called Pretzel."})
	mu.Unlock()
	f.NotifyMemory()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := caughtUp(t, f, "pretzel")
		if len(res.Hits) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("new memory section never indexed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKilledMidIndexCatchesUp kills a process that is indexing a big log
// (SIGKILL, like a crash), then indexes again: nothing missing, nothing
// doubled.
func TestKilledMidIndexCatchesUp(t *testing.T) {
	t.Parallel() // independent: its own data directory
	if testing.Short() {
		t.Skip("builds a large log")
	}
	dir := t.TempDir()
	c := newChatLog(t, dir, 2)
	c.fill(12000, func(i int) string { return "word" + strconv.Itoa(i%500) })
	c.log.Sync()
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIndexHelperProcess$")
		cmd.Env = append(os.Environ(), "FRONTDESK_INDEX_HELPER="+dir, "FRONTDESK_INDEX_SEQ="+strconv.FormatInt(c.seq, 10))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until it has committed something past what it had, then kill.
		before := int64(0)
		if _, err := os.Stat(filepath.Join(dir, index.FileName)); err == nil {
			before = docs(t, dir).LastSeq
		}
		buf := make([]byte, 64)
		n, _ := io.ReadAtLeast(out, buf, 1) // "started"
		_ = n
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if st := docs(t, dir); st.LastSeq > before+3000 || st.LastSeq == c.seq {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		st := docs(t, dir)
		t.Logf("round %d: killed at seq %d of %d", round, st.LastSeq, c.seq)
	}
	f, stop := follower(t, dir, c.seq, nil)
	res := caughtUp(t, f, "word7")
	stop()
	if len(res.Hits) != 48 {
		t.Errorf("%d hits for word7, want 48", len(res.Hits))
	}
	if st := docs(t, dir); st.Docs != int64(c.msgs) || st.LastSeq != c.seq {
		t.Errorf("after the crashes the index holds %+v, want %d docs up to seq %d", st, c.msgs, c.seq)
	}
}

// TestIndexHelperProcess is the process TestKilledMidIndexCatchesUp kills.
func TestIndexHelperProcess(t *testing.T) {
	dir := os.Getenv("FRONTDESK_INDEX_HELPER")
	if dir == "" {
		t.Skip("helper process only")
	}
	seq, _ := strconv.ParseInt(os.Getenv("FRONTDESK_INDEX_SEQ"), 10, 64)
	f, err := index.NewFollower(index.FollowerOptions{
		Path: filepath.Join(dir, index.FileName), Log: history.NewReader(filepath.Join(dir, "chat_history.ndjson")).Since,
		LogSeq: seq, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("started")
	f.Run(context.Background()) // until killed
}
