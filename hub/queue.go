package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/event"
)

// Record now, run later. An input that cannot start at once (a patient
// one — email, schedules — behind a running turn, or one queued under
// busy_policy queue) is logged and echoed on arrival as a user event with
// queued:true, its seq and turn id assigned then. When it starts, a
// turn_start event says so; a queued input replaced by a newer one gets a
// notice and a turn_end with status "replaced" and never runs. So the log
// alone tells, after a crash, what still waits: a queued user event with
// neither a turn_start nor a turn_end for its turn.

// StatusStillQueued is a waiting input's outcome when the server stops
// before it ran: it stays queued in the chat log and runs after the
// restart (a resend with its client_msg_id then awaits it).
const StatusStillQueued = "queued"

// queued is an input recorded on arrival that waits to run.
type queued struct {
	in   Input
	echo *Frame // its user event (queued:true)
}

func (q *queued) turn() string { return q.echo.Event.Turn }

// result is Submit's answer for a queued input; busy is the running turn.
func (q *queued) result(busy string) Result {
	return Result{Outcome: Queued, Turn: q.turn(), Echo: q.echo, Busy: queuedBusy(busy, q.in.ClientMsgID)}
}

// enqueue records in as queued (on disk before anyone sees it) and
// registers its Done for the turn's outcome.
func (m *SessionManager) enqueue(in Input) (*queued, error) {
	f, err := m.record(in, true)
	if err != nil {
		return nil, err
	}
	q := &queued{in: in, echo: f}
	if in.Done != nil {
		m.waiters[q.turn()] = append(m.waiters[q.turn()], in.Done)
	}
	return q, nil
}

// waitingCount is how many inputs wait to run.
func (m *SessionManager) waitingCount() int {
	n := len(m.patient)
	if m.pending != nil {
		n++
	}
	return n
}

func (m *SessionManager) gaugeWaiting() {
	m.metrics.waiting.Set(float64(m.waitingCount()))
}

// isWaiting reports whether turn is a queued input that has not started.
func (m *SessionManager) isWaiting(turn string) bool {
	if m.pending != nil && m.pending.turn() == turn {
		return true
	}
	return slices.ContainsFunc(m.patient, func(q *queued) bool { return q.turn() == turn })
}

// replacedText is the notice and turn_end error of a replaced input.
const replacedText = "Replaced by a newer message before it ran; it was not sent to the assistant."

// replace closes old, the input waiting under busy_policy queue, because a
// newer one takes its place: everyone sees a notice and a turn_end with
// status replaced (so it never runs, also not after a restart); its
// submitter is told as before.
func (m *SessionManager) replace(old *queued) {
	if old.in.Notify != nil {
		busy := ""
		if m.turn != nil {
			busy = m.turn.id
		}
		old.in.Notify(event.New(event.Busy, "", m.now(), event.BusyData{
			Turn:        busy,
			Message:     "A newer message replaced yours in the queue; yours was not sent.",
			ClientMsgID: old.in.ClientMsgID,
		}))
	}
	id := old.turn()
	m.publish(event.New(event.Notice, id, time.Time{}, event.TextData{Text: replacedText}))
	m.publish(event.New(event.TurnEnd, id, time.Time{}, event.TurnEndData{Status: StatusReplaced, Error: replacedText}))
	bump(&m.counters.Turns, StatusReplaced)
	m.settle(TurnOutcome{Turn: id, Status: StatusReplaced, Error: "replaced by a newer message before it ran"})
}

// startPending starts the next waiting input: patient ones first, in
// arrival order, then the one queued under busy_policy queue.
func (m *SessionManager) startPending(ctx context.Context) {
	var next *queued
	switch {
	case m.turn != nil:
		return
	case len(m.patient) > 0:
		next = m.patient[0]
		m.patient = m.patient[1:]
	case m.pending != nil:
		next = m.pending
		m.pending = nil
	default:
		return
	}
	m.gaugeWaiting()
	if err := m.startQueued(ctx, next); err != nil {
		m.notStarted(next, err)
		m.startPending(ctx) // the next one may fare better; each tries once
	}
}

// startQueued logs and broadcasts next's turn_start, then runs it. The
// turn_start is on disk before the agent sees the input, so a crash
// afterwards finds the turn started (and marks it interrupted) rather than
// running it a second time.
func (m *SessionManager) startQueued(ctx context.Context, next *queued) error {
	u := next.echo.Event
	now := m.now()
	e := event.New(event.TurnStart, u.Turn, now, event.TurnStartData{
		InputSeq: u.Seq, WaitedMS: max(0, now.Sub(u.TS.Std()).Milliseconds()),
	})
	e, err := m.commit(e)
	if err != nil {
		return storageErr("start queued input", err)
	}
	m.deliver(e) // the ring takes the queued input in now
	m.run(ctx, next.in, u)
	return nil
}

