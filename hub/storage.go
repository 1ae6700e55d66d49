package hub

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Storage fault codes: StorageError.Code, Info.Storage and the wire's
// error code.
const (
	// StorageFull: the disk is full or over quota (ENOSPC, EDQUOT).
	StorageFull = "storage_full"
	// StorageFailed: any other failed write (read-only file system, I/O
	// error, a file the server may not replace).
	StorageFailed = "storage_error"
	// On a cluster node the log is a stream, and a refused append is no
	// disk fault: StorageNoLeader, nothing was written (this node lost the
	// lease, or the stream has no leader); StorageNoAnswer, the stream did
	// not say whether it took the event. Neither turns /healthz to 503.
	StorageNoLeader = "no_leader"
	StorageNoAnswer = "no_answer"
)

// The parts of the data the hub writes, as its log lines and
// Info.StorageError name them. Each one's fault lasts from a failed write
// to the next write of that part that succeeds.
const (
	partChatLog   = "chat log"
	partShortTerm = "short-term memory"
	partLongTerm  = "long-term memory"
)

// StorageError is a write the session could not make. Whatever Op names
// did not happen: an input was not recorded (nor echoed, nor run), a reset
// changed nothing. Compare with errors.As; Code is the wire's error code.
type StorageError struct {
	Code string // StorageFull or StorageFailed
	Op   string // what was not done: "record input", "reset"
	Err  error
}

func (e *StorageError) Error() string { return e.Op + ": " + e.Err.Error() }

func (e *StorageError) Unwrap() error { return e.Err }

// Message is a sentence for the sender: what happened and what to do.
func (e *StorageError) Message() string {
	switch e.Code {
	case StorageNoLeader:
		return ErrNoLeader.Error()
	case StorageNoAnswer:
		return ErrNoAnswer.Error()
	}
	if e.Code == StorageFull {
		return "the server's disk is full: nothing was saved, try again once space is freed (" + e.Error() + ")"
	}
	return "the server could not write to its disk: nothing was saved, try again later (" + e.Error() + ")"
}

// TurnMessage is the sentence for a turn whose events the log refused:
// its input is on disk; its reply is too when saved (only what came after
// it, the turn's end, was refused), else it (or part of it) is not.
func (e *StorageError) TurnMessage(saved bool) string {
	if m := clusterTurnMessage(e.Code); m != "" {
		return m
	}
	if saved {
		what := "the server could not write to its disk"
		if e.Code == StorageFull {
			what = "the server's disk is full"
		}
		return what + ": the reply was saved, but the end of this turn was not yet; it is written once the disk takes writes again (" + e.Error() + ")"
	}
	if e.Code == StorageFull {
		return "the server's disk is full: this reply could not be saved, so it is not kept; free space and ask again (" + e.Error() + ")"
	}
	return "the server could not write to its disk: this reply could not be saved, so it is not kept; ask again later (" + e.Error() + ")"
}

func storageErr(op string, err error) *StorageError {
	return &StorageError{Code: storageCode(err), Op: op, Err: err}
}

// clusterTurnMessage is the sentence for a turn whose events a cluster's
// log did not take; "" for a disk fault.
func clusterTurnMessage(code string) string {
	switch code {
	case StorageNoLeader:
		return "this node stopped running the assistant while the reply was being written (another node took over): the reply is not kept; ask again"
	case StorageNoAnswer:
		return "the cluster's log did not confirm this reply in time, so it may not be kept; ask again if it is missing"
	}
	return ""
}

// clusterFault reports whether err is a cluster log's refusal (see
// StorageNoLeader), not a disk fault.
func clusterFault(err error) bool {
	return errors.Is(err, ErrNoLeader) || errors.Is(err, ErrNoAnswer)
}

// storageCode tells a full disk from other write failures, and a cluster
// log's refusal from both.
func storageCode(err error) string {
	switch {
	case errors.Is(err, ErrNoAnswer):
		return StorageNoAnswer
	case errors.Is(err, ErrNoLeader):
		return StorageNoLeader
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return StorageFull
	}
	// The rotation library flattens its errors into text ("can't open new
	// logfile: … no space left on device").
	if s := err.Error(); strings.Contains(s, syscall.ENOSPC.Error()) || strings.Contains(s, syscall.EDQUOT.Error()) {
		return StorageFull
	}
	return StorageFailed
}

// fault is a part of the data that cannot be written, as the hub last saw.
type fault struct {
	err   error
	code  string
	since time.Time
	count int // failed writes since
}

// stored records how a write of part went, on the hub's goroutine: the
// first failure is logged as an error, the ones after it at debug level
// only (a full disk fails every write; one line says so), and the first
// success after a failure says that writing works again. attrs add detail
// to the lines (which event was not recorded).
func (m *SessionManager) stored(part string, err error, attrs ...any) {
	if clusterFault(err) {
		// Not the disk: this node's place in the cluster (see
		// StorageNoLeader). /healthz tells it by the node's role.
		m.cfg.Logger.Warn("cluster: the log did not take an event", append([]any{"part", part, "err", err}, attrs...)...)
		return
	}
	f := m.faults[part]
	switch {
	case err == nil && f == nil:
	case err == nil:
		delete(m.faults, part)
		m.cfg.Logger.Info("storage: writing works again", append([]any{"part", part,
			"failed_writes", f.count, "down_for", m.now().Sub(f.since).Round(time.Millisecond)}, attrs...)...)
	case f == nil:
		f = &fault{err: err, code: storageCode(err), since: m.now(), count: 1}
		m.faults[part] = f
		m.cfg.Logger.Error("storage: cannot write; /healthz reports it until a write succeeds", append([]any{"part", part,
			"code", f.code, "err", err}, attrs...)...)
	default:
		f.err, f.code = err, storageCode(err)
		f.count++
		m.cfg.Logger.Debug("storage: write failed again", append([]any{"part", part, "err", err}, attrs...)...)
	}
}

// storageState is Info's view of the faults: the code (StorageFull if any
// part is full) and a line naming the part and its error; "" when every
// part's last write succeeded.
func (m *SessionManager) storageState() (code, msg string) {
	parts := make([]string, 0, len(m.faults))
	for p := range m.faults {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		f := m.faults[p]
		if code == "" || (f.code == StorageFull && code != StorageFull) {
			code, msg = f.code, p+": "+f.err.Error()
		}
	}
	return code, msg
}

// storageCmd reports a write made off the hub's goroutine (the memory
// writers), with detail for the log lines.
type storageCmd struct {
	part  string
	err   error
	attrs []any
}

// report tells the hub how a write made on another goroutine went. It
// reports false, having told nobody, once the hub is stopping: the caller
// then logs a failure itself.
func (m *SessionManager) report(part string, err error, attrs ...any) bool {
	select {
	case <-m.stopping:
		return false
	default:
	}
	select {
	case m.cmds <- storageCmd{part: part, err: err, attrs: attrs}:
		return true
	case <-m.stopping:
		return false
	}
}

// drainReports logs the storage reports still queued when the hub stopped
// reading commands. Shutdown only, after the memory writers ended.
func (m *SessionManager) drainReports() {
	for {
		select {
		case c := <-m.cmds:
			if r, ok := c.(storageCmd); ok {
				m.stored(r.part, r.err, r.attrs...)
			}
		default:
			return
		}
	}
}
