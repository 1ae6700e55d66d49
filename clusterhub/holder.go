package clusterhub

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/frontdesk-hq/frontdesk/channels/chat"
	"github.com/frontdesk-hq/frontdesk/channels/email"
	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
	"github.com/frontdesk-hq/frontdesk/schedule"
)

// HolderFiles is a cluster node's share of the holder's files: the
// replicas of schedules.json and of the email spool in the cluster's state
// bucket, and whether this node's scheduler runs (it holds the lease).
// Its methods are no-ops on a nil *HolderFiles (a single node).
type HolderFiles struct {
	dataDir     string
	node        *cluster.Node
	sched, mail *Replica
	chats       map[string]*Replica // by door: each chat door's state.json
	leading     atomic.Bool
}

// NewHolderFiles returns the holder's files of a node whose data directory
// is dataDir; fenced is called when a replica's write finds that another
// node holds the lease.
func NewHolderFiles(dataDir string, n *cluster.Node, fenced func()) *HolderFiles {
	return &HolderFiles{dataDir: dataDir, node: n,
		sched: &Replica{Node: n, Key: KeySchedules, Fenced: fenced},
		mail:  &Replica{Node: n, Key: KeyEmail, Fenced: fenced},
		chats: chatReplicas(n, fenced)}
}

// chatReplicas are the chat doors' replicas, under the door's name.
func chatReplicas(n *cluster.Node, fenced func()) map[string]*Replica {
	m := map[string]*Replica{}
	for _, door := range chat.DoorNames {
		m[door] = &Replica{Node: n, Key: door, Fenced: fenced}
	}
	return m
}

// ChatReplicate is chat.Options.Replicate for door: nil on a single node.
func (h *HolderFiles) ChatReplicate(door string) func([]byte) error {
	if h == nil {
		return nil
	}
	return h.chats[door].Put
}

// WatchSchedules tells this node's open Scheduled panels when the
// holder's schedules change, until ctx ends (see the function of the name).
func (h *HolderFiles) WatchSchedules(ctx context.Context, changed func(), logger *slog.Logger) {
	if h == nil {
		return
	}
	WatchSchedules(ctx, h.node, h.leading.Load, changed, logger)
}

// SchedReplicate is schedule.Options.Replicate: nil on a single node.
func (h *HolderFiles) SchedReplicate() func([]byte) error {
	if h == nil {
		return nil
	}
	return h.sched.Put
}

// MailReplicate is email.Options.Replicate: nil on a single node.
func (h *HolderFiles) MailReplicate() func([]byte) error {
	if h == nil {
		return nil
	}
	return h.mail.Put
}

// Forwarding is the doors' schedule API on a cluster node: s while this
// node holds the lease, the holder's over NATS otherwise.
func (h *HolderFiles) Forwarding(s *schedule.Scheduler) Schedules {
	return Schedules{Node: h.node, Local: s, Leads: h.leading.Load}
}

// TakeOver restores the cluster's schedules.json, with mail its email
// spool, and the state of each chat door in chats, into this node's data
// directory and has the scheduler read them again; a new holder calls it
// before its scheduler and doors start.
func (h *HolderFiles) TakeOver(ctx context.Context, sched *schedule.Scheduler, mail bool, chats []string, logger *slog.Logger) error {
	if h == nil {
		return nil
	}
	schedPath := filepath.Join(h.dataDir, "schedules.json")
	held := []Held{{Replica: h.sched,
		Local:   func() ([]byte, error) { return readIfExists(schedPath) },
		Restore: func(b []byte) error { return atomicfile.Write(schedPath, b, 0o600) }}}
	if mail {
		held = append(held, Held{Replica: h.mail,
			Local:   func() ([]byte, error) { return email.SnapshotSpool(h.dataDir) },
			Restore: func(b []byte) error { return email.RestoreSpool(h.dataDir, b) }})
	}
	for _, door := range chats {
		held = append(held, Held{Replica: h.chats[door],
			Local:   func() ([]byte, error) { return chat.SnapshotState(h.dataDir, door) },
			Restore: func(b []byte) error { return chat.RestoreState(h.dataDir, door, b) }})
	}
	if err := TakeOver(ctx, logger, held...); err != nil {
		return err
	}
	return sched.Reload()
}

// Lead serves the forwarded schedule changes (the scheduler runs now)
// until ctx ends.
func (h *HolderFiles) Lead(ctx context.Context, sched *schedule.Scheduler, logger *slog.Logger) {
	if h == nil {
		return
	}
	h.leading.Store(true)
	context.AfterFunc(ctx, func() { h.leading.Store(false) })
	ServeSchedules(ctx, h.node, sched, logger)
}

func readIfExists(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
