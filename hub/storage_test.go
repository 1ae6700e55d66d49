package hub

import (
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testdisk"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testlog"
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

// resetFault is a way to make a reset's writes fail.
type resetFault struct {
	name string
	// fail makes the writes fail (after the hub started, with dir its
	// data directory and log its chat log); it returns the cure.
	fail func(t *testing.T, h *testHub, s *Subscription) (heal func())
	code string
}

func TestResetIsAllOrNothing(t *testing.T) {
	faults := []resetFault{
		{name: "audit directory is a file", code: StorageFailed, fail: func(t *testing.T, h *testHub, _ *Subscription) func() {
			p := filepath.Join(h.dir, "audit")
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return func() { os.Remove(p) }
		}},
		{name: "session.json cannot be replaced", code: StorageFailed, fail: func(t *testing.T, h *testHub, _ *Subscription) func() {
			return swapForDir(t, filepath.Join(h.dir, "session.json"))
		}},
		{name: "chat log full", code: StorageFull, fail: nil}, // set below: needs its own disk
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			dir := t.TempDir()
			logPath := filepath.Join(dir, "chat_history.ndjson")
			var disk *testdisk.Disk
			if f.fail == nil {
				// Only the chat log on a disk that fills: the audit file
				// and session.json are written, the reset event is not.
				disk = testdisk.New(t)
				if !disk.Full {
					t.Skip("needs a tmpfs (root)")
				}
				logPath = filepath.Join(disk.Dir, "chat_history.ndjson")
			}
			lg, err := history.Open(history.Options{Path: logPath, RotateMB: 5, Fsync: history.FsyncAlways})
			if err != nil {
				t.Fatal(err)
			}
			cfg, mem := withMemory(t, Config{DataDir: dir, RetainExchanges: 1})
			h := startHubWithLog(t, cfg, &testagent.Count{N: 1}, lg)
			s, _ := subscribe(t, h, 0)
			talk(t, h, s, "my cat is called Miso")
			talk(t, h, s, "I live in Lisbon")
			before, _ := h.Info(ctxT(t))
			_, snapBefore := subscribe(t, h, 0)
			logBefore, _ := os.ReadFile(logPath)

			var heal func()
			if f.fail != nil {
				heal = f.fail(t, h, s)
			} else {
				disk.Fail()
				// A big input uses up what the log's last page had left.
				if _, err := h.Submit(ctxT(t), Input{Channel: "web", Content: bigInput}); err == nil {
					t.Fatal("an input was recorded on a full disk")
				}
				heal = disk.Heal
				logBefore, _ = os.ReadFile(logPath)
			}

			_, err = h.Reset(ctxT(t), ResetManual, Actor{})
			var se *StorageError
			if !errors.As(err, &se) || se.Code != f.code {
				t.Fatalf("Reset = %v, want a *StorageError %s", err, f.code)
			}
			after, _ := h.Info(ctxT(t))
			if after.Generation != before.Generation || after.LastSeq != before.LastSeq {
				t.Fatalf("after a failed reset: %+v, before: %+v", after, before)
			}
			_, snapAfter := subscribe(t, h, 0)
			if got, want := replaySeqs(snapAfter), replaySeqs(snapBefore); got != want {
				t.Fatalf("buffer after a failed reset %s, before %s", got, want)
			}
			if frames, _ := s.Take(); len(frames) > 0 {
				t.Fatalf("subscriber got %s from a failed reset", frames[0].Event.Type)
			}
			// Nothing half-written: no audit file, session.json and the
			// chat log as they were.
			if audits, _ := filepath.Glob(filepath.Join(h.dir, "audit", "*.ndjson")); len(audits) != 0 {
				t.Fatalf("audit files left by a failed reset: %v", audits)
			}
			heal()
			if g := generationOnDisk(t, h.dir); g != before.Generation {
				t.Fatalf("session.json says generation %d after a failed reset, want %d", g, before.Generation)
			}
			if logAfter, _ := os.ReadFile(logPath); string(logAfter) != string(logBefore) {
				t.Fatalf("chat log changed by a failed reset:\n%s", logAfter[len(logBefore):])
			}
			if lt, _ := mem.LongTerm(); lt != "" {
				t.Fatalf("long-term memory written by a failed reset:\n%s", lt)
			}

			// Fixed: the reset goes through, all of it.
			d, err := h.Reset(ctxT(t), ResetManual, Actor{})
			if err != nil || d.Kept != 1 {
				t.Fatalf("Reset after the fault was fixed = %+v, %v", d, err)
			}
			if e := next(t, s); e.Type != event.Reset {
				t.Fatalf("subscriber got %s, want reset", e.Type)
			}
			h.stop()
			if g := generationOnDisk(t, h.dir); g != before.Generation+1 {
				t.Fatalf("session.json generation %d, want %d", g, before.Generation+1)
			}
			if audits, _ := filepath.Glob(filepath.Join(h.dir, "audit", "*.ndjson")); len(audits) != 1 {
				t.Fatalf("audit files: %v", audits)
			}
			if lt, _ := mem.LongTerm(); !strings.Contains(lt, "Miso") {
				t.Fatalf("long-term memory after the reset:\n%s", lt)
			}
		})
	}
}

