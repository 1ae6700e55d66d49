// Package history keeps the conversation on disk and in memory: the chat log
// (one JSON event per line, rotated by lumberjack) and the chat ring (the
// last N user↔assistant exchanges). It imports only event of ours.
package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// Fsync modes (session.fsync). They trade appends per second for how much a
// power loss or kernel crash can take; a crash of the process alone loses
// nothing already appended in any mode, since every line is written to the
// kernel before Append returns.
const (
	// FsyncAlways: Append returns only once the line is on disk.
	FsyncAlways = "always"
	// FsyncInterval: a background syncer makes appends durable at most
	// about a second after they were made.
	FsyncInterval = "interval"
	// FsyncNever: only Sync and Close make appends durable (and, as a side
	// effect, each rotation makes the finished part durable).
	FsyncNever = "never"
)

// defaultSyncEvery is how often the interval syncer looks for unsynced appends.
const defaultSyncEvery = time.Second

// ErrClosed is returned by Append and Sync after Close.
var ErrClosed = errors.New("chat log is closed")

// ErrMaybeWritten marks an Append error after which the line may be in the
// file all the same: it was written and the fsync failed, or a partial
// write stopped just short of the newline. A caller numbering lines must
// not give the line's number to another one.
var ErrMaybeWritten = errors.New("the line may be in the file")

// Options configure a chat log.
type Options struct {
	// Path is the live file, e.g. data/chat_history.ndjson. Rotated parts go
	// next to it. Its directory is created 0700 if missing; an existing
	// directory keeps its mode. Required.
	Path string
	// RotateMB is the size in MiB at which the live file is rotated. It must
	// be > 0: there is no default here (the config supplies 5).
	RotateMB int
	// Fsync is FsyncAlways, FsyncInterval or FsyncNever. Empty means
	// FsyncAlways.
	Fsync string

	// syncEvery replaces defaultSyncEvery in tests; zero means the default.
	syncEvery time.Duration
}

// Log appends events to the chat log.
//
// A Log is safe for concurrent use: every method takes its mutex. In
// frontdesk the hub goroutine is its only user (Append, Sync, Close); in
// interval mode the Log's own syncer goroutine, started by Open and ended by
// Close, also takes the mutex to sync. Append holds the mutex across its
// write and, in always mode, its fsync, so a sync never sees half a line.
//
// Durability: lumberjack has no Sync, so the Log keeps a second descriptor,
// fd, open on the live file; fsync on any descriptor of an inode flushes that
// inode. After every write the Log checks whether lumberjack rotated (the
// path no longer names fd's inode); if it did, it fsyncs fd (now the finished
// part, holding every byte written before the rotation), fsyncs the directory
// (the rename and the new file), and reopens fd on the new live file. A sync
// then only has to fsync fd. This relies on POSIX semantics and on nobody
// but lumberjack renaming the live file.
type Log struct {
	path      string
	dir       string
	fsync     string
	maxBytes  int64 // the size at which lumberjack rotates
	syncEvery time.Duration

	// stop and done end the interval syncer; nil in other modes. synced
	// gets a value (if there is room) after each background sync that
	// synced something, for tests.
	stop   chan struct{}
	done   chan struct{}
	synced chan struct{}

	mu         sync.Mutex
	lj         *lumberjack.Logger
	fd         *os.File    // second descriptor on the live file, only for Stat and Sync
	fdInfo     os.FileInfo // fd's identity, for os.SameFile
	size       int64       // live file size after the last write
	lastRotate time.Time   // when the last rotation was seen; zero if none
	dirty      bool        // bytes written since fd was last fsynced
	needNL     bool        // a write failed partway: start the next line fresh
	bgErr      error       // the interval syncer's first error, reported once by the next call
	closed     bool
	stats      counters
}

// counters count the Log's fsyncs and rotations so tests can check the
// mechanism; they cost an increment each.
type counters struct {
	liveSyncs int // fsyncs of the live file
	partSyncs int // fsyncs of a part just rotated away
	dirSyncs  int // fsyncs of the directory after a rotation
	rotations int
}

