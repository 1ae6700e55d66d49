package clusterhub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/frontdesk-hq/frontdesk/attachments"
	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// Bounds of one object store transfer: a put may take putWait plus a
// second per MiB of the file, a fetch (its size unknown until read)
// fetchWait — ample for 20 MiB between machines, short enough that a door
// without a quorum answers.
const (
	putWait   = 5 * time.Second
	fetchWait = 30 * time.Second
)

// Files is the attachment store of a cluster node: the JetStream object
// store (keyed by sha256) holds every file, and this node's local store
// (data_dir/attachments) is its cache. A file stored here is put in the
// object store before the upload is acknowledged; a file this node lacks
// is fetched into the local store the first time it is asked for (an
// input referring to it, GET /api/attachments/{sha256}, an agent reading
// it). It has the methods of *attachments.Store that the doors, the hub
// and the agents use, and is safe for concurrent use.
type Files struct {
	Local FileStore
	Node  *cluster.Node
	// Logger tells of prefetches that failed; nil discards them.
	Logger *slog.Logger

	once     sync.Once
	fetchers chan struct{} // Prefetch's semaphore
}

// prefetchers bounds the fetches Prefetch runs at once.
const prefetchers = 4

// Prefetch fetches the files a user event refers to into the local store
// in the background, so that every node holds every file of the
// conversation (a backup of any node has them) and not only those it was
// asked for. Runner calls it with each event it copies.
func (f *Files) Prefetch(e event.Event) {
	m, ok := e.Message()
	if !ok || len(m.Attachments) == 0 {
		return
	}
	f.once.Do(func() { f.fetchers = make(chan struct{}, prefetchers) })
	go func() {
		f.fetchers <- struct{}{}
		defer func() { <-f.fetchers }()
		for _, a := range m.Attachments {
			if err := f.fetch(a.SHA256); err != nil && f.Logger != nil {
				f.Logger.Warn("fetch an attachment of the log from the cluster", "seq", e.Seq, "sha256", a.SHA256, "err", err)
			}
		}
	}()
}

// FileStore is an attachment store as the doors, the hub and the agents
// use it: *attachments.Store (the local one) and *Files implement it.
type FileStore interface {
	Put(r io.Reader, name string) (event.Attachment, error)
	Stat(sha256 string) (event.Attachment, error)
	Open(sha256 string) (*os.File, event.Attachment, error)
	Path(sha256 string) string
}

var (
	_ FileStore = (*attachments.Store)(nil)
	_ FileStore = (*Files)(nil)
)

// Put stores the file in the local store (which checks and names it), then
// in the object store. When the object store cannot take it (no quorum)
// the upload fails with an error wrapping hub.ErrNoLeader — the doors
// answer 503 no_leader — and the local copy stays as a cache.
func (f *Files) Put(r io.Reader, name string) (event.Attachment, error) {
	a, err := f.Local.Put(r, name)
	if err != nil {
		return a, err
	}
	file, _, err := f.Local.Open(a.SHA256)
	if err != nil {
		return event.Attachment{}, err
	}
	defer file.Close()
	ctx, cancel := context.WithTimeout(context.Background(), putWait+time.Duration(a.Size>>20)*time.Second)
	defer cancel()
	if err := f.Node.PutNamedFile(ctx, a.SHA256, a.Name, file); err != nil {
		return event.Attachment{}, fmt.Errorf("share attachment %s with the cluster: %v: %w", a.SHA256, err, hub.ErrNoLeader)
	}
	return a, nil
}

// Stat returns the record of the file named h, fetching it first if this
// node lacks it (see attachments.Store.Stat for the errors; a file the
// object store lacks too is fs.ErrNotExist).
func (f *Files) Stat(h string) (event.Attachment, error) {
	if err := f.fetch(h); err != nil {
		return event.Attachment{}, err
	}
	return f.Local.Stat(h)
}

// Open opens the file named h, fetching it first if this node lacks it.
func (f *Files) Open(h string) (*os.File, event.Attachment, error) {
	if err := f.fetch(h); err != nil {
		return nil, event.Attachment{}, err
	}
	return f.Local.Open(h)
}

// Path is where the file named h is in the local store, fetched there
// first if this node lacks it ("" for an invalid h, as the local store).
// A failed fetch leaves the path of a missing file: the reader's open
// fails and says so.
func (f *Files) Path(h string) string {
	_ = f.fetch(h)
	return f.Local.Path(h)
}

// fetch copies the file named h from the object store into the local
// store unless it is there already. An invalid h is left to the local
// store to refuse. The copy goes through the local store's Put, which
// hashes it again: what lands under h is h's content or nothing.
func (f *Files) fetch(h string) error {
	if !attachments.ValidHash(h) {
		return nil
	}
	var err error
	for range 3 {
		if err = f.fetchOnce(h); !errors.Is(err, cluster.ErrBadRead) {
			return err
		}
	}
	return err
}

// fetchOnce is one try of fetch; cluster.ErrBadRead when what was read
// did not match h (nothing of it is kept).
func (f *Files) fetchOnce(h string) error {
	if _, err := f.Local.Stat(h); !errors.Is(err, fs.ErrNotExist) {
		return nil // here (or a local fault, which Stat and Open report)
	}
	ctx, cancel := context.WithTimeout(context.Background(), fetchWait)
	defer cancel()
	rc, name, err := f.Node.OpenFile(ctx, h)
	if errors.Is(err, cluster.ErrNoFile) {
		return fmt.Errorf("no attachment %s in the cluster: %w", h, fs.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("fetch attachment %s from the cluster: %v: %w", h, err, hub.ErrNoLeader)
	}
	defer rc.Close()
	a, err := f.Local.Put(rc, name)
	if err != nil {
		return fmt.Errorf("fetch attachment %s from the cluster: %w", h, err)
	}
	if a.SHA256 != h {
		return fmt.Errorf("fetch attachment %s from the cluster: it holds %s under that name", h, a.SHA256)
	}
	return nil
}
