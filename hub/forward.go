package hub

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/memory"
)

// ForwardedOps are the commands a follower forwards to the holder, which
// serves each (Serve).
var ForwardedOps = []string{opSubmit, opCancel, opReset, opDecide, opMemory, opErase, opAudit}

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
	Person      string             `json:"person,omitempty"`
	SignedIn    bool               `json:"signed_in,omitempty"`
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
	Actor    Actor  `json:"actor"`
}

type wireReset struct {
	Reason string `json:"reason"`
	Actor  Actor  `json:"actor"`
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
	"no_event": ErrNoEvent, "not_message": ErrNotMessage, "already_erased": ErrAlreadyErased,
}

func toWireErr(err error) *wireErr {
	var (
		in *InputError
		se *StorageError
		fe *ForbiddenError
	)
	switch {
	case errors.As(err, &in):
		return &wireErr{Kind: "input", Code: in.Code, Message: in.Message}
	case errors.As(err, &se):
		return &wireErr{Kind: "storage", Code: se.Code, Op: se.Op, Message: se.Err.Error()}
	case errors.As(err, &fe):
		return &wireErr{Kind: "forbidden", Code: fe.Permission, Op: fe.Person, Message: fe.Message}
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
	case "forbidden":
		return &ForbiddenError{Permission: w.Code, Person: w.Op, Message: w.Message}
	}
	if e, ok := wireErrs[w.Kind]; ok {
		if e.Error() == w.Message {
			return e
		}
		return fmt.Errorf("%w: %s", e, w.Message)
	}
	return errors.New(w.Message)
}

// forwardingDoors are who may ask the holder, through another node, to
// cancel, decide an approval or change memory: the web page, the HTTP API
// and the console. The agent, consolidation, timeouts and resets act on
// the holder itself.
var forwardingDoors = []string{event.ChannelWeb, CancelByAPI, event.ChannelConsole}

// errForwardedBy refuses a forwarded change that names someone no door
// that forwards would.
var errForwardedBy = &InputError{"bad_by", "a forwarded change must come from the web, the API or the console"}

// forwardedActor checks a forwarded change's actor: a door that forwards,
// and the Gate's word on this node too.
func forwardedActor(m *SessionManager, a Actor, perm string) error {
	if err := forwardedBy(a.Door); err != nil {
		return err
	}
	return m.allow(a, perm)
}

// forwardedBy checks who a forwarded change says it comes from (it is
// written to the log: a notice, an approval_result, a memory_changed).
func forwardedBy(by string) error {
	if !slices.Contains(forwardingDoors, by) {
		return errForwardedBy
	}
	return nil
}

// Serve runs a command another node forwarded (Cluster.Forward) and
// returns the answer to send back. A node that does not hold the lease
// answers ErrNoLeader. The error is only for a request that could not be
// read.
//
// What arrives is judged as the doors judge what they read (checkForwarded,
// clean, cleanMemoryText, forwardedBy): the cluster's connection is one
// more way in. Whatever happens, the answer says what was done: ctx ends
// when this node stops leading, but a command the hub took is answered by
// the hub (done, or ErrNoLeader if it had stopped leading first), and one
// that got no answer in time is ErrNoAnswer — never "context canceled".
func (m *SessionManager) Serve(ctx context.Context, op string, req []byte) ([]byte, error) {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), forwardWait)
	defer cancel()
	v, err := m.serve(hctx, op, req)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		err = ErrNoAnswer
	}
	var w wireAnswer
	if err != nil {
		w.Err = toWireErr(err)
	} else if w.Value, err = json.Marshal(v); err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// serve runs op on this node's hub, never forwarding it again.
func (m *SessionManager) serve(ctx context.Context, op string, req []byte) (any, error) {
	if !m.leading.Load() {
		return nil, ErrNoLeader
	}
	switch op {
	case opSubmit:
		return m.serveSubmit(ctx, req)
	case opCancel:
		var a Actor
		if err := json.Unmarshal(req, &a.Door); err != nil { // a node of an earlier version sends the door alone
			if err := json.Unmarshal(req, &a); err != nil {
				return nil, err
			}
		}
		if err := forwardedActor(m, a, event.PermCancel); err != nil {
			return nil, err
		}
		reply := make(chan bool, 1)
		return call(ctx, m, cancelCmd{by: a.Door, person: a.Person, reply: reply}, reply)
	case opReset:
		var w wireReset
		if err := json.Unmarshal(req, &w.Reason); err != nil { // a node of an earlier version sends the reason alone
			if err := json.Unmarshal(req, &w); err != nil {
				return nil, err
			}
		}
		if w.Reason != ResetManual {
			return nil, &InputError{"bad_reason", "a forwarded reset is a manual one"}
		}
		if err := m.allow(w.Actor, event.PermReset); err != nil {
			return nil, err
		}
		reply := make(chan resetReply, 1)
		r, err := call(ctx, m, resetCmd{reason: w.Reason, person: w.Actor.Person, reply: reply}, reply)
		if err == nil {
			err = r.err
		}
		return r.d, err
	case opDecide:
		var d wireDecide
		if err := json.Unmarshal(req, &d); err != nil {
			return nil, err
		}
		if d.Actor.Door == "" {
			d.Actor.Door = d.By // a node of an earlier version names no actor
		}
		if err := forwardedActor(m, d.Actor, event.PermApprove); err != nil {
			return nil, err
		}
		reply := make(chan decideReply, 1)
		r, err := call(ctx, m, decideCmd{id: d.ID, decision: d.Decision, actor: d.Actor, reply: reply}, reply)
		if err == nil {
			err = r.err
		}
		return r.d, err
	case opMemory:
		return m.serveMemory(ctx, req)
	case opErase:
		return m.serveErase(ctx, req)
	case opAudit: // audit.go
		return m.serveAudit(ctx, req)
	}
	return nil, fmt.Errorf("unknown forwarded command %q", op)
}

// serveSubmit takes an input another node forwarded: checked as if it came
// through a door here (checkForwarded, then Submit's checks), then handed
// to this hub.
func (m *SessionManager) serveSubmit(ctx context.Context, req []byte) (wireResult, error) {
	var in wireInput
	if err := json.Unmarshal(req, &in); err != nil {
		return wireResult{}, err
	}
	checked, err := checkForwarded(Input{Channel: in.Channel, From: in.From, Content: in.Content,
		ClientMsgID: in.ClientMsgID, Patient: in.Patient, Attachments: in.Attachments, ScheduleID: in.ScheduleID,
		Person: in.Person, SignedIn: in.SignedIn})
	if err == nil {
		checked, err = m.check(checked)
	}
	if err != nil {
		return wireResult{}, err
	}
	res, err := m.submitHere(ctx, checked)
	if err != nil {
		return wireResult{}, err
	}
	w := wireResult{Outcome: res.Outcome, Turn: res.Turn, Busy: res.Busy}
	if res.Echo != nil {
		w.Echo = &res.Echo.Event
	}
	return w, nil
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
		ClientMsgID: in.ClientMsgID, Patient: in.Patient, Attachments: in.Attachments, ScheduleID: in.ScheduleID,
		Person: in.Person, SignedIn: in.SignedIn}, &r)
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
