package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Session returns the session's id and when it began, the same on every
// node and across restarts: both come from the log stream's creation,
// which happens once for the life of the cluster.
func (n *Node) Session(ctx context.Context) (id string, created time.Time, err error) {
	info, err := n.stream.Info(ctx)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("cluster: read the log stream: %w", err)
	}
	created = info.Created.UTC()
	sum := sha256.Sum256([]byte(info.Config.Name + "\x00" + created.Format(time.RFC3339Nano)))
	return "s-" + hex.EncodeToString(sum[:8]), created, nil
}
