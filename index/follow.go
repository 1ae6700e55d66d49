package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Source reads the chat log: the persisted events with seq ≥ from, oldest
// first, at most limit. An empty result means the log holds nothing newer.
type Source func(from int64, limit int) ([]event.Event, error)

// MemorySource returns the long-term memory sections to index (TS and
// Content set).
type MemorySource func() ([]Doc, error)

// FollowerOptions configures a Follower.
type FollowerOptions struct {
	// Path is the index file. Required.
	Path string
	// Log reads the chat log. Required.
	Log Source
	// Memory reads long-term memory; nil indexes no memory.
	Memory MemorySource
	// LogSeq is the newest seq in the chat log at start: searches wait
	// for the index to reach it (see Search).
	LogSeq int64
	// Logger gets progress and trouble. Default slog.Default().
	Logger *slog.Logger
	// Embedder makes the vectors of search by meaning (follow_embed.go);
	// nil searches by keywords only.
	Embedder Embedder
}

// Follower keeps an index in step with the chat log. The hub tells it
// about appends with Notify, which never blocks; Run, on a goroutine of
// its own, reads what is new from the log and indexes it. Search may be
// called from any goroutine.
type Follower struct {
	opts FollowerOptions

	mu sync.RWMutex // held for writing only while the index is swapped or a document erased
	ix *Index

	emu    sync.Mutex
	erased map[int64]bool // seqs erased since the start: a catch-up never indexes them

	wake    chan struct{} // something was appended
	memWake chan struct{} // long-term memory changed

	target  atomic.Int64 // newest seq the hub has appended (or the log had at start)
	covered atomic.Int64 // every event up to this seq that is on disk is indexed
	indexed atomic.Int64 // newest seq in the index
	checked atomic.Bool  // the index passed Check since it was opened (or was made new)
	damaged atomic.Bool  // the index is known damaged: searches skip it until Run rebuilds it

	dmu    sync.Mutex
	damage error // what found the damage, for the log

	pmu        sync.Mutex
	progressed chan struct{} // closed and replaced whenever covered moves

	embWake  chan struct{} // documents may lack vectors
	gen      atomic.Uint64 // counts the index's replacements (rebuild)
	semPause atomic.Int64  // unix ns until which searches skip the embeddings server
}

// batchEvents is how many events one catch-up transaction takes.
const batchEvents = 4096

// searchWait is how long a search waits for the index to catch up before
// answering from what it has.
const searchWait = time.Second

// NewFollower opens the index at opts.Path (rebuilding one that is
// damaged, from another version, or ahead of the log) and returns its
// Follower. Call Run to start following: it also checks the whole file
// for damage (Index.Check), in the background.
func NewFollower(opts FollowerOptions) (*Follower, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	f := &Follower{opts: opts, wake: make(chan struct{}, 1), memWake: make(chan struct{}, 1), progressed: make(chan struct{}),
		embWake: make(chan struct{}, 1)}
	ix, why, err := Open(opts.Path)
	if err != nil {
		return nil, err
	}
	if why != "" {
		opts.Logger.Warn("search index rebuilt from the chat log", "path", opts.Path, "reason", why)
	}
	last, err := ix.LastSeq(context.Background())
	if err == nil && last > opts.LogSeq {
		// The index knows events the log does not: the log was replaced.
		ix.Close()
		opts.Logger.Warn("search index is ahead of the chat log; rebuilding", "index_seq", last, "log_seq", opts.LogSeq)
		if err := Remove(opts.Path); err != nil {
			return nil, err
		}
		if ix, _, err = Open(opts.Path); err != nil {
			return nil, err
		}
		last = 0
	} else if err != nil {
		ix.Close()
		return nil, err
	}
	f.ix = ix
	f.checked.Store(ix.fresh)
	f.indexed.Store(last)
	f.covered.Store(last)
	f.target.Store(opts.LogSeq)
	return f, nil
}

// Close closes the index of a follower whose Run never started (Run closes
// it when it ends).
func (f *Follower) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ix.Close()
}

