package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// Headers of forwarded replies and live frames.
const (
	errHeader  = "Frontdesk-Error"
	nodeHeader = "Frontdesk-Node"
)

// requestTimeout bounds a Request whose ctx has no deadline.
const requestTimeout = 5 * time.Second

// RemoteError is an error the holder's handler returned for a forwarded
// request; Request returns it as is.
type RemoteError struct{ Msg string }

func (e *RemoteError) Error() string { return e.Msg }

// Serve answers requests on frontdesk.rpc.<name> with h while this node
// holds the lease, until ctx ends. It subscribes when the node becomes
// Leader and unsubscribes the moment it stops being one, so requests go
// to the holder alone (a request that arrives in between finds no
// responder, and the requester gets ErrNoLeader). h runs on the
// subscription's goroutine, one request at a time in arrival order, with
// a ctx that ends with Serve's; a long job should be started and answered
// at once. An error from h reaches the requester as a *RemoteError.
// Serve needs Campaign running to ever serve.
func (n *Node) Serve(ctx context.Context, name string, h func(context.Context, []byte) ([]byte, error)) error {
	var sub *nats.Subscription
	defer func() {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
	}()
	for {
		role, changed := n.Role()
		switch {
		case role == Leader && sub == nil:
			s, err := n.nc.Subscribe(RPCPrefix+name, func(m *nats.Msg) { n.answer(ctx, m, h) })
			if err != nil {
				return fmt.Errorf("cluster: serve %s: %w", name, err)
			}
			sub = s
		case role != Leader && sub != nil:
			_ = sub.Unsubscribe()
			sub = nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

func (n *Node) answer(ctx context.Context, m *nats.Msg, h func(context.Context, []byte) ([]byte, error)) {
	if role, _ := n.Role(); role != Leader {
		return // lost the lease a moment ago: let the requester time out
	}
	out, err := h(ctx, m.Data)
	reply := nats.NewMsg(m.Reply)
	if err != nil {
		reply.Header.Set(errHeader, err.Error())
	} else {
		reply.Data = out
	}
	if err := m.RespondMsg(reply); err != nil {
		n.log.Warn("cluster: answer a forwarded request", "subject", m.Subject, "err", err)
	}
}

// Request sends data to the lease holder's Serve handler for name and
// returns its answer. It returns an error wrapping ErrNoLeader when nobody
// serves name (no holder, or one that just lost the lease: nothing was
// done), ErrNoAnswer when nobody answered before ctx ended (5 s when ctx
// has no deadline: the holder may have done it and died), and a
// *RemoteError when the handler failed.
func (n *Node) Request(ctx context.Context, name string, data []byte) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, requestTimeout)
		defer cancel()
	}
	m, err := n.nc.RequestWithContext(ctx, RPCPrefix+name, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("cluster: forward %s: %w", name, ErrNoLeader)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		// The holder may have done it and died before answering.
		return nil, fmt.Errorf("cluster: forward %s: %w", name, ErrNoAnswer)
	case err != nil:
		return nil, fmt.Errorf("cluster: forward %s: %w", name, err)
	}
	if msg := m.Header.Get(errHeader); msg != "" {
		return nil, &RemoteError{Msg: msg}
	}
	return m.Data, nil
}

// PublishLive sends a live frame (a delta, a status: what is not in the
// log) to the other nodes on core NATS, at most once and without waiting.
func (n *Node) PublishLive(data []byte) error {
	m := nats.NewMsg(LiveSubject)
	m.Header.Set(nodeHeader, n.cfg.Node)
	m.Data = data
	if err := n.nc.PublishMsg(m); err != nil {
		return fmt.Errorf("cluster: publish live frame: %w", err)
	}
	return nil
}

// SubscribeLive calls fn with each live frame another node publishes, in
// the order that node published them, until ctx ends; this node's own
// frames are skipped. fn runs on the subscription's goroutine and must not
// block. The subscription is in place when SubscribeLive returns.
func (n *Node) SubscribeLive(ctx context.Context, fn func([]byte)) error {
	sub, err := n.nc.Subscribe(LiveSubject, func(m *nats.Msg) {
		if m.Header.Get(nodeHeader) == n.cfg.Node {
			return
		}
		fn(m.Data)
	})
	if err != nil {
		return fmt.Errorf("cluster: subscribe to live frames: %w", err)
	}
	if err := n.nc.FlushTimeout(apiTimeout); err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("cluster: subscribe to live frames: %w", err)
	}
	context.AfterFunc(ctx, func() { _ = sub.Unsubscribe() })
	return nil
}
