package hub

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testlog"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// memoryFaultLog is a chat log that refuses memory_changed events while
// refuse is set, and takes everything else.
type memoryFaultLog struct {
	*history.Log
	refuse atomic.Bool
}

func (l *memoryFaultLog) Append(e event.Event) error {
	if e.Type == event.MemoryChanged && l.refuse.Load() {
		return errors.New("injected write failure")
	}
	return l.Log.Append(e)
}

func openFaultLog(t *testing.T, dir string) *memoryFaultLog {
	t.Helper()
	lg, err := history.Open(history.Options{Path: filepath.Join(dir, "chat_history.ndjson"), RotateMB: 5, Fsync: "never"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	return &memoryFaultLog{Log: lg}
}

// A consolidation whose summary the chat log refuses waits and is tried
// again, backing off, until it lands as an item.
func TestConsolidatedItemRetriedUntilLogged(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	rec, logger := testlog.New()
	cfg, _ := withMemory(t, Config{Clock: clock, Logger: logger, ConsolidateRetry: 5 * time.Second})
	cfg = withItems(t, cfg)
	lg := openFaultLog(t, cfg.DataDir)
	h := startHubWithLog(t, cfg, &testagent.Count{N: 1}, lg)
	s, _ := subscribe(t, h, 0)
	talk(t, h, s, "my cat is called Miso")
	lg.refuse.Store(true)
	if _, err := h.Reset(ctxT(t), ResetManual, Actor{}); err != nil {
		t.Fatal(err)
	}
	rec.Wait(t, 1, part(slog.LevelWarn, "storage: cannot write", partChatLog))
	if info, _ := h.Info(ctxT(t)); info.Storage != StorageFailed {
		t.Fatalf("info = %+v, want the chat log's fault", info)
	}
	if err := clock.BlockUntil(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	lg.refuse.Store(false)
	clock.Advance(5 * time.Second)
	until(t, s, event.Reset)
	d := memoryChange(t, s)
	if d.Action != event.MemoryConsolidated || !strings.Contains(d.Text, "Miso") {
		t.Fatalf("memory_changed %+v", d)
	}
	if info, _ := h.Info(ctxT(t)); info.Storage != "" {
		t.Fatalf("info after the summary landed = %+v", info)
	}
	if list, _ := h.MemoryList(ctxT(t)); len(list) != 1 {
		t.Fatalf("items %+v, want the one summary", list)
	}
}

// slowSummarizer is an agent whose summary takes until its context ends.
type slowSummarizer struct {
	testagent.Count
	started chan struct{}
}

func (a *slowSummarizer) Summarize(ctx context.Context, _ []event.Event) (string, error) {
	close(a.started)
	<-ctx.Done()
	return "", ctx.Err()
}

var _ memory.Summarizer = (*slowSummarizer)(nil)

// A summary still being made when the server stops is saved all the same:
// the hub takes a consolidation while it shuts down.
func TestConsolidationAtShutdownIsSaved(t *testing.T) {
	cfg, _ := withMemory(t, Config{Logger: slog.New(slog.DiscardHandler)})
	cfg = withItems(t, cfg)
	a := &slowSummarizer{Count: testagent.Count{N: 1}, started: make(chan struct{})}
	h := startHub(t, cfg, a)
	s, _ := subscribe(t, h, 0)
	talk(t, h, s, "my cat is called Miso")
	if _, err := h.Reset(ctxT(t), ResetManual, Actor{}); err != nil {
		t.Fatal(err)
	}
	<-a.started
	h.stop()
	var saved []event.MemoryChangedData
	for _, e := range readLog(t, cfg.DataDir) {
		if e.Type == event.MemoryChanged {
			saved = append(saved, data[event.MemoryChangedData](t, e))
		}
	}
	if len(saved) != 1 || saved[0].Action != event.MemoryConsolidated || !strings.Contains(saved[0].Text, "Miso") {
		t.Fatalf("memory_changed in the log after shutdown: %+v", saved)
	}
	items, err := memory.OpenItems(filepath.Join(cfg.DataDir, "memory"))
	if err != nil || items.Len() != 1 {
		t.Fatalf("items.json after shutdown: %d items, %v", items.Len(), err)
	}
}

var _ agent.Agent = (*slowSummarizer)(nil)
