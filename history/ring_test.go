package history

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/frontdesk-hq/frontdesk/event"
)

func TestRing(t *testing.T) {
	// Steps are written "u1" (user, seq 1), "a2" (assistant, seq 2), or
	// another event type's first letter: "d" delta, "t" tool_call,
	// "e" turn_end, "n" notice, "r" reset; want lists the seqs of Events().
	tests := []struct {
		name    string
		n       int
		steps   string
		want    string
		wantLen int
	}{
		{"empty", 3, "", "", 0},
		{"one exchange", 3, "u1 a2", "u1 a2", 1},
		{"user waiting for a reply counts", 3, "u1 a2 u3", "u1 a2 u3", 2},
		{"other types ignored", 3, "u1 d2 t3 d4 e5 n6 a7 r8 e9", "u1 a7", 1},
		{"assistant with no user ignored", 3, "a1 u2 a3", "u2 a3", 1},
		{"second assistant ignored", 3, "u1 a2 a3", "u1 a2", 1},
		{"assistant completes the newest", 3, "u1 u2 a3", "u1 u2 a3", 2},
		{"keeps the last n", 2, "u1 a2 u3 a4 u5 a6", "u3 a4 u5 a6", 2},
		{"wraps many times", 2, "u1 a2 u3 a4 u5 a6 u7 a8 u9 a10 u11", "u9 a10 u11", 2},
		{"late reply after wrap goes to the newest", 2, "u1 u2 u3 a4", "u2 u3 a4", 2},
		{"n is 1", 1, "u1 a2 u3", "u3", 1},
		{"n is 0 keeps none", 0, "u1 a2", "", 0},
		{"negative n keeps none", -5, "u1 a2", "", 0},
	}
	types := map[byte]event.Type{'u': event.User, 'a': event.Assistant, 'd': event.Delta,
		't': event.ToolCall, 'e': event.TurnEnd, 'n': event.Notice, 'r': event.Reset}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRing(tt.n)
			for i, s := range strings.Fields(tt.steps) {
				typ, ok := types[s[0]]
				if !ok {
					t.Fatalf("bad step %q", s)
				}
				r.Add(event.Event{Seq: int64(i + 1), Type: typ})
			}
			var got []string
			for _, e := range r.Events() {
				got = append(got, fmt.Sprintf("%c%d", e.Type[0], e.Seq))
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("Events() = %q, want %q", g, tt.want)
			}
			if got := r.Len(); got != tt.wantLen {
				t.Errorf("Len() = %d, want %d", got, tt.wantLen)
			}
		})
	}
}

func TestRingEventsIsAFreshSlice(t *testing.T) {
	r := NewRing(2)
	r.Add(event.Event{Seq: 1, Type: event.User})
	r.Add(event.Event{Seq: 2, Type: event.Assistant})
	first := r.Events()
	first[0].Seq = 99
	_ = append(first[:1], event.Event{Seq: 98, Type: event.User})
	if got := r.Events(); !slices.EqualFunc(got, []int64{1, 2}, func(e event.Event, s int64) bool { return e.Seq == s }) {
		t.Errorf("after changing an earlier result, Events() seqs = %v, want [1 2]", seqs(got))
	}
}

func seqs(evs []event.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

// TestRingQueuedByTurn: steps are "kind:turn" — u user, q queued user,
// s turn_start, a assistant, e turn_end; want lists kind:turn of Events(),
// then the turns still waiting.
func TestRingQueuedByTurn(t *testing.T) {
	tests := []struct {
		name, steps, want, waiting string
		n                          int
	}{
		{"queued joins at its start", "u:1 q:2 a:1 e:1 s:2 a:2", "u:1 a:1 q:2 a:2", "", 3},
		{"waiting input not in the context", "u:1 q:2 q:3 a:1", "u:1 a:1", "2 3", 3},
		{"start order, not arrival order", "u:1 q:2 q:3 a:1 e:1 s:3 a:3 e:3 s:2 a:2", "u:1 a:1 q:3 a:3 q:2 a:2", "", 3},
		{"replaced input leaves the line", "u:1 q:2 e:2 q:3 a:1", "u:1 a:1", "3", 3},
		{"waiting takes no slot", "u:1 a:1 q:2 q:3 q:4", "u:1 a:1", "2 3 4", 1},
		{"reply pairs with its turn, not the newest", "u:1 s:9 a:1", "u:1 a:1", "", 3},
	}
	kinds := map[byte]event.Type{'u': event.User, 'q': event.User, 's': event.TurnStart, 'a': event.Assistant, 'e': event.TurnEnd}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRing(tt.n)
			for i, s := range strings.Fields(tt.steps) {
				e := event.Event{Seq: int64(i + 1), Type: kinds[s[0]], Turn: "t" + s[2:]}
				if s[0] == 'q' {
					e.Data = []byte(`{"channel":"email","content":"x","queued":true}`)
				}
				r.Add(e)
			}
			var got []string
			for _, e := range r.Events() {
				k := "u"
				if Queued(e) {
					k = "q"
				} else if e.Type == event.Assistant {
					k = "a"
				}
				got = append(got, k+":"+e.Turn[1:])
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("Events() = %q, want %q", g, tt.want)
			}
			var w []string
			for _, e := range r.Waiting() {
				w = append(w, e.Turn[1:])
			}
			if g := strings.Join(w, " "); g != tt.waiting {
				t.Errorf("Waiting() = %q, want %q", g, tt.waiting)
			}
		})
	}
}
