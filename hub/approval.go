package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
)

// Approvals. A tool marked Confirm pauses its turn: the hub broadcasts an
// approval_request, any door may answer (Decide), the first answer wins
// and is broadcast as approval_result; no answer within ApprovalTimeout,
// a cancel, the turn's end or shutdown deny it. Both events go to the chat
// log; after a crash a request without a result is denied ("restart") as
// its turn is marked interrupted.

// Who decided, for a call no person answered.
const (
	ByTimeout  = "timeout"
	ByCancel   = "cancel"
	ByShutdown = "shutdown"
	ByRestart  = "restart"
	// ByStorage: the chat log refused the request or its answer, so the
	// call does not run (the turn ends with the storage error).
	ByStorage = "storage"
)

// ErrNoApproval means no approval with that id is waiting or was
// recently decided: the id is unknown (or was answered before a restart).
var ErrNoApproval = errors.New("no tool call is waiting for that approval (unknown id)")

// ErrDecided means the approval was already decided — answered, timed
// out, or denied by a cancel — and the first answer stands. The returned
// error wraps it with who decided what.
var ErrDecided = errors.New("that approval was already decided")

// maxDecided bounds the ids remembered as decided (for ErrDecided).
const maxDecided = 256

// ErrBadDecision rejects a decision other than approve or deny.
var ErrBadDecision = errors.New(`the decision must be "approve" or "deny"`)

// DefaultApprovalTimeout is how long a call waits for an answer.
const DefaultApprovalTimeout = 300 * time.Second

type approval struct {
	id, turn string
	person   string                        // whose turn asked (turn.person)
	reply    chan event.ApprovalResultData // buffered: the hub never waits on it
	timer    *time.Timer
}

type (
	approvalCmd struct {
		turn         string
		server, tool string
		args         json.RawMessage
		text         string // what the call would do, in words (see ApprovalRequestData.Text)
		reply        chan event.ApprovalResultData
	}
	decideCmd struct {
		id, decision string
		actor        Actor
		reply        chan decideReply
	}
	decideReply struct {
		d   event.ApprovalResultData
		err error
	}
	approvalTimeoutCmd struct{ id string }
)

// ask publishes the request and waits for its answer. It runs on the hub's
// goroutine; the answer arrives on c.reply later.
func (m *SessionManager) ask(ctx context.Context, c approvalCmd) {
	if m.turn == nil || m.turn.id != c.turn {
		c.reply <- event.ApprovalResultData{Decision: event.Deny, By: ByCancel}
		return
	}
	id := "a" + strconv.FormatInt(m.seq+1, 10)
	args := c.args
	if len(args) == 0 || !json.Valid(args) {
		args, _ = json.Marshal(string(c.args))
	}
	err := m.publish(event.New(event.ApprovalRequest, c.turn, time.Time{}, limitData(event.ApprovalRequestData{ID: id, Server: c.server, Tool: c.tool, Args: args, Text: c.text})))
	if err != nil {
		// Nobody was asked: the call does not run, and the turn ends.
		c.reply <- event.ApprovalResultData{Decision: event.Deny, By: ByStorage}
		m.failTurn(ctx, storageErr("record approval_request", err))
		return
	}
	a := &approval{id: id, turn: c.turn, person: m.turn.person, reply: c.reply}
	a.timer = time.AfterFunc(m.cfg.ApprovalTimeout, func() {
		select {
		case m.cmds <- approvalTimeoutCmd{id}:
		case <-m.done:
		}
	})
	m.approvals[id] = a
}

// decide answers the approval id for a; "" means the only one waiting.
// With Config.ApprovalsNotSelf the person whose turn asked may not
// approve it (they may deny it).
func (m *SessionManager) decide(id, decision string, actor Actor) (event.ApprovalResultData, error) {
	if decision != event.Approve && decision != event.Deny {
		return event.ApprovalResultData{}, ErrBadDecision
	}
	if id == "" && len(m.approvals) == 1 {
		for only := range m.approvals {
			id = only
		}
	}
	a, ok := m.approvals[id]
	if !ok {
		if id == "" && len(m.approvals) > 1 {
			return event.ApprovalResultData{}, errors.New("several tool calls wait for approval: name one by its id")
		}
		for _, d := range m.decided {
			if d.ID == id {
				return d, fmt.Errorf("%w (%s by %s)", ErrDecided, d.Decision, d.By)
			}
		}
		return event.ApprovalResultData{}, ErrNoApproval
	}
	// Saying no to one's own request is always allowed.
	if m.cfg.ApprovalsNotSelf && decision == event.Approve && a.person != "" && a.person == actor.Person {
		name := actor.Person
		if m.cfg.Gate != nil && m.cfg.Gate.Name(name) != "" {
			name = m.cfg.Gate.Name(name)
		}
		return event.ApprovalResultData{}, &ForbiddenError{Person: actor.Person, Permission: event.PermApprove,
			Message: fmt.Sprintf("%s asked for this call and may not approve it (mcp.approvals.not_self): someone else must answer", name)}
	}
	return m.resolve(a, decision, actor.Door, actor.Person), nil
}

