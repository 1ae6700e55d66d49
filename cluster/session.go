package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/frontdesk-hq/frontdesk/event"
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

// Event reads the event at seq straight from the log stream's leader (no
// consumer: creating one needs the meta leader, which may be the node
// that just died). A seq the stream does not hold is jetstream.ErrMsgNotFound:
// past its end, or an erased event's deleted message (see Interior).
func (n *Node) Event(ctx context.Context, seq int64) (event.Event, error) {
	m, err := n.stream.GetMsg(ctx, uint64(seq))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return event.Event{}, fmt.Errorf("cluster: read seq %d of the log: %w", seq, err)
	}
	if err != nil {
		return event.Event{}, fmt.Errorf("cluster: read seq %d of the log: %w", seq, err)
	}
	var e event.Event
	if err := json.Unmarshal(m.Data, &e); err != nil {
		return e, fmt.Errorf("cluster: log message %d: %w", seq, err)
	}
	if e.Seq != seq {
		return e, fmt.Errorf("cluster: log message %d holds an event with seq %d", seq, e.Seq)
	}
	return e, nil
}