func replaySeqs(snap Snapshot) string {
	var b strings.Builder
	for _, f := range snap.Replay {
		b.WriteString(string(f.Event.Type))
		b.WriteByte(' ')
	}
	return b.String()
}

func generationOnDisk(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "session.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s sessionFile
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s.Generation
}

func TestIdleResetRetriesAfterFailure(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	rec, logger := testlog.New()
	h := startHub(t, Config{IdleTimeout: 30 * time.Minute, Clock: clock, Logger: logger}, &testagent.Count{N: 1})
	s, _ := subscribe(t, h, 0)
	talk(t, h, s, "hello")
	h.Info(ctxT(t)) // orders the test after the hub re-armed the timer
	heal := swapForDir(t, filepath.Join(h.dir, "session.json"))

	clock.Advance(30 * time.Minute)
	rec.Wait(t, 1, testlog.Msg(slog.LevelError, "reset failed"))
	if info, _ := h.Info(ctxT(t)); info.Generation != 1 {
		t.Fatalf("generation %d after a failed idle reset", info.Generation)
	}
	heal()
	// The timer was armed again: another quiet period, another try.
	if err := clock.BlockUntil(ctxT(t), 1); err != nil {
		t.Fatal("the idle timer was not armed again after a failed reset")
	}
	clock.Advance(30 * time.Minute)
	if e := next(t, s); e.Type != event.Reset || data[event.ResetData](t, e).Reason != ResetIdle {
		t.Fatalf("got %s %s, want the idle reset", e.Type, e.Data)
	}
	if info, _ := h.Info(ctxT(t)); info.Generation != 2 {
		t.Fatalf("generation %d after the retried reset, want 2", info.Generation)
	}
}

func TestConsolidationRetriedUntilWritten(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	rec, logger := testlog.New()
	cfg, mem := withMemory(t, Config{Clock: clock, Logger: logger, ConsolidateRetry: 5 * time.Second})
	h := startHub(t, cfg, &testagent.Count{N: 1})
	s, _ := subscribe(t, h, 0)
	talk(t, h, s, "my cat is called Miso")
	heal := swapForDir(t, filepath.Join(mem.Dir(), "long_term.md"))

	// The reset itself succeeds; the memory it consolidates waits.
	if _, err := h.Reset(ctxT(t), ResetManual, Actor{}); err != nil {
		t.Fatal(err)
	}
	failed := part(slog.LevelWarn, "storage: cannot write", partLongTerm)
	rec.Wait(t, 1, failed)
	if info, _ := h.Info(ctxT(t)); info.Storage != StorageFailed || !strings.HasPrefix(info.StorageError, partLongTerm+": ") {
		t.Fatalf("info = %+v, want storage_error naming long-term memory", info)
	}
	if l := rec.Lines(failed); l[0].Attrs["retry_in"] != "5s" {
		t.Fatalf("first failure says retry_in %s, want 5s", l[0].Attrs["retry_in"])
	}
	// The retry after 5 s fails too and backs off to 10 s…
	if err := clock.BlockUntil(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second)
	again := rec.Wait(t, 1, part(slog.LevelDebug, "storage: write failed again", partLongTerm))
	if again[0].Attrs["retry_in"] != "10s" {
		t.Fatalf("second failure says retry_in %s, want 10s", again[0].Attrs["retry_in"])
	}
	// …and once the file can be written, the next one lands.
	heal()
	if err := clock.BlockUntil(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Second)
	rec.Wait(t, 1, testlog.Msg(slog.LevelInfo, "memory consolidated"))
	if info, _ := h.Info(ctxT(t)); info.Storage != "" {
		t.Fatalf("info after the section landed = %+v", info)
	}
	h.stop()
	lt, _ := mem.LongTerm()
	if strings.Count(lt, "## ") != 1 || !strings.Contains(lt, "Miso") {
		t.Fatalf("long_term.md after the retry:\n%s", lt)
	}
	if n := len(rec.Lines(failed)); n != 1 {
		t.Errorf("%d warnings for the failing long-term memory, want 1", n)
	}
	if n := len(rec.Lines(part(slog.LevelInfo, "storage: writing works again", partLongTerm))); n != 1 {
		t.Errorf("%d recovery lines, want 1", n)
	}
}

