// Package testagent holds agent.Agent implementations that tests steer
// step by step. It is imported only by tests.
package testagent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

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

// CallTool calls the tool named Name with Args once and replies with its
// output, or "error: " and the error (a denied approval, say).
type CallTool struct {
	Name string
	Args string
}

var _ agent.Agent = CallTool{}

// Run implements agent.Agent.
func (c CallTool) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	for _, t := range req.Tools {
		if t.Name == c.Name {
			out, err := t.Call(ctx, json.RawMessage(c.Args))
			if ctx.Err() != nil {
				return agent.Reply{}, ctx.Err()
			}
			if err != nil {
				return agent.Reply{Content: "error: " + err.Error()}, nil
			}
			return agent.Reply{Content: out}, nil
		}
	}
	return agent.Reply{Content: "no tool " + c.Name}, nil
}

// Confirmed returns one tool, name, that needs approval and counts its
// runs: the hub's Config.Tools for approval tests.
func Confirmed(name string, runs *atomic.Int32) func() []agent.Tool {
	return func() []agent.Tool {
		return []agent.Tool{{Name: name, Server: "files", Confirm: true, Parameters: json.RawMessage(`{"type":"object"}`),
			Call: func(ctx context.Context, args json.RawMessage) (string, error) { runs.Add(1); return "done", nil }}}
	}
}

// Stream is the round-trip benchmarks' agent: it streams First as a delta
// at once, waits Pause, and replies First + Rest.
type Stream struct {
	First, Rest string
	Pause       time.Duration
}

var _ agent.Agent = Stream{}

// Run implements agent.Agent.
func (s Stream) Run(ctx context.Context, req agent.Request, emit agent.Emitter) (agent.Reply, error) {
	emit(event.Delta, event.TextData{Text: s.First})
	select {
	case <-time.After(s.Pause):
	case <-ctx.Done():
		return agent.Reply{}, ctx.Err()
	}
	return agent.Reply{Content: s.First + s.Rest}, nil
}
