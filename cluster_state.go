package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/frontdesk-hq/frontdesk/channels/email"
	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/clusterhub"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
	"github.com/frontdesk-hq/frontdesk/schedule"
	"github.com/frontdesk-hq/frontdesk/web"
)

// clusterState is a cluster node's share of the holder's files: the
// replicas of schedules.json and of the email spool in the cluster's state
// bucket, and whether this node's scheduler runs (it holds the lease).
// Its methods are no-ops on a nil *clusterState (a single node).
type clusterState struct {
	dataDir     string
	node        *cluster.Node
	sched, mail *clusterhub.Replica
	leading     atomic.Bool
}

func newClusterState(cfg config.Config, n *cluster.Node, a *app) *clusterState {
	fenced := func() { a.runner.Fenced() }
	return &clusterState{dataDir: cfg.DataDir, node: n,
		sched: &clusterhub.Replica{Node: n, Key: clusterhub.KeySchedules, Fenced: fenced},
		mail:  &clusterhub.Replica{Node: n, Key: clusterhub.KeyEmail, Fenced: fenced}}
}

// watchSchedules tells this node's open Scheduled panels when the
// holder's schedules change, until ctx ends (clusterhub.WatchSchedules).
func (cs *clusterState) watchSchedules(ctx context.Context, changed func(), logger *slog.Logger) {
	clusterhub.WatchSchedules(ctx, cs.node, cs.leading.Load, changed, logger)
}

// schedReplicate is schedule.Options.Replicate: nil on a single node.
func (cs *clusterState) schedReplicate() func([]byte) error {
	if cs == nil {
		return nil
	}
	return cs.sched.Put
}

// mailReplicate is email.Options.Replicate: nil on a single node.
func (cs *clusterState) mailReplicate() func([]byte) error {
	if cs == nil {
		return nil
	}
	return cs.mail.Put
}

// schedules is the doors' schedule API: s itself on a single node, the
// forwarding one on a cluster node.
func (cs *clusterState) schedules(s *schedule.Scheduler) web.Schedules {
	if cs == nil {
		return s
	}
	return clusterhub.Schedules{Node: cs.node, Local: s, Leads: cs.leading.Load}
}

// takeOver restores the cluster's schedules.json and email spool into
// this node's data directory and has the scheduler read them again; a new
// holder calls it before its scheduler and email channel start.
func (cs *clusterState) takeOver(ctx context.Context, a *app, logger *slog.Logger) error {
	if cs == nil {
		return nil
	}
	schedPath := filepath.Join(cs.dataDir, "schedules.json")
	held := []clusterhub.Held{{Replica: cs.sched,
		Local:   func() ([]byte, error) { return readIfExists(schedPath) },
		Restore: func(b []byte) error { return atomicfile.Write(schedPath, b, 0o600) }}}
	if a.mail != nil {
		held = append(held, clusterhub.Held{Replica: cs.mail,
			Local:   func() ([]byte, error) { return email.SnapshotSpool(cs.dataDir) },
			Restore: func(b []byte) error { return email.RestoreSpool(cs.dataDir, b) }})
	}
	if err := clusterhub.TakeOver(ctx, logger, held...); err != nil {
		return err
	}
	return a.sched.Reload()
}

// lead serves the forwarded schedule changes (the scheduler runs now).
func (cs *clusterState) lead(ctx context.Context, a *app, logger *slog.Logger) {
	if cs == nil {
		return
	}
	cs.leading.Store(true)
	context.AfterFunc(ctx, func() { cs.leading.Store(false) })
	clusterhub.ServeSchedules(ctx, cs.node, a.sched, logger)
}

func readIfExists(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
