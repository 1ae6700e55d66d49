package hub

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// consolidateTimeout bounds one memory consolidation (a model call).
const consolidateTimeout = 2 * time.Minute

// consolidate folds the outgoing conversation into long-term memory on a
// goroutine of its own; its Wait is part of shutdown. Sections land in the
// order of the resets that made them: each goroutine summarises at once
// but writes only after the previous one has finished.
func (m *SessionManager) consolidate(ctx context.Context, transcript []event.Event, reason string) {
	mem := m.cfg.Memory
	if mem == nil || len(transcript) == 0 {
		return
	}
	sum, _ := m.agent.(memory.Summarizer)
	now := m.now()
	// The summariser never sees what was forgotten, and what it writes is
	// checked again before it is saved (it may know it from elsewhere).
	forgotten := m.forgotten()
	transcript, _ = forgotten.CutEvents(transcript)
	prev, done := m.consolidated, make(chan struct{})
	m.consolidated = done
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		defer close(done)
		cctx, cancel := context.WithTimeout(ctx, consolidateTimeout)
		entry := memory.Summarize(cctx, sum, transcript, reason, now)
		cancel()
		if !m.checkForgotten(&entry, forgotten) {
			return
		}
		if prev != nil {
			<-prev // ends by shutdown at the latest
		}
		if m.cfg.Items != nil {
			m.saveConsolidated(ctx, entry)
			return
		}
		m.saveLongTerm(ctx, mem, entry)
	}()
}

// forgotten is what memory keeps of the forgotten items (nil without an
// item store).
func (m *SessionManager) forgotten() memory.ForgottenSet {
	if m.cfg.Items == nil {
		return nil
	}
	return m.cfg.Items.Forgotten()
}

// checkForgotten cuts from a consolidation the sentences that give away a
// forgotten item, and reports whether anything is left to save.
func (m *SessionManager) checkForgotten(entry *memory.Entry, forgotten memory.ForgottenSet) bool {
	if entry.Heading == "" {
		return false
	}
	summary, cut := forgotten.Cut(entry.Summary)
	if cut == 0 {
		return true
	}
	entry.Summary = strings.TrimSpace(summary)
	if entry.Summary == "" {
		m.cfg.Logger.Warn("memory consolidation refused: all it wrote gave away forgotten items", "heading", entry.Heading, "sentences_cut", cut)
		return false
	}
	m.cfg.Logger.Warn("memory consolidation: sentences that gave away forgotten items were cut", "heading", entry.Heading, "sentences_cut", cut)
	return true
}

// saveLongTerm appends entry to long_term.md, trying again after
// Config.ConsolidateRetry, doubling up to maxConsolidateRetry, until it is
// written or ctx ends; then it tries once more, and if that fails too it
// logs the section that was not saved. The hub hears of the first failure
// and of the success after it (see stored). Consolidation goroutine only.
func (m *SessionManager) saveLongTerm(ctx context.Context, mem *memory.Store, entry memory.Entry) {
	log := m.cfg.Logger
	wait := m.cfg.ConsolidateRetry
	failed := false
	for {
		err := mem.AppendLongTerm(entry)
		if err == nil {
			if failed {
				m.report(partLongTerm, nil)
			}
			attrs := []any{"heading", entry.Heading, "fallback", entry.Fallback}
			if entry.Err != nil {
				attrs = append(attrs, "summarizer_err", entry.Err) // why the fallback
			}
			log.Info("memory consolidated", attrs...)
			if m.cfg.Index != nil {
				m.cfg.Index.NotifyMemory()
			}
			return
		}
		if ctx.Err() != nil {
			log.Error("long-term memory not saved: the server stopped before long_term.md could be written; "+
				"this section is not in it (add it by hand to keep it)",
				"file", filepath.Join(mem.Dir(), memory.LongTermFile), "section", entry.Section(), "err", err)
			return
		}
		if !m.report(partLongTerm, err, "heading", entry.Heading, "retry_in", wait) {
			log.Error("write long-term memory", "err", err) // the hub is stopping
		}
		failed = true
		t := m.cfg.Clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-ctx.Done(): // one last try
			t.Stop()
		}
		wait = min(2*wait, maxConsolidateRetry)
	}
}

// saveConsolidated saves entry as a memory item (action consolidated,
// source consolidation) through the hub. While the chat log refuses it (a
// *StorageError: the hub reports the fault) it tries again after
// Config.ConsolidateRetry, doubling up to maxConsolidateRetry; once ctx
// ends it tries once more (the hub still takes a consolidation while it
// shuts down), and if that fails too it logs the summary that was not
// saved. Consolidation goroutine only.
func (m *SessionManager) saveConsolidated(ctx context.Context, entry memory.Entry) {
	log := m.cfg.Logger
	wait := m.cfg.ConsolidateRetry
	text := entry.Heading + "\n\n" + entry.Summary
	for {
		// Not ctx: a summary made before shutdown is still worth saving.
		it, err := m.memorySave(context.WithoutCancel(ctx), memoryCmd{text: text, source: memory.SourceConsolidation,
			by: memory.SourceConsolidation, action: event.MemoryConsolidated})
		if err == nil {
			attrs := []any{"id", it.ID, "heading", entry.Heading, "fallback", entry.Fallback}
			if entry.Err != nil {
				attrs = append(attrs, "summarizer_err", entry.Err) // why the fallback
			}
			log.Info("memory consolidated", attrs...)
			return
		}
		var se *StorageError
		if !errors.As(err, &se) || ctx.Err() != nil {
			log.Error("long-term memory not saved: the summary of the conversation could not be written to the chat log; "+
				"it is not in memory (add it with POST /api/memory to keep it)",
				"section", entry.Section(), "err", err)
			return
		}
		t := m.cfg.Clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-ctx.Done(): // one last try
			t.Stop()
		}
		wait = min(2*wait, maxConsolidateRetry)
	}
}

// saveShortTerm hands the current context to the short-term writer,
// replacing an older snapshot it has not written yet.
func (m *SessionManager) saveShortTerm() {
	if m.cfg.Memory == nil {
		return
	}
	cur, _ := m.forgotten().CutEvents(conversation(m.buf, 0))
	select {
	case <-m.shortTerm: // drop the stale snapshot
	default:
	}
	m.shortTerm <- cur // the hub is the only sender and just made room
}

// writeShortTerm writes short_term.md whenever the hub hands it a new
// snapshot, until shutdown closes the channel (after its last snapshot).
// The hub hears of every failure and of the first success after one, and
// logs them (see stored): a disk that stays full is one line, not one per
// turn.
func (m *SessionManager) writeShortTerm() {
	failing := false
	for evs := range m.shortTerm {
		err := m.cfg.Memory.WriteShortTerm(evs)
		if (err != nil || failing) && !m.report(partShortTerm, err) && err != nil {
			m.cfg.Logger.Error("write short-term memory", "err", err) // the hub is stopping
		}
		failing = err != nil
	}
}
