package index

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Erase removes the document of seq (an erased message) so that neither
// the file nor its write-ahead log holds its words: the FTS5 rows are
// deleted (the table's secure-delete option takes the terms out of the
// index's pages at once, not at a later merge), the docs row and its
// vector too, with SQLite's secure_delete on (freed space is zeroed), and
// then the WAL is checkpointed and truncated. The tombstone left in the
// chat log has no content, so nothing takes the document's place; the
// seq stays in the index's count (last_seq). A seq the index does not
// hold is no error. The Follower's goroutine, or under its lock (see
// Follower.Erase).
func (ix *Index) Erase(ctx context.Context, seq int64) error {
	ix.vmu.Lock() // the document's vector goes with it
	defer ix.vmu.Unlock()
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return classify("erase from index", err)
	}
	defer tx.Rollback()
	var words int64
	err = tx.QueryRowContext(ctx, `SELECT len FROM docs WHERE id = ?`, seq).Scan(&words)
	found := err == nil
	if found {
		for _, q := range []string{
			`INSERT INTO fts(fts, rowid, content) SELECT 'delete', id, content FROM docs WHERE id = ?`,
			`DELETE FROM docs WHERE id = ?`,
			`DELETE FROM vecs WHERE id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, seq); err != nil {
				return classify("erase from index", err)
			}
		}
		if err := addTotals(ctx, tx, -1, -words); err != nil {
			return classify("erase from index", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return classify("erase from index", err)
	}
	ix.vec.remove(seq)
	return ix.checkpoint(ctx)
}

// checkpoint copies the WAL into the file and truncates it, so that the
// words of an erased document are in neither (their pages were zeroed by
// secure_delete when the copy overwrote them).
func (ix *Index) checkpoint(ctx context.Context) error {
	if ix.path == "" || ix.readOnly {
		return nil
	}
	var busy, logFrames, done int
	err := ix.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done)
	if err != nil {
		return classify("checkpoint index", err)
	}
	if busy != 0 {
		return fmt.Errorf("checkpoint index: a reader held the write-ahead log; try again")
	}
	return nil
}

// secureDelete turns on FTS5's secure-delete for the fts table: a delete
// removes the row's terms from the index's pages at once.
const secureDelete = `INSERT INTO fts(fts, rank) VALUES('secure-delete', 1)`

// remove forgets the vector of id, keeping the others in order.
func (s *vecStore) remove(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i, v := range s.ids {
		if v == id {
			continue
		}
		s.ids[n], s.ts[n], s.kind[n], s.scale[n] = v, s.ts[i], s.kind[i], s.scale[i]
		copy(s.data[n*s.dim:(n+1)*s.dim], s.data[i*s.dim:(i+1)*s.dim])
		n++
	}
	s.ids, s.ts, s.kind, s.scale, s.data = s.ids[:n], s.ts[:n], s.kind[:n], s.scale[:n], s.data[:n*s.dim]
}

// Erase removes the document of seq from the index (Index.Erase) and
// keeps any catch-up from indexing it again: one that read the chat log
// before its line became a tombstone indexes the tombstone instead. Any
// goroutine; it waits for a running catch-up batch.
func (f *Follower) Erase(ctx context.Context, seq int64) error {
	f.emu.Lock()
	if f.erased == nil {
		f.erased = map[int64]bool{}
	}
	f.erased[seq] = true
	f.emu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ix.Erase(ctx, seq)
}

// withoutErased is evs with every erased seq's content gone (the caller
// holds f.mu for reading, so Erase waits for the batch).
func (f *Follower) withoutErased(evs []event.Event) []event.Event {
	f.emu.Lock()
	defer f.emu.Unlock()
	if len(f.erased) == 0 {
		return evs
	}
	out := evs
	for i, e := range evs {
		if f.erased[e.Seq] && !event.IsTombstone(e) {
			if &out[0] == &evs[0] {
				out = append([]event.Event(nil), evs...)
			}
			out[i].Data = json.RawMessage(`{"erased":true,"content":""}`)
		}
	}
	return out
}
