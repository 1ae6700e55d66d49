// Package testagent holds agent.Agent implementations that tests steer
// step by step. It is imported only by tests.
package testagent

import (
	"context"
	"fmt"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
)

// Gate emits a status and one delta ("part "), then waits until Release
// or until its context is cancelled. Each cancelled turn's id is sent on
// Cancelled. With Ignore set it keeps running after cancel (a misbehaving
// backend): it waits for a further Release, emits "too late" and returns.
type Gate struct {
	Release   chan struct{}
	Cancelled chan string
	Ignore    bool
}

// NewGate returns a Gate with buffered channels.
func NewGate() *Gate {
	return &Gate{Release: make(chan struct{}, 16), Cancelled: make(chan string, 16)}
}

var _ agent.Agent = (*Gate)(nil)

// Run implements agent.Agent.
func (g *Gate) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	emit(event.Status, event.TextData{Text: "thinking"})
	emit(event.Delta, event.TextData{Text: "part "})
	select {
	case <-g.Release:
		return agent.Reply{Content: "reply to " + req.Content}, nil
	case <-ctx.Done():
		g.Cancelled <- req.Turn
		if g.Ignore {
			<-g.Release
			emit(event.Delta, event.TextData{Text: "too late"})
			return agent.Reply{Content: "too late"}, nil
		}
		return agent.Reply{}, ctx.Err()
	}
}

// Count streams N deltas of Text (default "<i> "), as fast as it can or,
// with Ack set, each after the previous one was acknowledged on Ack.
type Count struct {
	N    int
	Text string
	Ack  chan struct{}
}

var _ agent.Agent = (*Count)(nil)

// Run implements agent.Agent.
func (c *Count) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	for i := range c.N {
		text := c.Text
		if text == "" {
			text = fmt.Sprint(i, " ")
		}
		emit(event.Delta, event.TextData{Text: text})
		if c.Ack != nil {
			select {
			case <-c.Ack:
			case <-ctx.Done():
				return agent.Reply{}, ctx.Err()
			}
		}
	}
	return agent.Reply{Content: "done"}, ctx.Err()
}
