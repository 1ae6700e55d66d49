package clusterhub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/frontdesk-hq/frontdesk/cluster"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/ctxsleep"
	"github.com/frontdesk-hq/frontdesk/schedule"
)

// Forwarded schedule operations: frontdesk.rpc.schedule.<op>.
const (
	schedCreate = "schedule.create"
	schedList   = "schedule.list"
	schedCancel = "schedule.cancel"
)

// Schedules is the schedule API (/api/schedules, the console's
// /schedules) on a cluster node: the holder's scheduler answers; on any
// other node the call is forwarded to the holder, and its answer or
// refusal comes back as the same value or *schedule.Error. No holder:
// hub.ErrNoLeader (the doors' 503 no_leader).
type Schedules struct {
	Node *cluster.Node
	// Local is this node's scheduler; it answers while Leads says so.
	Local *schedule.Scheduler
	// Leads reports whether this node's scheduler runs (it holds the
	// lease and has taken over the schedules).
	Leads func() bool
}

// The wire: JSON both ways; a refusal by code and message.
type (
	wireSpec struct {
		schedule.Spec
		CreatedBy string `json:"created_by"`
		Person    string `json:"person,omitempty"`
	}
	wireID    struct{ ID string }
	schedWire struct {
		Value json.RawMessage `json:"value,omitempty"`
		Code  string          `json:"code,omitempty"`
		Error string          `json:"error,omitempty"`
	}
)

// Create makes a schedule on the holder.
func (s Schedules) Create(ctx context.Context, sp schedule.Spec) (schedule.Schedule, error) {
	if s.Leads() {
		return s.Local.Create(ctx, sp)
	}
	var sc schedule.Schedule
	return sc, s.forward(ctx, schedCreate, wireSpec{sp, sp.CreatedBy, sp.Person}, &sc)
}

// List returns the holder's schedules.
func (s Schedules) List(ctx context.Context) ([]schedule.Schedule, error) {
	if s.Leads() {
		return s.Local.List(ctx)
	}
	var list []schedule.Schedule
	return list, s.forward(ctx, schedList, struct{}{}, &list)
}

// Cancel cancels a schedule on the holder.
func (s Schedules) Cancel(ctx context.Context, id string) (schedule.Schedule, error) {
	if s.Leads() {
		return s.Local.Cancel(ctx, id)
	}
	var sc schedule.Schedule
	return sc, s.forward(ctx, schedCancel, wireID{id}, &sc)
}

// Damage is what this node found wrong with its schedules.json at start.
func (s Schedules) Damage() *schedule.Damage { return s.Local.Damage() }

func (s Schedules) forward(ctx context.Context, op string, req, out any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	resp, err := s.Node.Request(ctx, op, b)
	switch {
	case errors.Is(err, cluster.ErrNoLeader):
		return hub.ErrNoLeader
	case errors.Is(err, cluster.ErrNoAnswer):
		return hub.ErrNoAnswer
	case err != nil:
		return err
	}
	var w schedWire
	if err := json.Unmarshal(resp, &w); err != nil {
		return fmt.Errorf("the holder's answer to %s: %w", op, err)
	}
	switch {
	case w.Code == codeNoLeader:
		return hub.ErrNoLeader
	case w.Code == codeNoAnswer:
		return hub.ErrNoAnswer
	case w.Code != "":
		return &schedule.Error{Code: w.Code, Message: w.Error}
	case w.Error != "":
		return errors.New(w.Error)
	}
	return json.Unmarshal(w.Value, out)
}

// Codes of a forwarded schedule operation's answer that are the hub's
// errors on the other side.
const (
	codeNoLeader = "no_leader" // not done: the holder's scheduler had stopped
	codeNoAnswer = "no_answer" // the scheduler took it and did not answer in time
)

// errCreatedBy refuses a forwarded schedule that says it was made by
// anyone but the API: the agent's schedule tools and the console run on
// the holder, next to its scheduler.
var errCreatedBy = &schedule.Error{Code: "bad_created_by", Message: "a forwarded schedule is made through the API (created_by: api)"}

// ServeSchedules answers the forwarded schedule operations with local
// while this node holds the lease, until ctx ends. What arrives is judged
// as the API's door judges what it reads: the scheduler checks the spec
// (content, times, zone, notify) as for its own callers, and created_by
// must be the API's. Each gets the answer of what was done, even when
// this node stops leading meanwhile (ctx ends): the scheduler's, else
// no_leader when it had stopped before taking the request, no_answer
// when it took it and did not answer in time.
func ServeSchedules(ctx context.Context, n *cluster.Node, local *schedule.Scheduler, logger *slog.Logger) {
	ops := map[string]func(context.Context, []byte) (any, error){
		schedCreate: func(ctx context.Context, b []byte) (any, error) {
			var w wireSpec
			if err := json.Unmarshal(b, &w); err != nil {
				return nil, err
			}
			if w.CreatedBy != schedule.CreatedByAPI {
				return nil, errCreatedBy
			}
			w.Spec.CreatedBy, w.Spec.Person = w.CreatedBy, w.Person
			return local.Create(ctx, w.Spec)
		},
		schedList: func(ctx context.Context, _ []byte) (any, error) { return local.List(ctx) },
		schedCancel: func(ctx context.Context, b []byte) (any, error) {
			var w wireID
			if err := json.Unmarshal(b, &w); err != nil {
				return nil, err
			}
			return local.Cancel(ctx, w.ID)
		},
	}
	for op, fn := range ops {
		go func() {
			err := n.Serve(ctx, op, func(ctx context.Context, req []byte) ([]byte, error) {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stateWait)
				defer cancel()
				v, err := fn(ctx, req)
				return answerSchedules(v, err)
			})
			if err != nil {
				logger.Error("serve forwarded schedule changes", "op", op, "err", err)
			}
		}()
	}
}

func answerSchedules(v any, err error) ([]byte, error) {
	var w schedWire
	var se *schedule.Error
	switch {
	case errors.Is(err, schedule.ErrStopped):
		w.Code, w.Error = codeNoLeader, hub.ErrNoLeader.Error()
	case errors.Is(err, context.DeadlineExceeded):
		w.Code, w.Error = codeNoAnswer, hub.ErrNoAnswer.Error()
	case errors.As(err, &se):
		w.Code, w.Error = se.Code, se.Message
	case err != nil:
		w.Error = err.Error()
	default:
		b, merr := json.Marshal(v)
		if merr != nil {
			return nil, merr
		}
		w.Value = b
	}
	return json.Marshal(w)
}

// WatchSchedules tells this node's open Scheduled panels when the
// holder's schedules change, until ctx ends: the holder's own scheduler
// tells its clients (schedule.Options.Changed); every other node hears it
// as a put of the replica in the state bucket. leading says whether this
// node holds the lease (its scheduler then tells its clients itself).
func WatchSchedules(ctx context.Context, n *cluster.Node, leading func() bool, changed func(), logger *slog.Logger) {
	for {
		err := n.WatchState(ctx, KeySchedules, func() {
			if !leading() {
				changed()
			}
		})
		if ctx.Err() != nil {
			return
		}
		logger.Warn("cluster: cannot watch the schedules for changes; trying again", "err", err, "retry_in", time.Second)
		if !ctxsleep.Sleep(ctx, time.Second) {
			return
		}
	}
}
