package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Follow's fallback: when the ordered consumer has given nothing for
// stallAfter while the log has more, the events are read one by one,
// straight from the stream (GetMsg), until the consumer is back.
const (
	stallAfter = time.Second
	pollEvery  = 250 * time.Millisecond
)

// Follow calls fn with every event of the log after seq after, in order,
// and then with each new one as it is appended, until ctx ends (it returns
// nil then) or fn returns an error (returned as is). fn runs on Follow's
// goroutine, one event at a time, each seq once.
//
// It reads through an ordered consumer (500 ms heartbeat): fast, in bulk.
// A consumer lives on one server; when that server dies, making a new one
// needs the meta leader, and if that died too the consumer is silent for
// JetStream's election and its own backoff (seen: more than 30 s). So
// Follow also listens to the log's subject (a wake-up, never trusted as
// the log: a fenced publish reaches it too) and, when the consumer has
// been silent for a second while the log has more, reads what is missing
// straight from the stream by seq — which needs no consumer and no meta
// leader — until the consumer catches up again.
func (n *Node) Follow(ctx context.Context, after int64, fn func(event.Event) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := &follower{n: n, last: after, fn: fn, progress: time.Now()}
	wake := make(chan struct{}, 1)
	sub, err := n.nc.Subscribe(LogSubject, func(*nats.Msg) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return fmt.Errorf("cluster: follow the log: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	msgs := make(chan jetstream.Msg)
	go n.consumeOn(ctx, after, msgs)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case m := <-msgs:
			err = f.fromConsumer(m)
		case <-wake:
			err = f.poll(ctx)
		case <-tick.C:
			err = f.poll(ctx)
		}
		if err != nil {
			return err
		}
	}
}

// follower is Follow's state, on its goroutine only.
type follower struct {
	n        *Node
	last     int64 // the last seq given to fn
	fn       func(event.Event) error
	progress time.Time // when the consumer last gave an event
}

func (f *follower) give(e event.Event) error {
	if err := f.fn(e); err != nil {
		return err
	}
	f.last = e.Seq
	return nil
}

// fromConsumer takes the consumer's next message: old ones (read directly
// meanwhile) are skipped, one ahead fills the gap directly first.
func (f *follower) fromConsumer(m jetstream.Msg) error {
	e, err := decodeMsg(m)
	if err != nil {
		return err
	}
	f.progress = time.Now()
	if e.Seq <= f.last {
		return nil
	}
	for f.last+1 < e.Seq {
		ge, err := f.n.Interior(context.Background(), f.last+1)
		if err != nil {
			return err
		}
		if err := f.give(ge); err != nil {
			return err
		}
	}
	return f.give(e)
}

// poll reads what the log has after last straight from the stream, if
// the consumer has been silent for stallAfter.
func (f *follower) poll(ctx context.Context) error {
	if time.Since(f.progress) < stallAfter {
		return nil
	}
	for ctx.Err() == nil {
		gctx, cancel := context.WithTimeout(ctx, apiTimeout)
		e, err := f.n.Event(gctx, f.last+1)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			// Past the end, or a forgotten message: it is the latter
			// when the log holds the seq after it.
			if _, nerr := f.n.Event(gctx, f.last+2); nerr == nil {
				e, err = f.n.Interior(gctx, f.last+1)
			}
		}
		cancel()
		if errors.Is(err, ErrHole) {
			return err // never skipped, never waited on
		}
		if err != nil {
			return nil // nothing more yet, or the stream cannot answer now: later
		}
		if err := f.give(e); err != nil {
			return err
		}
	}
	return nil
}

// consumeOn runs consume until ctx ends, starting it again a second after
// it fails (meanwhile Follow reads directly); it starts after the last seq
// it passed on.
func (n *Node) consumeOn(ctx context.Context, after int64, msgs chan<- jetstream.Msg) {
	for ctx.Err() == nil {
		err := n.consume(ctx, &after, msgs)
		if err == nil || ctx.Err() != nil {
			return
		}
		n.log.Warn("cluster: the log's consumer failed; reading directly until it is back", "err", err)
		wait(ctx, time.Second)
	}
}

// consume passes the ordered consumer's messages to msgs until ctx ends;
// *after follows the last one passed on.
func (n *Node) consume(ctx context.Context, after *int64, msgs chan<- jetstream.Msg) error {
	cons, err := n.orderedConsumer(ctx, *after)
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullHeartbeat(500*time.Millisecond),
		jetstream.PullExpiry(5*time.Second))
	if err != nil {
		return fmt.Errorf("cluster: follow the log: %w", err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, jetstream.ErrNoHeartbeat) {
				continue // the ordered consumer re-creates itself
			}
			return fmt.Errorf("cluster: follow the log: %w", err)
		}
		if md, err := m.Metadata(); err == nil {
			*after = int64(md.Sequence.Stream)
		}
		select {
		case msgs <- m:
		case <-ctx.Done():
			return nil
		}
	}
}
