package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/frontdesk-hq/frontdesk/admin"
	"github.com/frontdesk-hq/frontdesk/auth"
	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/clusterhub"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/people"
)

// pruneEvery is how often expired credentials are deleted.
const pruneEvery = time.Minute

// joinWithCreds is joinCluster, then openCreds into st.creds.
func joinWithCreds(ctx context.Context, cfg config.Config, st *stores, getenv func(string) string, logger *slog.Logger) (*cluster.Node, error) {
	node, err := joinCluster(ctx, cfg, st, getenv, logger)
	if err != nil {
		return node, err
	}
	creds, closeFn, err := openCreds(ctx, cfg, node, logger)
	if err != nil {
		return node, err
	}
	var once sync.Once
	st.creds, st.closeCreds = creds, func() { once.Do(closeFn) }
	st.people = people.New(cfg.People)
	st.people.GuestsFrom(creds)
	return node, nil
}

// loadClusterCreds reads the cluster's credentials, trying again for up
// to a minute while JetStream is not ready (a node restarting into a
// cluster that is electing answers "temporarily unavailable" for a while).
// A damaged credential is not retried.
func loadClusterCreds(ctx context.Context, node *cluster.Node, logger *slog.Logger) (*auth.Store, error) {
	deadline := time.Now().Add(time.Minute)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		creds, err := auth.New(clusterhub.AuthKV{Node: node}, nil)
		if err == nil || strings.Contains(err.Error(), "is damaged") || time.Now().After(deadline) {
			return creds, err
		}
		logger.Warn("credentials: the cluster's bucket did not answer; trying again", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// openCreds opens people's credentials: on a single node the file under
// data_dir/auth, held under its lock while the server runs (a command on
// a stopped server takes the same lock); on a cluster node the replicated
// bucket, watched so that a change on any node applies here at once.
// close releases what it holds.
func openCreds(ctx context.Context, cfg config.Config, node *cluster.Node, logger *slog.Logger) (creds *auth.Store, closeFn func(), err error) {
	if node != nil {
		if creds, err = loadClusterCreds(ctx, node, logger); err != nil {
			return nil, nil, err
		}
		wctx, stop := context.WithCancel(ctx)
		go func() {
			if err := clusterhub.WatchAuth(wctx, node, creds); err != nil {
				logger.Error("credentials: the watch of the other nodes' changes stopped", "err", err)
			}
		}()
		return creds, stop, nil
	}
	dir := filepath.Join(cfg.DataDir, "auth")
	unlock, err := auth.Lock(dir, 2*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: is another frontdesk serving %s?", err, cfg.DataDir)
	}
	if creds, err = openCredentials(dir); err != nil {
		unlock()
		return nil, nil, err
	}
	return creds, unlock, nil
}

// startCreds starts what works on the credentials once the hub runs: the
// admin socket (data_dir/admin.sock), the person_changed events kept while
// the server was stopped and those of a changed people list (in the
// background: on a cluster node they wait for a holder), and pruning.
// addr is where the server listens (login links point there). The
// returned func stops them.
func startCreds(ctx context.Context, cfg config.Config, st *stores, h *hub.SessionManager, addr string, logger *slog.Logger) (stop func()) {
	creds := st.creds
	ctx, cancel := context.WithCancel(ctx)
	record := func(d event.PersonChangedData) error {
		if err := h.RecordPersonChange(ctx, d); err != nil {
			logger.Warn("person_changed kept to be logged at the next start", "action", d.Action, "person", d.Person, "err", err)
			return creds.AddPending(d)
		}
		return nil
	}
	svc := &admin.Service{Store: creds, People: st.people, Addr: addr, Record: record, By: "cli", Now: time.Now}
	sock := filepath.Join(cfg.DataDir, admin.SocketName)
	stopSock, err := admin.Listen(sock, svc)
	if err != nil {
		logger.Warn("no admin socket: frontdesk token and login-link cannot reach this server", "err", err)
		stopSock = func() {}
	}
	// A single node logs them before it listens; a cluster node when a
	// holder takes them.
	clustered := cfg.Cluster.Enabled()
	if !clustered {
		auditAtStart(ctx, creds, h, st.people, logger)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if clustered {
			auditAtStart(ctx, creds, h, st.people, logger)
		}
		t := time.NewTicker(pruneEvery)
		defer t.Stop()
		for {
			if _, err := creds.Prune(); err != nil {
				logger.Warn("credentials: prune the expired", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { stopSock(); cancel(); <-done; st.closeCreds() }
}

// auditAtStart appends the person_changed events kept while the server
// was stopped, then those of the people list's changes since the last
// recorded snapshot, and records the new snapshot.
func auditAtStart(ctx context.Context, creds *auth.Store, h *hub.SessionManager, dir *people.Directory, logger *slog.Logger) {
	m, err := creds.Meta()
	if err != nil {
		logger.Error("credentials: read the audit trail's pending changes", "err", err)
		return
	}
	changes := admin.PeopleChanges(m.People, m.People == nil, dir.Implicit(), admin.Snapshot(dir))
	for i, d := range append(m.Pending, changes...) {
		if err := h.RecordPersonChange(ctx, d); err != nil {
			logger.Error("credentials: log a person change", "action", d.Action, "person", d.Person, "err", err)
			_ = creds.DrainPending(i)
			return
		}
	}
	snap := admin.Snapshot(dir)
	n := len(m.Pending)
	if err := creds.UpdateMeta(func(mm *auth.Meta) {
		mm.Pending = mm.Pending[min(n, len(mm.Pending)):]
		mm.People = snap
	}); err != nil {
		logger.Error("credentials: record the people snapshot", "err", err)
	}
}