// Open opens the chat log at opts.Path, creating it 0600 (and its directory
// 0700) if needed. If a crash left a partial last line, Open ends it with a
// newline so the next line starts fresh; readers skip the partial one.
// In interval mode Open starts the background syncer; Close ends it.
func Open(opts Options) (*Log, error) {
	mode := opts.Fsync
	if mode == "" {
		mode = FsyncAlways
	}
	switch mode {
	case FsyncAlways, FsyncInterval, FsyncNever:
	default:
		return nil, fmt.Errorf("open chat log: fsync mode %q is unknown, want always, interval or never", opts.Fsync)
	}
	if opts.Path == "" {
		return nil, errors.New("open chat log: no path")
	}
	if opts.RotateMB <= 0 {
		return nil, fmt.Errorf("open chat log: rotate size is %d MB, want > 0", opts.RotateMB)
	}

	dir := filepath.Dir(opts.Path)
	// Before lumberjack, which would create it 0755.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open chat log: %w", err)
	}
	// Create the live file here rather than on lumberjack's first write,
	// so that Open reports a bad path at once and the descriptor used for
	// fsync exists from the start. Lumberjack then opens it as existing;
	// the live files it creates at rotation copy this one's mode (and it
	// would create a missing one 0600 too).
	fd, err := os.OpenFile(opts.Path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open chat log: %w", err)
	}
	fi, size, err := repair(fd)
	if err == nil {
		// The file may be new.
		err = atomicfile.SyncDir(dir)
	}
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("open chat log: %w", err)
	}

	l := &Log{
		path:      opts.Path,
		dir:       dir,
		fsync:     mode,
		maxBytes:  int64(opts.RotateMB) * 1024 * 1024, // lumberjack's megabyte
		syncEvery: opts.syncEvery,
		lj: &lumberjack.Logger{
			Filename: opts.Path,
			MaxSize:  opts.RotateMB,
			// Keep every part: the history tools read them all.
			MaxBackups: 0,
			MaxAge:     0,
			LocalTime:  false,
			// Compression stays off: lumberjack gzips a rotated part in
			// a background goroutine, never fsyncs the .gz, and then
			// deletes the plain part, so after a power loss neither
			// might be on disk, and the fsync of the part done at
			// rotation would be for nothing.
			Compress: false,
		},
		fd:     fd,
		fdInfo: fi,
		size:   size,
	}
	if l.syncEvery <= 0 {
		l.syncEvery = defaultSyncEvery
	}
	if mode == FsyncInterval {
		l.stop = make(chan struct{})
		l.done = make(chan struct{})
		l.synced = make(chan struct{}, 1)
		go l.syncLoop()
	}
	return l, nil
}

// repair ends a partial last line (a crash mid-append) with a newline and
// makes that durable. It returns f's info and size afterwards.
func repair(f *os.File) (os.FileInfo, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := fi.Size()
	if size == 0 {
		return fi, 0, nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return nil, 0, err
	}
	if last[0] == '\n' {
		return fi, size, nil
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return nil, 0, err
	}
	if err := f.Sync(); err != nil {
		return nil, 0, err
	}
	return fi, size + 1, nil
}

// Path returns the live file's path as given to Open.
func (l *Log) Path() string { return l.path }

// Append writes e as one line, with V set to event.LogVersion, in a single
// write. The caller decides which events are persisted; Append writes
// whatever it is given. In always mode it returns once the line is durable.
// An error after the write (a failed fsync) means the line may or may not
// survive a power loss; an error from a background sync that failed earlier
// is returned here once, and then nothing is written.
func (l *Log) Append(e event.Event) error {
	e.V = event.LogVersion
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("append to chat log: %w", err)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err := l.bgErr; err != nil {
		l.bgErr = nil
		return fmt.Errorf("append to chat log: earlier background sync: %w", err)
	}

	var line []byte
	if l.needNL {
		line = make([]byte, 0, len(b)+2)
		line = append(line, '\n')
	}
	line = append(append(line, b...), '\n')

	l.spaceRotations(len(line))
	n, err := l.lj.Write(line)
	if n > 0 {
		l.dirty = true
	}
	if err != nil {
		if n > 0 {
			// The next line starts on a fresh line, which ends this one:
			// cut short it is skipped as malformed, but with only its
			// newline missing it is whole.
			l.needNL = true
			if n >= len(line)-1 {
				return fmt.Errorf("append to chat log: %w: %w", ErrMaybeWritten, err)
			}
		}
		return fmt.Errorf("append to chat log: %w", err)
	}
	l.needNL = false

	if l.fsync == FsyncAlways {
		err = l.syncLocked()
	} else {
		err = l.followRotation()
	}
	if err != nil {
		return fmt.Errorf("append to chat log: %w: %w", ErrMaybeWritten, err)
	}
	return nil
}

