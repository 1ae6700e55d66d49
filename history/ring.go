package history

import (
	"github.com/frontdesk-hq/frontdesk/event"
)

// Ring holds the last n user↔assistant exchanges: the context kept across a
// reset and given to the agent. It is owned by one goroutine (the hub's) and
// does no locking.
//
// Exchanges are kept in the order their turns started, each paired by turn
// id: a queued input (user.queued) is logged when it arrives, possibly in
// the middle of another turn, but joins the ring only at its turn_start —
// so a waiting input neither takes a slot nor splits a running turn from
// its reply.
type Ring struct {
	max   int
	ex    []exchange // grows to max, then used circularly from start
	start int        // index of the oldest exchange once ex is full
	// waiting holds queued user events until their turn_start (or a
	// turn_end for a turn that never ran), by turn id, in arrival order.
	waiting []event.Event
}

// exchange is one user event and, once it came, the assistant's reply.
type exchange struct {
	user      event.Event
	assistant event.Event
	replied   bool
}

// NewRing returns a ring that keeps at most n exchanges; n <= 0 keeps none.
func NewRing(n int) *Ring {
	return &Ring{max: max(n, 0)}
}

// Queued reports whether e is a user event recorded as queued: logged on
// arrival, run later (its turn_start says when).
func Queued(e event.Event) bool {
	if e.Type != event.User {
		return false
	}
	var d struct {
		Queued bool `json:"queued"`
	}
	return e.Decode(&d) == nil && d.Queued
}

// Add records e. A user event starts a new exchange (a queued one: at its
// turn_start), dropping the oldest when n are held. An assistant event
// completes the exchange of its turn unless it already has a reply (or
// there is none), in which case it is ignored, as are all other types.
func (r *Ring) Add(e event.Event) {
	switch e.Type {
	case event.User:
		if Queued(e) {
			r.waiting = append(r.waiting, e)
			return
		}
		r.push(e)
	case event.TurnStart:
		if u, ok := r.takeWaiting(e.Turn); ok {
			r.push(u)
		}
	case event.TurnEnd:
		r.takeWaiting(e.Turn) // a queued input that never ran (replaced)
	case event.Assistant:
		if x := r.find(e.Turn); x != nil && !x.replied {
			x.assistant = e
			x.replied = true
		}
	}
}

func (r *Ring) push(u event.Event) {
	if r.max == 0 {
		return
	}
	x := exchange{user: u}
	if len(r.ex) < r.max {
		r.ex = append(r.ex, x)
		return
	}
	r.ex[r.start] = x
	r.start = (r.start + 1) % r.max
}

func (r *Ring) takeWaiting(turn string) (event.Event, bool) {
	for i, u := range r.waiting {
		if u.Turn == turn {
			r.waiting = append(r.waiting[:i], r.waiting[i+1:]...)
			return u, true
		}
	}
	return event.Event{}, false
}

// find returns the newest exchange of turn; an event without a turn id
// (older logs, tests) belongs to the newest exchange.
func (r *Ring) find(turn string) *exchange {
	for i := len(r.ex) - 1; i >= 0; i-- {
		x := &r.ex[(r.start+i)%len(r.ex)]
		if turn == "" || x.user.Turn == turn {
			return x
		}
	}
	return nil
}

// Events returns the held exchanges oldest first, each as its user event
// followed by its reply if there is one. Queued inputs that have not
// started are not among them (see Waiting). The slice is new; the events'
// Data is shared and must not be modified.
func (r *Ring) Events() []event.Event {
	out := make([]event.Event, 0, 2*len(r.ex))
	for i := range len(r.ex) {
		x := r.ex[(r.start+i)%len(r.ex)]
		out = append(out, x.user)
		if x.replied {
			out = append(out, x.assistant)
		}
	}
	return out
}

// Waiting returns the queued user events that have not started, in
// arrival order. The slice is new.
func (r *Ring) Waiting() []event.Event {
	return append([]event.Event(nil), r.waiting...)
}

// Len returns the number of exchanges held, including one still waiting
// for its reply (not counting queued inputs that have not started).
func (r *Ring) Len() int { return len(r.ex) }

// Replace puts e in place of the user or assistant event with e's seq
// (an erased message's tombstone), wherever the ring holds it. It
// reports whether it found one.
func (r *Ring) Replace(e event.Event) bool {
	found := false
	for i := range r.ex {
		x := &r.ex[i]
		if x.user.Seq == e.Seq {
			x.user, found = e, true
		}
		if x.replied && x.assistant.Seq == e.Seq {
			x.assistant, found = e, true
		}
	}
	for i := range r.waiting {
		if r.waiting[i].Seq == e.Seq {
			r.waiting[i], found = e, true
		}
	}
	return found
}
