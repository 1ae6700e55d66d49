package clusterhub

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/hub"
)

// Join joins this node to the cluster (cluster.node set): NATS up, the log
// stream bound, this data directory checked against it — its chat log,
// which reaches localLast, must be a copy of the stream's — and given the
// cluster's session id.
func Join(ctx context.Context, cfg config.Config, localLast int64, getenv func(string) string, logger *slog.Logger) (*cluster.Node, error) {
	if err := CheckSecret(cfg, getenv); err != nil {
		return nil, err
	}
	n, err := cluster.Start(ctx, FromConfig(cfg, getenv), logger)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*cluster.Node, error) { n.Close(); return nil, err }
	last, err := n.LastSeq(ctx)
	if err != nil {
		return fail(err)
	}
	if localLast > last {
		return fail(fmt.Errorf("this node's chat log (%s) reaches seq %d but the cluster's log only %d: it is not a copy of this cluster's log; give this node an empty data directory",
			cfg.Session.ChatLogPath, localLast, last))
	}
	id, created, err := n.Session(ctx)
	if err != nil {
		return fail(err)
	}
	if err := hub.AdoptSession(cfg.DataDir, id, created, localLast == 0); err != nil {
		return fail(err)
	}
	logger.Info("cluster node up", "node", n.Name(), "replicas", n.Replicas(), "log_last_seq", last)
	return n, nil
}