// Notify tells the follower that the log now holds seq. It never blocks;
// the hub calls it after each append.
func (f *Follower) Notify(seq int64) {
	for {
		t := f.target.Load()
		if seq <= t || f.target.CompareAndSwap(t, seq) {
			break
		}
	}
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// NotifyMemory tells the follower that long-term memory changed. It never
// blocks.
func (f *Follower) NotifyMemory() {
	select {
	case f.memWake <- struct{}{}:
	default:
	}
}

// Run follows the log until ctx ends, then closes the index. Once the
// first catch-up is done it checks an index it did not make for damage,
// beside what follows (see startCheck): the catch-up at start, which
// makes the newest messages searchable, does not share the CPU with it.
// A damaged index is set aside and rebuilt; other failures (a full disk)
// are logged once and retried.
func (f *Follower) Run(ctx context.Context) error {
	stopCheck := func() {}
	needCheck := !f.checked.Load()
	embedDone := make(chan struct{})
	if f.opts.Embedder != nil {
		embedCtx, stopEmbed := context.WithCancel(ctx)
		go func() { defer close(embedDone); f.embedLoop(embedCtx) }()
		defer func() { stopEmbed(); <-embedDone }()
	}
	defer func() {
		stopCheck()
		f.mu.Lock()
		f.ix.Close()
		f.mu.Unlock()
	}()
	memDirty := f.opts.Memory != nil
	var failing error
	retry := time.NewTimer(0)
	retry.Stop()
	for {
		var err error
		if f.damaged.Load() {
			f.dmu.Lock()
			err = f.damage
			f.dmu.Unlock()
		} else {
			err = f.catchUp(ctx)
		}
		if needCheck && ctx.Err() == nil {
			needCheck = false
			if !f.checked.Load() && !f.damaged.Load() && !errors.Is(err, ErrCorrupt) {
				stopCheck = f.startCheck(ctx)
			}
		}
		if err == nil && memDirty {
			if err = f.syncMemory(ctx); err == nil {
				memDirty = false
			}
		}
		if err == nil {
			f.wakeEmbed()
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrCorrupt):
			f.opts.Logger.Warn("search index is damaged; rebuilding from the chat log", "err", err)
			stopCheck() // the check reads the file being set aside
			if err = f.rebuild(); err == nil {
				memDirty = f.opts.Memory != nil
				continue
			}
		}
		if err != nil {
			if failing == nil {
				f.opts.Logger.Error("search index cannot be updated; retrying", "err", err)
			}
			failing = err
			retry.Reset(5 * time.Second)
		} else if failing != nil {
			f.opts.Logger.Info("search index updates again")
			failing = nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-f.wake:
		case <-f.memWake:
			memDirty = f.opts.Memory != nil
		case <-retry.C:
		}
	}
}

// startCheck runs Index.Check on the index as opened, on a goroutine of
// its own beside the updates: the check reads a snapshot of the file, and
// takes seconds for a big index (BenchmarkIndexOpenCheck). Until it
// passes, searches answer marked Progress.Checking; damage it finds is
// rebuilt like damage a search finds. stop cancels it and waits for it.
func (f *Follower) startCheck(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	f.mu.RLock()
	ix := f.ix
	f.mu.RUnlock()
	go func() {
		defer close(done)
		start := time.Now()
		err := ix.Check(ctx)
		switch {
		case ctx.Err() != nil:
			return // stopping, or the index is being replaced
		case errors.Is(err, ErrCorrupt):
			f.markDamaged(err)
			return
		case err != nil:
			f.opts.Logger.Warn("search index could not be checked for damage", "err", err)
		default:
			f.opts.Logger.Info("search index checked for damage: sound", "took", time.Since(start).Round(time.Millisecond))
		}
		f.checked.Store(true)
		f.signal()
	}()
	return func() { cancel(); <-done }
}

