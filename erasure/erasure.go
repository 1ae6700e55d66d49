// Package erasure rids one node's files of an erased event: the chat log
// (live file and rotated parts, .gz included), the audit files, the
// search index (search.db and its WAL), the attachments no other message
// refers to and short_term.md. The hub decides what is erased and writes
// the erased event (package hub); an Applier makes the files follow, on
// every node that holds a copy.
package erasure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// Index is the search index's part in an erase. *index.Follower
// implements it.
type Index interface {
	Erase(ctx context.Context, seq int64) error
}

// FileEraser removes an attachment from a store the nodes share so that
// its bytes leave it; one it does not hold is no error. *cluster.Node
// implements it.
type FileEraser interface {
	EraseFile(ctx context.Context, sha string) error
}

// Applier makes this node's files hold no trace of an erased event. Its
// fields are what the node has; a nil one is skipped. Apply may be called
// from any goroutine; applies run one at a time.
type Applier struct {
	// Log is the chat log: the erased line becomes the tombstone in the
	// file that holds it (history.Log.Erase).
	Log *history.Log
	// AuditDir holds the audit files resets write (data_dir/audit).
	AuditDir string
	// Index is the search index.
	Index Index
	// Attachments is the local attachment store.
	Attachments *attachments.Store
	// Shared is the store every node shares (a cluster's object store),
	// if any: an attachment no other message refers to leaves it too.
	Shared FileEraser
	// Memory holds short_term.md (and long_term.md of older versions).
	Memory *memory.Store
	// Logger gets what each apply did. Default slog.Default().
	Logger *slog.Logger

	mu sync.Mutex // one apply at a time
	wg sync.WaitGroup
}

// Stats says what one Apply did.
type Stats struct {
	// Found: the chat log still held the erased event's content (false
	// when it held its tombstone already, or not the seq at all).
	Found       bool
	Rewritten   history.EraseStats // chat log and audit files
	Attachments int                // files removed
	Memory      int                // memory files rewritten
	Took        time.Duration
}

// Apply makes this node's files hold no trace of the event d erased.
// What needs the event's text (short_term.md, attachments) is done first,
// while the chat log still holds it; the chat log is rewritten last. It is
// idempotent: applying d again finds the tombstone and only makes sure of
// the index and the files; a seq the chat log does not hold yet is no
// error. Every step is tried; the error joins those that failed.
func (a *Applier) Apply(ctx context.Context, d event.ErasedData) error {
	_, err := a.apply(ctx, d)
	return err
}

func (a *Applier) apply(ctx context.Context, d event.ErasedData) (Stats, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	start := time.Now()
	var st Stats
	var errs []error
	orig, err := a.read(ctx, d.Seq)
	if err != nil {
		errs = append(errs, err)
	}
	msg, isMsg := orig.Message()
	st.Found = isMsg && !event.IsTombstone(orig)
	if st.Found {
		n, err := a.redactMemory(msg.Content)
		st.Memory = n
		errs = append(errs, err)
		removed, err := a.removeAttachments(ctx, d.Seq, msg.Attachments)
		st.Attachments = removed
		errs = append(errs, err)
	}
	if a.Index != nil {
		errs = append(errs, a.Index.Erase(ctx, d.Seq))
	}
	line, _ := json.Marshal(tombstone(d))
	aud, err := a.eraseAudit(d.Seq, line)
	st.Rewritten.Files, st.Rewritten.Bytes = aud.Files, aud.Bytes
	errs = append(errs, err)
	if a.Log != nil {
		ls, err := a.Log.Erase(event.Tombstone(d))
		st.Rewritten.Files += ls.Files
		st.Rewritten.Bytes += ls.Bytes
		errs = append(errs, err)
	}
	st.Took = time.Since(start)
	err = errors.Join(errs...)
	a.logger().Info("erased event rid from this node's files", "seq", d.Seq, "found", st.Found,
		"files_rewritten", st.Rewritten.Files, "bytes_rewritten", st.Rewritten.Bytes,
		"attachments_removed", st.Attachments, "memory_files", st.Memory, "took", st.Took.Round(time.Millisecond), "err", err)
	return st, err
}

