package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/history"
)

// JetStream's two codes for "wrong last sequence" (a constant and a
// formatted variant); either means fenced.
const (
	errCodeWrongLastSeq      = 10071
	errCodeWrongLastSeqConst = 10164
	// errCodeDupInProcess: a retry found the earlier try of the same
	// message id still being replicated; its outcome is unknown.
	errCodeDupInProcess = 10158
)

// Append appends e to the log stream as one message holding e's JSON, with
// the expectation that the stream's last sequence is e.Seq-1, so that the
// stream's sequence of the new message is e.Seq. The ack is the stream's
// (on a quorum of the replicas; on a single NATS node, synced to disk).
//
// Appending the same event (same seq, same bytes) again from the same
// process succeeds without storing it twice.
//
// Errors: ErrFenced when another event holds seq or the stream is not at
// e.Seq-1 (nothing written);
// after a timeout the same publish (same message id, same expectation) is
// tried again for up to about a second, and if none answers the error
// wraps history.ErrMaybeWritten: the event may be in the stream, and its
// seq must not be given to another event. Any other error means nothing
// was written.
func (n *Node) Append(ctx context.Context, e event.Event) error {
	if e.Seq < 1 {
		return fmt.Errorf("cluster: append: event has seq %d; seqs start at 1", e.Seq)
	}
	e.V = event.LogVersion
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("cluster: append: %w", err)
	}
	id := n.msgID(e.Seq, b)
	ctx, cancel := context.WithTimeout(ctx, appendDeadline)
	defer cancel()
	maybe := false
	var last error
	for {
		ack, err := n.publishOnce(ctx, b, id, e.Seq)
		switch {
		case err == nil && ack.Sequence == uint64(e.Seq):
			return nil
		case err == nil:
			return fmt.Errorf("cluster: append seq %d: the stream stored it as %d", e.Seq, ack.Sequence)
		case isWrongLastSeq(err):
			if n.storedAs(e.Seq, id) {
				// This very event is already there: an earlier try got
				// through (a single node checks the expectation before the
				// duplicate window), or the caller appended it twice.
				return nil
			}
			return fmt.Errorf("append seq %d: %w", e.Seq, ErrFenced)
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || apiCode(err) == errCodeDupInProcess:
			maybe = true
		case errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse):
			// No stream leader right now: nothing was written.
		default:
			return fmt.Errorf("cluster: append seq %d: %w", e.Seq, err)
		}
		last = err
		if ctx.Err() != nil {
			break
		}
		wait(ctx, 50*time.Millisecond)
		if ctx.Err() != nil {
			break
		}
	}
	if maybe {
		return fmt.Errorf("cluster: append seq %d: %w: %w", e.Seq, history.ErrMaybeWritten, last)
	}
	return fmt.Errorf("cluster: append seq %d: the log stream has no leader: %w", e.Seq, last)
}

// publishOnce makes one publish attempt with its own short deadline.
func (n *Node) publishOnce(ctx context.Context, b []byte, id string, seq int64) (*jetstream.PubAck, error) {
	actx, cancel := context.WithTimeout(ctx, appendAttempt)
	defer cancel()
	return n.js.Publish(actx, LogSubject, b,
		jetstream.WithMsgID(id),
		jetstream.WithExpectStream(LogStream),
		jetstream.WithExpectLastSequence(uint64(seq-1)),
		jetstream.WithRetryAttempts(0))
}

// msgID names an append for the stream's duplicate window: the same event
// (seq and bytes) from the same process is stored once however often it
// is retried; another event with that seq — from another node, an earlier
// run of this one, or with other content — gets another id, so the
// expectation decides and it is fenced, never mistaken for a duplicate.
func (n *Node) msgID(seq int64, b []byte) string {
	h := fnv.New64a()
	_, _ = h.Write(b)
	return strconv.FormatInt(seq, 10) + "." + n.cfg.Node + "." + n.epoch + "." + strconv.FormatUint(h.Sum64(), 36)
}

// storedAs reports whether the stream holds the message with id at seq.
func (n *Node) storedAs(seq int64, id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), appendAttempt)
	defer cancel()
	m, err := n.stream.GetMsg(ctx, uint64(seq))
	return err == nil && m.Header.Get(jetstream.MsgIDHeader) == id
}

func isWrongLastSeq(err error) bool {
	c := apiCode(err)
	return c == errCodeWrongLastSeq || c == errCodeWrongLastSeqConst
}

// apiCode returns the JetStream error code in err, 0 if none.
func apiCode(err error) jetstream.ErrorCode {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return 0
	}
	return apiErr.ErrorCode
}

// wait waits d or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// LastSeq returns the log stream's last sequence: the seq of the last event
// appended, 0 when the log is empty. It asks the stream leader.
func (n *Node) LastSeq(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	info, err := n.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("cluster: log stream info: %w", err)
	}
	return int64(info.State.LastSeq), nil
}

// orderedConsumer makes the consumer Follow reads, retrying while the
// stream has no leader (consumers need one) until ctx ends.
func (n *Node) orderedConsumer(ctx context.Context, after int64) (jetstream.Consumer, error) {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if after > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = uint64(after + 1)
	}
	for {
		actx, cancel := context.WithTimeout(ctx, apiTimeout)
		cons, err := n.stream.OrderedConsumer(actx, cfg)
		cancel()
		if err == nil {
			return cons, nil
		}
		wait(ctx, 250*time.Millisecond)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cluster: follow the log from %d: %w", after+1, err)
		}
	}
}

func decodeMsg(m jetstream.Msg) (event.Event, error) {
	var e event.Event
	md, err := m.Metadata()
	if err != nil {
		return e, fmt.Errorf("cluster: log message metadata: %w", err)
	}
	if err := json.Unmarshal(m.Data(), &e); err != nil {
		return e, fmt.Errorf("cluster: log message %d: %w", md.Sequence.Stream, err)
	}
	if uint64(e.Seq) != md.Sequence.Stream {
		return e, fmt.Errorf("cluster: log message %d holds an event with seq %d", md.Sequence.Stream, e.Seq)
	}
	return e, nil
}

// Materialize copies the log stream into a node's local chat log: it
// follows the stream from after (the local log's last seq; see
// history.ReadTail) and appends each event, seq kept, with l.Append, until
// ctx ends (nil) or an append fails. Events with seq <= after are skipped,
// so the local log never holds a seq twice. A message the stream forgot
// (an erased event's, see Forget) comes as its tombstone (Event); a gap
// with no erasure recorded is an error (ErrHole).
func Materialize(ctx context.Context, n *Node, l *history.Log, after int64) error {
	last := after
	return n.Follow(ctx, after, func(e event.Event) error {
		if e.Seq <= last {
			return nil
		}
		if e.Seq != last+1 {
			return fmt.Errorf("cluster: materialise: seq %d follows %d", e.Seq, last)
		}
		if err := l.Append(e); err != nil {
			return fmt.Errorf("cluster: materialise seq %d: %w", e.Seq, err)
		}
		last = e.Seq
		return nil
	})
}
