package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/frontdesk-hq/frontdesk/event"
)

// ErasedBucket is the KV bucket of erasures: key "<seq>" holds the
// event.ErasedData of the erased event at that seq, put before the
// stream's message at seq is deleted. A node that copies the log after
// the delete finds a hole at seq and fills it with event.Tombstone of
// that record (Event), byte for byte what every other copy became. No
// TTL, one revision a key, as many replicas as the log stream; it holds
// no text, only seq, who erased, type, ts, turn and channel.
const ErasedBucket = "FRONTDESK_ERASED"

// ErrHole: the log stream has no message at a seq below its last one and
// no erasure is recorded for that seq. A copy must not skip it.
var ErrHole = errors.New("cluster: the log stream has a hole with no erasure recorded for it")

// Forget makes the log stream forget the erased event d names: it records
// d in ErasedBucket, then securely deletes the stream's message at d.Seq
// (its bytes overwritten on every replica). The erased event itself must
// already be in the stream (the caller copied it from there). It is
// idempotent: a record already there and a message already deleted are
// not errors, so every node that copies the erased event may call it, and
// a holder that died between the append and the delete is made good by
// the others.
//
// Fencing and stream seq = event seq still hold: deleting an interior
// message changes neither the stream's last sequence (appends still
// expect it) nor any other message's sequence.
func (n *Node) Forget(ctx context.Context, d event.ErasedData) error {
	if d.Seq < 1 {
		return fmt.Errorf("cluster: forget seq %d: seqs start at 1", d.Seq)
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("cluster: forget seq %d: %w", d.Seq, err)
	}
	key := strconv.FormatInt(d.Seq, 10)
	if _, err := n.erased.Create(ctx, key, b); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("cluster: record the erasure of seq %d: %w", d.Seq, err)
	}
	if n.stream.CachedInfo().Config.DenyDelete {
		return fmt.Errorf("cluster: delete seq %d from the log stream: %s", d.Seq, denyDeleteText)
	}
	err = n.stream.SecureDeleteMsg(ctx, uint64(d.Seq))
	if err != nil && !gone(err) {
		return fmt.Errorf("cluster: delete seq %d from the log stream: %w", d.Seq, err)
	}
	n.compactLocal()
	return nil
}

// compactLocal asks this node's compactor (compactLoop) to snapshot its
// replica of the log stream; it does not wait.
func (n *Node) compactLocal() {
	select {
	case n.compactReq <- struct{}{}:
	default: // one is asked for already: it covers this delete too
	}
}

// compactLoop snapshots this node's replica of the log stream each time
// compactLocal asks, until stop is closed. A snapshot drops the
// replication log (JetStream's raft WAL) up to what the replica applied:
// that log holds every appended message as it was published, erased or
// not, and JetStream snapshots it on its own only every two to three
// minutes. It first waits (at most compactWait) until every replica that
// is online has stored everything: a leader that drops its log before a
// lagging replica stored the delete makes that replica catch up from a
// snapshot, and JetStream then drops the message there without
// overwriting its bytes. It snapshots again compactAgain later, for a
// replica that had not applied the delete yet the first time. Only an
// embedded clustered server has a replication log frontdesk can reach.
func (n *Node) compactLoop(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }() // ends with stop: Close closes it
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.compactReq:
		}
		n.snapshotStored(ctx, n.stream, LogStream)
		select {
		case <-ctx.Done():
			return
		case <-time.After(compactAgain):
		}
		n.snapshotStored(ctx, n.stream, LogStream)
	}
}

// Bounds of compactLoop.
const (
	compactWait  = 5 * time.Second
	compactAgain = 300 * time.Millisecond
)

// snapshotStored snapshots this node's replica of stream s (named name)
// once every online replica has stored what its leader has — waiting at
// most compactWait — so that its Raft log drops what was deleted, until
// ctx ends.
func (n *Node) snapshotStored(ctx context.Context, s jetstream.Stream, name string) {
	deadline := time.Now().Add(compactWait)
	for time.Now().Before(deadline) {
		ictx, cancel := context.WithTimeout(ctx, apiTimeout)
		info, err := s.Info(ictx)
		cancel()
		if err == nil && replicasCurrent(info) {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := n.srv.JetStreamSnapshotStream(globalAccount, name); err != nil {
		n.log.Warn("cluster: snapshot this node's replica after an erase", "stream", name, "err", err)
	}
}

// replicasCurrent reports whether every online replica of the stream
// info describes has stored all its leader has.
func replicasCurrent(info *jetstream.StreamInfo) bool {
	if info.Cluster == nil {
		return false
	}
	for _, r := range info.Cluster.Replicas {
		if !r.Offline && (!r.Current || r.Lag > 0) {
			return false
		}
	}
	return true
}

// globalAccount is the embedded server's only account (no accounts are
// configured).
const globalAccount = "$G"

// errCodeSeqNotFound: a delete found no message at that seq (deleted
// before).
const errCodeSeqNotFound = 10043

// gone reports whether a delete's error says the message is not there.
// The client flattens the server's error into text (ErrMsgDeleteUnsuccessful
// then "%s"), so the code is read from it.
func gone(err error) bool {
	c := apiCode(err)
	return errors.Is(err, jetstream.ErrMsgNotFound) || c == jetstream.JSErrCodeMessageNotFound || c == errCodeSeqNotFound ||
		strings.Contains(err.Error(), "err_code="+strconv.Itoa(errCodeSeqNotFound)+" ")
}

// Erasure returns the erasure recorded for seq; ok is false when none is.
func (n *Node) Erasure(ctx context.Context, seq int64) (d event.ErasedData, ok bool, err error) {
	e, err := n.erased.Get(ctx, strconv.FormatInt(seq, 10))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("cluster: read the erasure of seq %d: %w", seq, err)
	}
	if err := json.Unmarshal(e.Value(), &d); err != nil || d.Seq != seq {
		return d, false, fmt.Errorf("cluster: the erasure recorded for seq %d is damaged (%q)", seq, e.Value())
	}
	return d, true, nil
}

// Interior reads the event at seq, a seq known to be inside the log (a
// later one exists): a message the stream forgot (Forget) comes as the
// tombstone of its recorded erasure, and one with no erasure recorded is
// ErrHole — never skipped. Only such reads consult the erasure bucket: a
// follower asking for the next event before it is there (Event) must not
// wait on it (it may have no leader for seconds after a node died).
func (n *Node) Interior(ctx context.Context, seq int64) (event.Event, error) {
	e, err := n.Event(ctx, seq)
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return e, err
	}
	d, ok, rerr := n.Erasure(ctx, seq)
	if rerr != nil {
		return event.Event{}, rerr
	}
	if !ok {
		return event.Event{}, fmt.Errorf("seq %d: %w", seq, ErrHole)
	}
	return event.Tombstone(d), nil
}

func (n *Node) bindErased(ctx context.Context) (err error) {
	n.erased, err = n.bucket(ctx, jetstream.KeyValueConfig{Bucket: ErasedBucket,
		Description: "frontdesk erasures: what stands where an erased event was in the log stream"})
	return err
}