// Later applies d on a goroutine of its own (Wait waits for it), for the
// hub's Config.Erased, which must not block. A failure is logged.
func (a *Applier) Later(d event.ErasedData) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := a.Apply(context.Background(), d); err != nil {
			a.logger().Error("erase: the files may still hold the erased event; it is applied again at the next start",
				"seq", d.Seq, "err", err)
		}
	}()
}

// Wait waits for the applies Later started.
func (a *Applier) Wait() { a.wg.Wait() }

func (a *Applier) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}

// tombstone is the line the log holds for d (as history.Log.Append
// writes it).
func tombstone(d event.ErasedData) event.Event {
	t := event.Tombstone(d)
	t.V = event.LogVersion
	return t
}

// read returns the event at seq as the chat log holds it (the zero Event
// if it holds none).
func (a *Applier) read(ctx context.Context, seq int64) (event.Event, error) {
	if a.Log == nil {
		return event.Event{}, nil
	}
	evs, _, _, err := history.NewReader(a.Log.Path()).Range(ctx, history.Bound{Seq: seq}, history.Bound{Seq: seq}, 1)
	if err != nil {
		return event.Event{}, fmt.Errorf("read the erased event: %w", err)
	}
	if len(evs) == 1 && evs[0].Seq == seq {
		return evs[0], nil
	}
	return event.Event{}, nil
}

// redactMemory removes what quotes content from short_term.md and
// long_term.md, and returns how many files it rewrote.
func (a *Applier) redactMemory(content string) (int, error) {
	if a.Memory == nil || strings.TrimSpace(content) == "" {
		return 0, nil
	}
	n := 0
	var errs []error
	for _, name := range []string{memory.ShortTermFile, memory.LongTermFile} {
		changed, err := a.Memory.RedactFile(name, content)
		if changed && err == nil {
			n++
		}
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// removeAttachments removes the files of atts that no message but the
// erased one (at seq) refers to. It reads the whole chat log to know.
func (a *Applier) removeAttachments(ctx context.Context, seq int64, atts []event.Attachment) (int, error) {
	if a.Attachments == nil || len(atts) == 0 || a.Log == nil {
		return 0, nil
	}
	left := map[string]bool{}
	for _, at := range atts {
		left[at.SHA256] = true
	}
	r := history.NewReader(a.Log.Path())
	for from := int64(1); len(left) > 0; {
		evs, _, _, err := r.Range(ctx, history.Bound{Seq: from}, history.Bound{}, 4096)
		if err != nil {
			return 0, fmt.Errorf("read the chat log for attachments: %w", err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if m, ok := e.Message(); ok && e.Seq != seq {
				for _, at := range m.Attachments {
					delete(left, at.SHA256) // still referred to: kept
				}
			}
		}
		from = evs[len(evs)-1].Seq + 1
	}
	n := 0
	var errs []error
	for h := range left {
		if a.Shared != nil {
			if err := a.Shared.EraseFile(ctx, h); err != nil {
				errs = append(errs, err)
			}
		}
		if err := a.Attachments.Remove(h); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// eraseAudit puts line in place of seq's in every audit file.
func (a *Applier) eraseAudit(seq int64, line []byte) (history.EraseStats, error) {
	var st history.EraseStats
	if a.AuditDir == "" {
		return st, nil
	}
	files, err := filepath.Glob(filepath.Join(a.AuditDir, "*.ndjson*"))
	if err != nil {
		return st, err
	}
	var errs []error
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), ".") {
			continue
		}
		s, err := history.EraseInFile(f, seq, line)
		st.Files += s.Files
		st.Bytes += s.Bytes
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return st, errors.Join(errs...)
}

// ApplyStats is Apply, also saying what it did.
func (a *Applier) ApplyStats(ctx context.Context, d event.ErasedData) (Stats, error) {
	return a.apply(ctx, d)
}
