package hub

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testagent"
	"github.com/frontdesk-hq/frontdesk/internal/testdisk"
	"github.com/frontdesk-hq/frontdesk/internal/testlog"
)

// bigInput is more than a tmpfs page, so it cannot slip into the unused
// end of the chat log's last page on a full disk.
var bigInput = strings.Repeat("a long message ", 600)

// part matches log lines about one part of the data, at level or above.
func part(level slog.Level, msg, name string) func(testlog.Line) bool {
	return func(l testlog.Line) bool {
		return l.Level >= level && strings.HasPrefix(l.Msg, msg) && l.Attrs["part"] == name
	}
}

// faultCode is the code a testdisk fault gives.
func faultCode(d *testdisk.Disk) string {
	if d.Full {
		return StorageFull
	}
	return StorageFailed
}

func TestChatLogFaultRefusesInputUntilWritable(t *testing.T) {
	disk := testdisk.New(t)
	rec, logger := testlog.New()
	lg, err := history.Open(history.Options{Path: filepath.Join(disk.Dir, "chat_history.ndjson"), RotateMB: 5, Fsync: history.FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	h := startHubWithLog(t, Config{DataDir: disk.Dir, Logger: logger}, &testagent.Count{N: 1}, lg)
	s, _ := subscribe(t, h, 0)
	disk.Fail()

	for i := range 3 {
		_, err := h.Submit(ctxT(t), Input{Channel: "web", Content: bigInput, ClientMsgID: "big"})
		var se *StorageError
		if !errors.As(err, &se) || se.Code != faultCode(disk) {
			t.Fatalf("Submit %d on a failing disk: err %v, want a *StorageError %s", i, err, faultCode(disk))
		}
	}
	info, _ := h.Info(ctxT(t))
	if info.Storage != faultCode(disk) || !strings.HasPrefix(info.StorageError, "chat log: ") || info.Busy || info.LastSeq != 0 {
		t.Fatalf("info after failed appends = %+v, want storage %s naming the chat log, idle, last_seq 0", info, faultCode(disk))
	}
	if frames, _ := s.Take(); len(frames) > 0 {
		t.Fatalf("subscriber got %s for an input that was not recorded", frames[0].Event.Type)
	}

	disk.Heal()
	if info, _ := h.Info(ctxT(t)); info.Storage == "" {
		t.Fatal("storage reported fine before any write succeeded")
	}
	// The same id again: it was never accepted, so it runs now.
	if r := submit(t, h, "hello", "big"); r.Outcome != Started {
		t.Fatalf("after healing: %+v", r)
	}
	until(t, s, event.TurnEnd)
	if info, _ := h.Info(ctxT(t)); info.Storage != "" || info.StorageError != "" {
		t.Fatalf("info after a successful append = %+v, want storage fine", info)
	}
	h.stop()

	if n := len(rec.Lines(part(slog.LevelWarn, "storage: cannot write", partChatLog))); n != 1 {
		t.Errorf("%d warning lines for the failing chat log, want 1:\n%v", n, rec.Lines(nil))
	}
	if n := len(rec.Lines(part(slog.LevelDebug, "storage: write failed again", partChatLog))); n != 2 {
		t.Errorf("%d debug lines for the later failures, want 2", n)
	}
	if n := len(rec.Lines(part(slog.LevelInfo, "storage: writing works again", partChatLog))); n != 1 {
		t.Errorf("%d recovery lines, want 1:\n%v", n, rec.Lines(nil))
	}
	// Nothing that failed is in the log; what came after is.
	evs, _, err := history.ReadTail(filepath.Join(disk.Dir, "chat_history.ndjson"), 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(typeStrings(evs), " "); got != "user assistant turn_end" || strings.Contains(string(evs[0].Data), "long message") {
		t.Fatalf("chat log holds %s (%s), want the one input that was recorded and its turn", got, evs[0].Data)
	}
}

func typeStrings(evs []event.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type)
	}
	return out
}

// swapForDir replaces the file at path with a directory, so that writing
// it (a rename over it) fails whoever runs the test; the returned func
// puts the file back.
func swapForDir(t *testing.T, path string) func() {
	t.Helper()
	_, err := os.Stat(path)
	had := err == nil
	if had {
		if err := os.Rename(path, path+".saved"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		if had {
			if err := os.Rename(path+".saved", path); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestShortTermMemoryFaultLoggedOnce(t *testing.T) {
	rec, logger := testlog.New()
	cfg, mem := withMemory(t, Config{Logger: logger})
	h := startHub(t, cfg, &testagent.Count{N: 1})
	s, _ := subscribe(t, h, 0)
	heal := swapForDir(t, filepath.Join(mem.Dir(), "short_term.md"))

	// Each turn's end rewrites short_term.md; wait for each attempt's line
	// before the next turn, so that none is skipped as stale.
	attempts := func(l testlog.Line) bool {
		return l.Attrs["part"] == partShortTerm || strings.Contains(l.Msg, "short-term")
	}
	for i := range 3 {
		talk(t, h, s, "turn "+string(rune('a'+i)))
		rec.Wait(t, i+1, attempts)
	}
	if info, _ := h.Info(ctxT(t)); info.Storage != StorageFailed || !strings.HasPrefix(info.StorageError, partShortTerm+": ") {
		t.Fatalf("info = %+v, want storage_error naming short-term memory", info)
	}
	heal()
	talk(t, h, s, "turn d")
	rec.Wait(t, 1, part(slog.LevelInfo, "storage: writing works again", partShortTerm))
	talk(t, h, s, "turn e")
	h.stop() // writes the last snapshot

	var errs []testlog.Line
	for _, l := range rec.Lines(attempts) {
		if l.Level >= slog.LevelWarn {
			errs = append(errs, l)
		}
	}
	if len(errs) != 1 {
		t.Errorf("%d warnings or errors for 3 failed writes of short_term.md, want 1: %v", len(errs), errs)
	}
	if n := len(rec.Lines(part(slog.LevelInfo, "storage: writing works again", partShortTerm))); n != 1 {
		t.Errorf("%d recovery lines, want 1", n)
	}
	if st, _ := mem.ShortTerm(); !strings.Contains(st, "turn e") {
		t.Errorf("short_term.md after recovery:\n%s", st)
	}
}

// A queued input whose turn comes while the chat log cannot be written
// never runs, and its sender hears why: an error with the storage code,
// and the outcome StatusNotRecorded (so email offers it again).
func TestQueuedInputNotRecorded(t *testing.T) {
	disk := testdisk.New(t)
	if !disk.Full {
		t.Skip("needs a tmpfs (root): the chat log is open before the fault")
	}
	lg, err := history.Open(history.Options{Path: filepath.Join(disk.Dir, "chat_history.ndjson"), RotateMB: 5, Fsync: history.FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	g := testagent.NewGate()
	h := startHubWithLog(t, Config{DataDir: disk.Dir, BusyPolicy: PolicyQueue, Logger: slog.New(slog.DiscardHandler)}, g, lg)
	s, _ := subscribe(t, h, 0)
	submit(t, h, "running", "a")
	until(t, s, event.Delta)
	done := make(chan TurnOutcome, 1)
	notified := make(chan event.Event, 1)
	r, err := h.Submit(ctxT(t), Input{Channel: "web", Content: bigInput, ClientMsgID: "b", Done: done,
		Notify: func(e event.Event) { notified <- e }})
	if err != nil || r.Outcome != Queued {
		t.Fatalf("queued submit = %+v, %v", r, err)
	}
	disk.Fail()
	g.Release <- struct{}{}
	until(t, s, event.TurnEnd)

	var o TurnOutcome
	select {
	case o = <-done:
	case <-ctxT(t).Done():
		t.Fatal("no outcome for the queued input")
	}
	var se *StorageError
	if o.Status != StatusNotRecorded || !errors.As(o.Err, &se) || se.Code != StorageFull {
		t.Fatalf("outcome %+v, want not_recorded with a storage_full error", o)
	}
	var e event.Event
	select {
	case e = <-notified:
	case <-ctxT(t).Done():
		t.Fatal("the submitter of the queued input was not told")
	}
	if d := data[event.ErrorData](t, e); e.Type != event.Error || d.Code != StorageFull || d.ClientMsgID != "b" {
		t.Fatalf("submitter told %s %s, want error storage_full for b", e.Type, e.Data)
	}
	if info, _ := h.Info(ctxT(t)); info.Busy {
		t.Fatalf("busy after the queued input failed to start: %+v", info)
	}
}
