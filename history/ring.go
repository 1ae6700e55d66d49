package history

import "github.com/frontdesk-hq/frontdesk/event"

// Ring holds the last n user↔assistant exchanges: the context kept across a
// reset and given to the agent. It is owned by one goroutine (the hub's) and
// does no locking.
type Ring struct {
	max   int
	ex    []exchange // grows to max, then used circularly from start
	start int        // index of the oldest exchange once ex is full
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

// Add records e. A user event starts a new exchange, dropping the oldest
// when n are held. An assistant event completes the newest exchange unless
// it already has a reply (or there is none), in which case it is ignored,
// as are all other types.
func (r *Ring) Add(e event.Event) {
	switch e.Type {
	case event.User:
		if r.max == 0 {
			return
		}
		x := exchange{user: e}
		if len(r.ex) < r.max {
			r.ex = append(r.ex, x)
			return
		}
		r.ex[r.start] = x
		r.start = (r.start + 1) % r.max
	case event.Assistant:
		if len(r.ex) == 0 {
			return
		}
		newest := &r.ex[(r.start+len(r.ex)-1)%len(r.ex)]
		if newest.replied {
			return
		}
		newest.assistant = e
		newest.replied = true
	}
}

// Events returns the held exchanges oldest first, each as its user event
// followed by its reply if there is one. The slice is new; the events' Data
// is shared and must not be modified.
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

// Len returns the number of exchanges held, including one still waiting
// for its reply.
func (r *Ring) Len() int { return len(r.ex) }