// spaceRotations keeps a write that may rotate out of the millisecond of the
// previous rotation: lumberjack names parts by the millisecond, and the
// second rename would silently replace the first part
// (github.com/natefinch/lumberjack/issues/34). It waits at most 1 ms, and
// only when two rotations come less than a millisecond apart.
func (l *Log) spaceRotations(n int) {
	// >= rather than >: lumberjack also rotates a file it reopens at
	// exactly the limit.
	if l.lastRotate.IsZero() || l.size+int64(n) < l.maxBytes {
		return
	}
	// Wall clock, as lumberjack's names use; Truncate drops the
	// monotonic reading.
	next := l.lastRotate.Truncate(time.Millisecond).Add(time.Millisecond)
	if d := time.Until(next); d > 0 {
		time.Sleep(d)
	}
}

// followRotation moves fd to the live file if lumberjack rotated since fd
// was opened, first making the finished part and the directory durable.
// Each write rotates at most once and followRotation runs after every
// successful one, so no part is ever skipped. l.mu must be held.
func (l *Log) followRotation() error {
	cur, err := os.Stat(l.path)
	if err != nil {
		return err
	}
	l.size = cur.Size()
	if os.SameFile(l.fdInfo, cur) {
		return nil
	}
	l.lastRotate = time.Now()
	l.stats.rotations++
	// fd now names the finished part: flush what was written to it since
	// the last sync, including the bytes just before the rotation.
	if err := l.fd.Sync(); err != nil {
		return err
	}
	l.stats.partSyncs++
	// Read-only is enough for fsync on Linux.
	nf, err := os.Open(l.path)
	if err != nil {
		return err
	}
	fi, err := nf.Stat()
	if err == nil {
		// The rename of the part and the creation of the new live file.
		err = atomicfile.SyncDir(l.dir)
	}
	if err != nil {
		nf.Close()
		return err
	}
	l.stats.dirSyncs++
	l.fd.Close() // already fsynced; nothing to lose
	l.fd, l.fdInfo = nf, fi
	return nil
}

// syncLocked makes everything written so far durable. l.mu must be held.
func (l *Log) syncLocked() error {
	if !l.dirty {
		return nil
	}
	if err := l.followRotation(); err != nil {
		return err
	}
	if err := l.fd.Sync(); err != nil {
		return err
	}
	l.stats.liveSyncs++
	l.dirty = false
	return nil
}

// Sync makes everything appended so far durable. It also reports, once, an
// error of an earlier background sync: a later fsync succeeding does not
// prove the earlier data reached the disk.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	err := errors.Join(l.bgErr, l.syncLocked())
	l.bgErr = nil
	if err != nil {
		return fmt.Errorf("sync chat log: %w", err)
	}
	return nil
}

// Close makes everything appended durable, ends the interval syncer and
// closes the files. Calling it again does nothing and returns nil.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()

	if l.stop != nil {
		close(l.stop)
		<-l.done
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	errs := []error{l.bgErr}
	l.bgErr = nil
	errs = append(errs, l.syncLocked())
	errs = append(errs, l.lj.Close())
	errs = append(errs, l.fd.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close chat log: %w", err)
	}
	return nil
}

// syncLoop is the interval syncer. It runs from Open until Close closes
// l.stop.
func (l *Log) syncLoop() {
	defer close(l.done)
	t := time.NewTicker(l.syncEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			if l.tick() {
				select {
				case l.synced <- struct{}{}:
				default:
				}
			}
		}
	}
}

// tick syncs if anything was appended since the last sync and reports
// whether it synced. Its error waits in bgErr for the owner's next call.
func (l *Log) tick() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || !l.dirty {
		return false
	}
	if err := l.syncLocked(); err != nil {
		if l.bgErr == nil {
			l.bgErr = err
		}
		return false
	}
	return true
}