func TestConsolidationPendingAtShutdownIsLogged(t *testing.T) {
	rec, logger := testlog.New()
	cfg, mem := withMemory(t, Config{Logger: logger, Clock: fakeclock.New(time.Now())})
	h := startHub(t, cfg, &testagent.Count{N: 1})
	s, _ := subscribe(t, h, 0)
	talk(t, h, s, "my cat is called Miso")
	swapForDir(t, filepath.Join(mem.Dir(), "long_term.md"))
	if _, err := h.Reset(ctxT(t), ResetManual, Actor{}); err != nil {
		t.Fatal(err)
	}
	rec.Wait(t, 1, part(slog.LevelWarn, "storage: cannot write", partLongTerm))
	h.stop()
	lost := rec.Lines(testlog.Msg(slog.LevelError, "long-term memory not saved"))
	if len(lost) != 1 || !strings.Contains(lost[0].Attrs["section"], "Miso") || !strings.Contains(lost[0].Attrs["section"], "## ") {
		t.Fatalf("at shutdown with a section pending, logged %v; want one error with the section", lost)
	}
}

// A queued input whose echo cannot be written on arrival is not queued:
// its sender gets the storage error, nobody sees it, and it never runs.
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
	disk.Fail()
	_, err = h.Submit(ctxT(t), Input{Channel: "web", Content: bigInput, ClientMsgID: "b"})
	var se *StorageError
	if !errors.As(err, &se) || se.Code != StorageFull {
		t.Fatalf("queued submit on a full disk = %v, want storage_full", err)
	}
	g.Release <- struct{}{}
	evs := until(t, s, event.TurnEnd)
	for _, e := range evs {
		if e.Type == event.User && e.Turn != "t1" {
			t.Errorf("an input that was not recorded was echoed: %s", e.Data)
		}
	}
	if info, _ := h.Info(ctxT(t)); info.Busy {
		t.Fatalf("an input that was not recorded runs: %+v", info)
	}
}

// faultyLog is the real chat log with writes of chosen types failing.
type faultyLog struct {
	*history.Log
	fail event.Type
}

func (l faultyLog) Append(e event.Event) error {
	if e.Type == l.fail {
		return errors.New("injected write failure")
	}
	return l.Log.Append(e)
}

// A queued input whose turn_start cannot be written does not run (a crash
// could not tell that it had): its sender hears why (an error with the
// storage code, the outcome StatusNotRecorded, so email offers it again),
// its turn is closed in the log, and a restart does not run it either.
func TestQueuedInputNotStarted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chat_history.ndjson")
	lg, err := history.Open(history.Options{Path: path, RotateMB: 5, Fsync: history.FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	g := testagent.NewGate()
	h := startHubWithLog(t, Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)}, g, faultyLog{lg, event.TurnStart})
	s, _ := subscribe(t, h, 0)
	submit(t, h, "running", "a")
	until(t, s, event.Delta)
	done := make(chan TurnOutcome, 1)
	notified := make(chan event.Event, 1)
	r, err := h.Submit(ctxT(t), Input{Channel: "email", Content: "mail", ClientMsgID: "b", Done: done, Patient: true,
		Notify: func(e event.Event) { notified <- e }})
	if err != nil || r.Outcome != Queued {
		t.Fatalf("queued submit = %+v, %v", r, err)
	}
	g.Release <- struct{}{}
	until(t, s, event.TurnEnd)
	evs := until(t, s, event.TurnEnd)
	if te := data[event.TurnEndData](t, evs[len(evs)-1]); evs[len(evs)-1].Turn != r.Turn || te.Status != event.StatusError {
		t.Fatalf("queued turn closed with %s %s, want turn_end error for %s", evs[len(evs)-1].Turn, evs[len(evs)-1].Data, r.Turn)
	}
	var o TurnOutcome
	select {
	case o = <-done:
	case <-ctxT(t).Done():
		t.Fatal("no outcome for the queued input")
	}
	var se *StorageError
	if o.Status != StatusNotRecorded || !errors.As(o.Err, &se) || se.Code != StorageFailed {
		t.Fatalf("outcome %+v, want not_recorded with a storage_error", o)
	}
	select {
	case e := <-notified:
		if d := data[event.ErrorData](t, e); e.Type != event.Error || d.Code != StorageFailed || d.ClientMsgID != "b" {
			t.Fatalf("submitter told %s %s, want error storage_error for b", e.Type, e.Data)
		}
	case <-ctxT(t).Done():
		t.Fatal("the submitter of the queued input was not told")
	}
	if info, _ := h.Info(ctxT(t)); info.Busy {
		t.Fatalf("busy after the queued input failed to start: %+v", info)
	}
	h.stop()
	lg.Close()

	// After a restart nothing waits: the log closed the turn.
	h2 := startHub(t, Config{DataDir: dir, Restore: readLog(t, dir)}, g)
	if info, _ := h2.Info(ctxT(t)); info.Busy {
		t.Fatalf("the input that was not started runs after a restart: %+v", info)
	}
}
