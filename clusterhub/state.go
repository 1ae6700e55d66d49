package clusterhub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/frontdesk-hq/frontdesk/cluster"
)

// Keys of the holder's files in the cluster's state bucket.
const (
	KeySchedules = "schedules" // data_dir/schedules.json as written
	KeyEmail     = "email"     // the email spool (email.RestoreSpool reads it)
)

// stateWait bounds one read or write of the state bucket.
const stateWait = 3 * time.Second

// Replica is one of the holder's files kept in the state bucket, so that
// the next holder starts from it after a failover. The holder Pulls it
// when it wins, then Puts each new version after writing it locally; a
// Put is compare-and-swap on the revision it pulled or last put, so a
// node that is no longer the holder cannot overwrite the new one's.
type Replica struct {
	Node *cluster.Node
	Key  string
	// Fenced, if set, is called when a Put was refused because another
	// node wrote the key since (this node lost the lease).
	Fenced func()

	mu     sync.Mutex
	rev    uint64
	pulled bool
}

// Pull reads the key's value (nil when it was never put) and remembers
// its revision for the next Put.
func (r *Replica) Pull(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, stateWait)
	defer cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	b, rev, err := r.Node.GetState(ctx, r.Key)
	if err != nil {
		return nil, err
	}
	r.rev, r.pulled = rev, true
	return b, nil
}

// Put stores b as the key's new value. It fails before a Pull.
func (r *Replica) Put(b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), stateWait)
	defer cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.pulled {
		return fmt.Errorf("cluster state %s: not taken over yet (this node does not hold the lease)", r.Key)
	}
	for {
		rev, err := r.Node.PutState(ctx, r.Key, b, r.rev)
		switch {
		case err == nil:
			r.rev = rev
			return nil
		case errors.Is(err, cluster.ErrFenced):
			if r.Fenced != nil {
				r.Fenced()
			}
			return err
		}
		// The bucket elects a leader (its last one died): try again
		// while the time lasts.
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Held is a holder's file and its replica.
type Held struct {
	Replica *Replica
	// Local reads this node's copy; nil, nil: there is none.
	Local func() ([]byte, error)
	// Restore makes b this node's copy.
	Restore func(b []byte) error
}

// TakeOver makes the cluster's copy of each file this node's, for a node
// that just won the lease, before anything that uses the files starts:
// the replica's value is restored locally; where the bucket has none yet
// (a cluster made before the bucket, or nothing ever written), this
// node's own copy is put there. It retries a bucket that does not answer
// (electing its leader after a node died) until ctx ends.
func TakeOver(ctx context.Context, logger *slog.Logger, held ...Held) error {
	for _, h := range held {
		b, err := h.Replica.Pull(ctx)
		for err != nil {
			logger.Warn("read the cluster state; retrying", "key", h.Replica.Key, "err", err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			b, err = h.Replica.Pull(ctx)
		}
		if b != nil {
			if err := h.Restore(b); err != nil {
				return fmt.Errorf("restore the cluster's %s: %w", h.Replica.Key, err)
			}
			logger.Info("took over the cluster state", "key", h.Replica.Key, "bytes", len(b))
			continue
		}
		local, err := h.Local()
		if err != nil {
			return fmt.Errorf("read this node's %s: %w", h.Replica.Key, err)
		}
		if local != nil {
			if err := h.Replica.Put(local); err != nil {
				return fmt.Errorf("put this node's %s into the cluster state: %w", h.Replica.Key, err)
			}
			logger.Info("the cluster had no copy; this node's is now the cluster's", "key", h.Replica.Key)
		}
	}
	return nil
}