// notStarted tells next's submitter it did not run because its turn_start
// could not be written, and tries to close its turn in the log. If that
// fails too (the disk is still failing), the input stays queued on disk
// and runs after a restart.
func (m *SessionManager) notStarted(next *queued, err error) {
	var se *StorageError
	code, msg := "internal", err.Error()
	if errors.As(err, &se) {
		code, msg = se.Code, se.Message() // stored has logged it
	}
	if next.in.Notify != nil {
		next.in.Notify(event.New(event.Error, "", m.now(), event.ErrorData{Code: code, Message: msg, ClientMsgID: next.in.ClientMsgID}))
	}
	m.publish(event.New(event.TurnEnd, next.turn(), time.Time{}, event.TurnEndData{
		Status: event.StatusError, Error: "not run: " + msg,
	}))
	bump(&m.counters.Turns, StatusNotRecorded)
	m.settle(TurnOutcome{Turn: next.turn(), Status: StatusNotRecorded, Error: msg, Err: err})
}

// stillQueued tells the submitters of waiting inputs, at shutdown, that
// their inputs stay queued on disk for the next start.
func (m *SessionManager) stillQueued() {
	for _, q := range append(m.patient, derefQueued(m.pending)...) {
		o := TurnOutcome{Turn: q.turn(), Status: StatusStillQueued,
			Error: "the server stopped before this message ran; it stays queued and runs after the restart"}
		for _, w := range m.waiters[o.Turn] {
			sendOutcome(w, o)
		}
		delete(m.waiters, o.Turn)
	}
	m.pending, m.patient = nil, nil
}

func derefQueued(p *queued) []*queued {
	if p == nil {
		return nil
	}
	return []*queued{p}
}

// restoreWaiting rebuilds the waiting line from the chat log: queued user
// events (oldest first) whose turns neither started nor ended. Email and
// schedule inputs wait as patient ones; of the others (busy_policy queue)
// only the newest waits — an older one, left by a crash between a newer
// input's echo and its own replacement, is replaced now.
func (m *SessionManager) restoreWaiting(waiting []event.Event, frames map[int64]*Frame) {
	for _, u := range waiting {
		var d event.UserData
		if u.Decode(&d) != nil {
			continue
		}
		in := Input{Channel: d.Channel, From: d.From, Content: d.Content, ClientMsgID: d.ClientMsgID,
			Attachments: d.Attachments, ScheduleID: d.ScheduleID,
			Patient: d.Channel == event.ChannelEmail || d.Channel == event.ChannelSchedule}
		q := &queued{in: in, echo: frames[u.Seq]}
		if q.echo == nil {
			q.echo = newFrame(u)
		}
		switch {
		case in.Patient:
			m.patient = append(m.patient, q)
		default:
			if m.pending != nil {
				m.replace(m.pending)
			}
			m.pending = q
		}
	}
	if n := m.waitingCount(); n > 0 {
		m.cfg.Logger.Info("inputs recorded before the restart wait to run", "waiting", n)
	}
	m.gaugeWaiting()
}

// waitingEchoes are the user events of inputs not yet started (a reset
// keeps them in the buffer: they are still to come).
func (m *SessionManager) waitingEchoes() []*Frame {
	var out []*Frame
	for _, q := range append(derefQueued(m.pending), m.patient...) {
		out = append(out, q.echo)
	}
	return out
}

// conversation returns the user and assistant events of frames as
// exchanges, each reply right after its input, in the order the turns
// started (a queued input is logged before the reply of the turn it waited
// for, and starts at its turn_start): only exchanges that started after
// seq after, and none that has not started. An exchange a reset kept has
// lost its turn_start from the buffer: its reply shows it ran, and it
// counts from its input.
func conversation(frames []*Frame, after int64) []event.Event {
	type exchange struct {
		start       int64 // 0: not started (yet)
		user, reply event.Event
		replied     bool
	}
	byTurn := map[string]*exchange{}
	var all []*exchange
	for _, f := range frames {
		e := f.Event
		switch e.Type {
		case event.User:
			x := &exchange{start: e.Seq, user: e}
			if f.queued {
				x.start = 0
			}
			byTurn[e.Turn] = x
			all = append(all, x)
		case event.TurnStart:
			if x := byTurn[e.Turn]; x != nil {
				x.start = e.Seq
			}
		case event.Assistant:
			if x := byTurn[e.Turn]; x != nil && !x.replied {
				x.reply, x.replied = e, true
				if x.start == 0 {
					x.start = x.user.Seq
				}
			}
		}
	}
	all = slices.DeleteFunc(all, func(x *exchange) bool { return x.start == 0 || x.start <= after })
	slices.SortStableFunc(all, func(a, b *exchange) int { return cmp.Compare(a.start, b.start) })
	out := make([]event.Event, 0, 2*len(all))
	for _, x := range all {
		out = append(out, x.user)
		if x.replied {
			out = append(out, x.reply)
		}
	}
	return out
}

// cancelNotice says who cancelled a turn and after how long, e.g.
// "Cancelled from the web after 2.6 s."
func cancelNotice(by string, interrupt bool, d time.Duration) string {
	who := ""
	switch {
	case interrupt:
		who = " by a new message from the " + by
	case by == "":
	case by == event.ChannelWeb:
		who = " from the web"
	case by == event.ChannelConsole:
		who = " from the console"
	case by == CancelByAPI:
		who = " through the API"
	case by == CancelByReset:
		who = " by a reset"
	default:
		who = " from " + by
	}
	return fmt.Sprintf("Cancelled%s after %s s.", who, strings.TrimSuffix(fmt.Sprintf("%.1f", max(d, 0).Seconds()), ".0"))
}
