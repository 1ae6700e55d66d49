package datadir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/index"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// History reads a data directory without the server (which may be
// running or stopped): the history tools' source for `frontdesk mcp`, and
// the search of `frontdesk history search`. It searches through the index
// file, opened read-only, when there is a usable one; else through an index
// built in memory from the chat log and long-term memory, kept up with the
// log on each search. It says on note which it did, and when the index
// file is behind the log. Safe for concurrent use (an MCP client may call
// tools at once).
type History struct {
	cfg  config.Config
	r    *history.Reader
	note io.Writer

	mu  sync.Mutex // guards ix and mem
	ix  *index.Index
	mem bool // ix is the in-memory fallback
}

var _ hub.HistorySource = (*History)(nil)

// NewHistory reads the data directory of cfg; it says on note what it searches.
func NewHistory(cfg config.Config, note io.Writer) *History {
	return &History{cfg: cfg, r: history.NewReader(cfg.Session.ChatLogPath), note: note}
}

// Close closes the index, if one was opened.
func (o *History) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ix != nil {
		o.ix.Close()
	}
}

// Recent returns the newest n events of the chat log.
func (o *History) Recent(_ context.Context, n int) ([]event.Event, error) {
	evs, _, err := o.r.Recent(n)
	return evs, err
}

// Range returns the events between from and to, as hub.SessionManager.Range.
func (o *History) Range(ctx context.Context, from, to string, limit int) ([]event.Event, bool, error) {
	f, err := history.ParseBound(from)
	if err != nil {
		return nil, false, &hub.BadBoundError{Name: "from", Err: err}
	}
	t, err := history.ParseBound(to)
	if err != nil {
		return nil, false, &hub.BadBoundError{Name: "to", Err: err}
	}
	evs, truncated, _, err := o.r.Range(ctx, f, t, limit)
	return evs, truncated, err
}

// SearchIndex runs query.
func (o *History) SearchIndex(ctx context.Context, query string, opts index.Options) (index.Result, error) {
	if _, err := index.ParseQuery(query); err != nil {
		return index.Result{}, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ix == nil {
		o.open(ctx)
	}
	if !o.mem {
		res, err := o.ix.Search(ctx, query, opts)
		if !errors.Is(err, index.ErrCorrupt) {
			return o.fileResult(ctx, res, err)
		}
		// Damage a query read: answer from the log, as with no index.
		fmt.Fprintf(o.note, "frontdesk: the index %s is damaged (%v); scanning the chat log\n", IndexPath(o.cfg), err)
		o.ix.Close()
		o.useMemory()
	}
	if err := o.catchUp(ctx); err != nil {
		return index.Result{}, err
	}
	return o.ix.Search(ctx, query, opts)
}

// fileResult completes the answer of a search of the index file: how far
// it is behind the log.
func (o *History) fileResult(ctx context.Context, res index.Result, err error) (index.Result, error) {
	if err != nil {
		return res, err
	}
	indexed, err := o.ix.LastSeq(ctx)
	if err != nil {
		return res, err
	}
	if tail, _, _ := o.r.Recent(1); len(tail) > 0 && tail[0].Seq > indexed {
		fmt.Fprintf(o.note, "frontdesk: the index is %d events behind the chat log (the server indexes them when it runs)\n", tail[0].Seq-indexed)
		res.Indexing = &index.Progress{IndexedSeq: indexed, LogSeq: tail[0].Seq}
	}
	return res, nil
}

// open opens the index file read-only if it is usable, else an empty
// in-memory index that catchUp fills.
func (o *History) open(ctx context.Context) {
	path := IndexPath(o.cfg)
	ix, err := index.OpenReadOnly(path)
	if err == nil {
		if _, err = ix.LastSeq(ctx); err == nil {
			fmt.Fprintf(o.note, "frontdesk: searching the index %s\n", path)
			o.ix = ix
			return
		}
		ix.Close()
	}
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(o.note, "frontdesk: no index at %s; scanning the chat log\n", path)
	} else {
		fmt.Fprintf(o.note, "frontdesk: the index %s is not usable (%v); scanning the chat log\n", path, err)
	}
	o.useMemory()
}

// useMemory switches to an empty in-memory index that catchUp fills.
func (o *History) useMemory() {
	var err error
	if o.ix, err = index.OpenMemory(); err != nil {
		panic(fmt.Sprintf("in-memory index: %v", err)) // no file involved: a broken build
	}
	o.mem = true
}

// catchUp adds what the log holds past the in-memory index, and long-term
// memory.
func (o *History) catchUp(ctx context.Context) error {
	last, err := o.ix.LastSeq(ctx)
	if err != nil {
		return err
	}
	for {
		evs, err := o.r.Since(last+1, 8192)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			break
		}
		if err := o.ix.Add(ctx, evs); err != nil {
			return err
		}
		last = evs[len(evs)-1].Seq
	}
	// The memory items as the server last saved them (read only: the
	// server catches them up with the log as it starts).
	items, err := memory.OpenItems(o.cfg.Memory.Dir)
	if err != nil {
		return nil
	}
	docs, err := MemoryDocs(items)()
	if err != nil {
		return nil
	}
	return o.ix.UpdateMemory(ctx, docs)
}
