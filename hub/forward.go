package hub

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// ForwardedOps are the commands a follower forwards to the holder, which
// serves each (Serve).
var ForwardedOps = []string{opSubmit, opCancel, opReset, opDecide, opMemory}

// The forwarded commands' wire: JSON both ways, errors by kind so that the
// door on the follower answers exactly as the holder's own would.

type wireInput struct {
	Channel     string             `json:"channel"`
	From        string             `json:"from,omitempty"`
	Content     string             `json:"content"`
	ClientMsgID string             `json:"client_msg_id,omitempty"`
	Patient     bool               `json:"patient,omitempty"`
	Attachments []event.Attachment `json:"attachments,omitempty"`
	ScheduleID  string             `json:"schedule_id,omitempty"`
}

type wireResult struct {
	Outcome Outcome        `json:"outcome"`
	Turn    string         `json:"turn"`
	Echo    *event.Event   `json:"echo,omitempty"`
	Busy    event.BusyData `json:"busy"`
}

type wireDecide struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
	By       string `json:"by"`
}

type wireAnswer struct {
	Value json.RawMessage `json:"value,omitempty"`
	Err   *wireErr        `json:"err,omitempty"`
}

// wireErr carries the errors a door tells apart.
type wireErr struct {
	Kind    string `json:"kind"`
	Code    string `json:"code,omitempty"`
	Op      string `json:"op,omitempty"`
	Message string `json:"message"`
}

// Kinds of forwarded errors; each is the same error on the other side.
var wireErrs = map[string]error{
	"closed": ErrClosed, "queue_full": ErrQueueFull, "no_leader": ErrNoLeader, "no_answer": ErrNoAnswer,
	"decided": ErrDecided, "no_approval": ErrNoApproval, "bad_decision": ErrBadDecision,
	"memory_not_found": memory.ErrNotFound, "no_memory": ErrNoMemory,
}

func toWireErr(err error) *wireErr {
	var (
		in *InputError
		se *StorageError
	)
	switch {
	case errors.As(err, &in):
		return &wireErr{Kind: "input", Code: in.Code, Message: in.Message}
	case errors.As(err, &se):
		return &wireErr{Kind: "storage", Code: se.Code, Op: se.Op, Message: se.Err.Error()}
	}
	for kind, e := range wireErrs {
		if errors.Is(err, e) {
			return &wireErr{Kind: kind, Message: err.Error()}
		}
	}
	return &wireErr{Kind: "other", Message: err.Error()}
}

func (w *wireErr) err() error {
	switch w.Kind {
	case "input":
		return &InputError{Code: w.Code, Message: w.Message}
	case "storage":
		return &StorageError{Code: w.Code, Op: w.Op, Err: errors.New(w.Message)}
	}
	if e, ok := wireErrs[w.Kind]; ok {
		if e.Error() == w.Message {
			return e
		}
		return fmt.Errorf("%w: %s", e, w.Message)
	}
	return errors.New(w.Message)
}

// Serve runs a command another node forwarded (Cluster.Forward) and
// returns the answer to send back. A node that does not hold the lease
// answers ErrNoLeader. The error is only for a request that could not be
// read.
func (m *SessionManager) Serve(ctx context.Context, op string, req []byte) ([]byte, error) {
	v, err := m.serve(ctx, op, req)
	var w wireAnswer
	if err != nil {
		w.Err = toWireErr(err)
	} else if w.Value, err = json.Marshal(v); err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

func (m *SessionManager) serve(ctx context.Context, op string, req []byte) (any, error) {
	if !m.leading.Load() {
		return nil, ErrNoLeader
	}
	switch op {
	case opSubmit:
		var in wireInput
		if err := json.Unmarshal(req, &in); err != nil {
			return nil, err
		}
		res, err := m.Submit(ctx, Input{Channel: in.Channel, From: in.From, Content: in.Content,
			ClientMsgID: in.ClientMsgID, Patient: in.Patient, Attachments: in.Attachments, ScheduleID: in.ScheduleID})
		if err != nil {
			return nil, err
		}
		w := wireResult{Outcome: res.Outcome, Turn: res.Turn, Busy: res.Busy}
		if res.Echo != nil {
			w.Echo = &res.Echo.Event
		}
		return w, nil
	case opCancel:
		var by string
		if err := json.Unmarshal(req, &by); err != nil {
			return nil, err
		}
		return m.CancelBy(ctx, by)
	case opReset:
		var reason string
		if err := json.Unmarshal(req, &reason); err != nil {
			return nil, err
		}
		return m.Reset(ctx, reason)
	case opDecide:
		var d wireDecide
		if err := json.Unmarshal(req, &d); err != nil {
			return nil, err
		}
		return m.Decide(ctx, d.ID, d.Decision, d.By)
	case opMemory:
		return m.serveMemory(ctx, req)
	}
	return nil, fmt.Errorf("unknown forwarded command %q", op)
}

// forwardSubmit sends an input to the holder; the outcome of its turn,
// if the door waits for one, comes from the log.
//
// An input forwarded without a client_msg_id is given one here, so that a
// send again after a failover (forward) can never run it twice.
func (m *SessionManager) forwardSubmit(ctx context.Context, in Input) (Result, error) {
	if in.ClientMsgID == "" {
		in.ClientMsgID = "fwd-" + rand.Text()
	}
	var r wireResult
	err := m.forward(ctx, opSubmit, wireInput{Channel: in.Channel, From: in.From, Content: in.Content,
		ClientMsgID: in.ClientMsgID, Patient: in.Patient, Attachments: in.Attachments, ScheduleID: in.ScheduleID}, &r)
	if err != nil {
		return Result{}, err
	}
	res := Result{Outcome: r.Outcome, Turn: r.Turn, Busy: r.Busy}
	if r.Echo != nil {
		res.Echo = newFrame(*r.Echo)
	}
	if in.Done != nil && res.Outcome != Rejected {
		select {
		case m.cmds <- awaitCmd{turn: res.Turn, done: in.Done}:
		case <-m.done:
		}
	}
	return res, nil
}
