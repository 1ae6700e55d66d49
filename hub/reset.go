package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// Reset reasons.
const (
	ResetManual = "manual"
	ResetIdle   = "idle-timeout"
)

// reset runs DESIGN.md rule 8: cancel the running turn; write the buffer
// to an audit file; trim the buffer to the chat ring; consolidate memory
// (on a goroutine: a model call must not stall the session); append and
// broadcast the reset event; bump the generation. Queued inputs then run
// in the new generation.
//
// It is all or nothing on disk: the audit file, session.json with the next
// generation and the reset event in the chat log are written before any
// state in memory changes. If one of them fails, what was written is
// undone (as far as the disk allows), nothing else changes, and the
// *StorageError says why; a turn it cancelled stays cancelled.
func (m *SessionManager) reset(ctx context.Context, reason, person string) (event.ResetData, error) {
	m.cancelTurn(CancelByReset, person)
	// Queued inputs run either way: in the new generation, or in the old
	// one if the reset failed.
	defer m.startPending(ctx)

	// A reset is rare and its failure changes nothing, so each one is
	// logged; it is not a lasting fault of its own (Info.Storage): the
	// files it writes sit next to the chat log, whose next write shows a
	// lasting fault, and the next reset tries them again.
	fail := func(err error) (event.ResetData, error) {
		se := storageErr("reset", err)
		m.cfg.Logger.Error("reset failed; nothing changed", "reason", reason, "code", se.Code, "err", err)
		return event.ResetData{}, se
	}
	// A turn_end the log still owes belongs before the reset, in the log
	// and in the audit file.
	if err := m.payOwed(); err != nil {
		return fail(err)
	}
	audit, err := m.writeAudit()
	if err != nil {
		return fail(fmt.Errorf("write audit file: %w", err))
	}
	next := m.sess
	next.Generation++
	if err := saveSession(m.cfg.DataDir, next); err != nil {
		m.undoAudit(audit)
		return fail(fmt.Errorf("save session: %w", err))
	}
	d := event.ResetData{Reason: reason, Kept: m.ring.Len(), Person: person}
	e := event.New(event.Reset, "", m.now(), d)
	e, err = m.commit(e)
	if err != nil {
		if rerr := saveSession(m.cfg.DataDir, m.sess); rerr != nil {
			m.cfg.Logger.Error("session.json keeps the generation of a reset that failed", "generation", next.Generation, "err", rerr)
		}
		m.undoAudit(audit)
		return fail(err)
	}

	// On disk: now the session in memory follows.
	// This generation's conversation, for memory.
	outgoing := conversation(m.buf, m.lastReset)
	// The buffer keeps the ring's exchanges and the inputs still waiting
	// (they run in the new generation), in seq order.
	frames := make(map[int64]*Frame, len(m.buf))
	for _, f := range m.buf {
		frames[f.Event.Seq] = f
	}
	kept := m.ring.Events()
	for _, f := range m.waitingEchoes() {
		kept = append(kept, f.Event)
	}
	buf := make([]*Frame, 0, len(kept)+1)
	for _, k := range bySeq(kept) {
		f, ok := frames[k.Seq]
		if !ok {
			f = newFrame(k)
		}
		buf = append(buf, f)
	}
	m.buf, m.volatile = buf, 0
	m.sess = next
	bump(&m.counters.Resets, reason)
	m.deliver(e)
	m.lastReset = m.seq
	m.bufFirst = m.seq
	m.consolidate(ctx, outgoing, reason)
	m.saveShortTerm()
	return d, nil
}

// writeAudit writes the whole buffer to audit/<time>.ndjson (0600) and
// returns its path.
func (m *SessionManager) writeAudit() (string, error) {
	dir := filepath.Join(m.cfg.DataDir, "audit")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var b bytes.Buffer
	for _, f := range m.buf {
		if !f.Event.Type.Persisted() {
			continue
		}
		e := f.Event
		e.V = event.LogVersion
		line, err := json.Marshal(e)
		if err != nil {
			return "", err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	// A new name, never an earlier reset's (within one millisecond): a
	// failed reset removes its audit file again.
	base := filepath.Join(dir, m.now().UTC().Format("2006-01-02T15-04-05.000"))
	path := base + ".ndjson"
	for i := 2; ; i++ {
		if _, err := os.Lstat(path); err != nil {
			break // not there (or not to be known: the write will tell)
		}
		path = fmt.Sprintf("%s-%d.ndjson", base, i)
	}
	return path, atomicfile.Write(path, b.Bytes(), 0o600)
}

// undoAudit removes the audit file of a reset that did not happen.
func (m *SessionManager) undoAudit(path string) {
	if err := os.Remove(path); err != nil {
		m.cfg.Logger.Error("reset failed, and its audit file stays", "path", path, "err", err)
	}
}