// resolve publishes the result and hands it to the waiting tool call.
func (m *SessionManager) resolve(a *approval, decision, by, person string) event.ApprovalResultData {
	a.timer.Stop()
	delete(m.approvals, a.id)
	d := event.ApprovalResultData{ID: a.id, Decision: decision, By: by, Person: person}
	if err := m.publish(event.New(event.ApprovalResult, a.turn, time.Time{}, d)); err != nil {
		// An answer the log cannot keep is not acted on: the call is
		// denied, and the turn's fault ends it (see markFault).
		m.markFault(a.turn, storageErr("record approval_result", err))
		m.rememberDecided(event.ApprovalResultData{ID: a.id, Decision: event.Deny, By: ByStorage})
		a.reply <- event.ApprovalResultData{ID: a.id, Decision: event.Deny, By: ByStorage}
		return d
	}
	m.rememberDecided(d)
	a.reply <- d
	return d
}

// rememberDecided keeps d, what an approval came to, for ErrDecided: the last
// maxDecided of them.
func (m *SessionManager) rememberDecided(d event.ApprovalResultData) {
	if len(m.decided) == maxDecided {
		m.decided = m.decided[1:]
	}
	m.decided = append(m.decided, d)
}

// denyWaiting denies every approval of turn (its turn is ending).
func (m *SessionManager) denyWaiting(turn, by string) {
	for _, a := range m.approvals {
		if a.turn == turn {
			m.resolve(a, event.Deny, by, "")
		}
	}
}

// Decide answers a waiting approval: decision is event.Approve or
// event.Deny, by names the door. id "" answers the only one waiting.
// ErrNoApproval if none is waiting with that id, an error wrapping
// ErrDecided (with the standing result) if it was already decided.
func (m *SessionManager) Decide(ctx context.Context, id, decision string, a Actor) (event.ApprovalResultData, error) {
	if err := m.allow(a, event.PermApprove); err != nil {
		return event.ApprovalResultData{}, err
	}
	if m.following() {
		var d event.ApprovalResultData
		err := m.forward(ctx, opDecide, wireDecide{ID: id, Decision: decision, By: a.Door, Actor: a}, &d)
		return d, err
	}
	reply := make(chan decideReply, 1)
	r, err := call(ctx, m, decideCmd{id: id, decision: decision, actor: a, reply: reply}, reply)
	if err != nil {
		return event.ApprovalResultData{}, err
	}
	return r.d, r.err
}

// confirmed wraps t so that each call first asks for approval on the turn
// turn; a denied call is not run and the model is told who said no.
func (m *SessionManager) confirmed(turn string, t agent.Tool) agent.Tool {
	return m.confirmedSaying(turn, t, nil)
}

// confirmedSaying is confirmed with say, if not nil, telling the person
// who decides what a call with args would do (the request's text).
func (m *SessionManager) confirmedSaying(turn string, t agent.Tool, say func(json.RawMessage) string) agent.Tool {
	run := t.Call
	t.Call = func(ctx context.Context, args json.RawMessage) (string, error) {
		reply := make(chan event.ApprovalResultData, 1)
		c := approvalCmd{turn: turn, server: t.Server, tool: t.Name, args: args, reply: reply}
		if say != nil {
			c.text = say(args)
		}
		select {
		case m.cmds <- c:
		case <-ctx.Done():
			return "", ctx.Err()
		case <-m.done:
			return "", ErrClosed
		}
		var d event.ApprovalResultData
		select {
		case d = <-reply:
		case <-ctx.Done():
			return "", ctx.Err() // the turn was cancelled: the hub denies it
		}
		switch {
		case d.Decision == event.Approve:
			return run(ctx, args)
		case d.By == ByTimeout:
			return "", fmt.Errorf("nobody approved this call of %s within %s, so it was not run", t.Name, m.cfg.ApprovalTimeout)
		default:
			return "", fmt.Errorf("the user denied this call of %s (answered from %s); it was not run — do not retry it unless asked", t.Name, d.By)
		}
	}
	return t
}