// markDamaged records that the index is damaged (err says how it was
// found): searches stop reading it, and Run sets it aside and rebuilds.
func (f *Follower) markDamaged(err error) {
	f.dmu.Lock()
	if f.damage == nil {
		f.damage = err
	}
	f.dmu.Unlock()
	f.damaged.Store(true)
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// catchUp indexes everything the log holds past the index.
func (f *Follower) catchUp(ctx context.Context) error {
	target := f.target.Load()
	from := f.indexed.Load()
	behind := target - from
	start := time.Now()
	lastReport := start
	big := behind > 50_000
	if big {
		f.opts.Logger.Info("indexing the chat log for search", "from_seq", from+1, "to_seq", target)
	}
	var docs int
	for {
		evs, err := f.opts.Log(f.indexed.Load()+1, batchEvents)
		if err != nil {
			return fmt.Errorf("read chat log: %w", err)
		}
		if len(evs) == 0 {
			break
		}
		f.mu.RLock()
		err = f.ix.Add(ctx, f.withoutErased(evs))
		f.mu.RUnlock()
		if err != nil {
			return err
		}
		docs += len(evs)
		f.indexed.Store(max(f.indexed.Load(), evs[len(evs)-1].Seq))
		if big && time.Since(lastReport) > 5*time.Second {
			lastReport = time.Now()
			f.opts.Logger.Info("indexing the chat log for search", "at_seq", f.indexed.Load(), "to_seq", target)
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	if big {
		f.opts.Logger.Info("search index caught up", "events", docs, "took", time.Since(start).Round(time.Millisecond))
	}
	f.covered.Store(max(f.covered.Load(), target))
	f.signal()
	return nil
}

// signal wakes the searches waiting for the index to catch up or pass
// its check.
func (f *Follower) signal() {
	f.pmu.Lock()
	close(f.progressed)
	f.progressed = make(chan struct{})
	f.pmu.Unlock()
}

// syncMemory re-indexes long-term memory when it changed.
func (f *Follower) syncMemory(ctx context.Context) error {
	docs, err := f.opts.Memory()
	if err != nil {
		return fmt.Errorf("read long-term memory: %w", err)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.ix.UpdateMemory(ctx, docs)
}

// rebuild sets a damaged index aside and puts an empty one in its place;
// the next catch-up fills it. Searches answer from the new index, marked
// as indexing, while it fills.
func (f *Follower) rebuild() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ix.Close()
	aside, err := SetAside(f.opts.Path, time.Now())
	if err == nil {
		f.opts.Logger.Warn("the damaged search index is kept aside", "path", aside)
		f.ix, _, err = Open(f.opts.Path)
	}
	if err != nil {
		// Keep a usable value: searches answer from it (empty, marked
		// as indexing) until the next try.
		f.ix, _ = OpenMemory()
	}
	// Whatever happens, the damaged file is no longer searched.
	f.dmu.Lock()
	f.damage = nil
	f.dmu.Unlock()
	f.damaged.Store(false)
	f.checked.Store(true)
	f.gen.Add(1)
	f.indexed.Store(0)
	f.covered.Store(0)
	return err
}

// Progress says how far the index has got.
func (f *Follower) Progress() Progress {
	return Progress{IndexedSeq: f.indexed.Load(), LogSeq: f.target.Load()}
}

// Search runs query over the index. If the index has not yet caught up
// with the newest append it waits up to a second for it, then answers
// from what it has and says so in Result.Indexing (which also says when
// the index has not yet passed its check after opening). A search that
// finds the index damaged is not an error: it answers with no hits,
// marked as indexing from seq 0, and has Run rebuild the index, so a
// damaged index never fails a search.
func (f *Follower) Search(ctx context.Context, query string, opts Options) (Result, error) {
	q, err := ParseQuery(query)
	if err != nil {
		return Result{}, err
	}
	want := f.target.Load()
	if err := f.await(ctx, want); err != nil {
		return Result{}, err
	}
	// How far the index is, taken before the query: what it finds is at
	// least that complete (catch-up may finish while it runs).
	p := f.Progress()
	p.Checking = !f.checked.Load()
	behind := p.Checking || f.covered.Load() < want
	if f.damaged.Load() {
		return damagedResult(want), nil
	}
	f.mu.RLock()
	var res Result
	if f.opts.Embedder == nil { // keywords only, exactly as without embeddings
		res, err = f.ix.SearchQuery(ctx, q, opts)
	} else {
		res, err = f.searchHybrid(ctx, q, opts)
	}
	f.mu.RUnlock()
	if errors.Is(err, ErrCorrupt) {
		f.markDamaged(err)
		return damagedResult(want), nil
	}
	if behind && err == nil {
		res.Indexing = &p
	}
	return res, err
}

// damagedResult is the answer of a search while the index is known to be
// damaged: nothing, and nothing indexed yet.
func damagedResult(logSeq int64) Result {
	return Result{Hits: []Hit{}, Mode: ModeAnd, Indexing: &Progress{LogSeq: logSeq}}
}

// await waits up to searchWait for the index to cover want. (It does not
// wait for the check: that takes seconds for a big index, and the answer
// says it is not done.)
func (f *Follower) await(ctx context.Context, want int64) error {
	ready := func() bool { return f.covered.Load() >= want }
	if ready() {
		return nil
	}
	t := time.NewTimer(searchWait)
	defer t.Stop()
	for !ready() {
		f.pmu.Lock()
		ch := f.progressed
		f.pmu.Unlock()
		if ready() {
			break
		}
		select {
		case <-ch:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Stats counts what the index holds.
func (f *Follower) Stats(ctx context.Context) (Stats, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.ix.Stats(ctx)
}
