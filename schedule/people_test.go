package schedule

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
)

// talkers may talk; anyone else may not.
type talkers []string

func (g talkers) Allow(a hub.Actor, perm string) error {
	if perm == event.PermTalk && slices.Contains(g, a.Person) {
		return nil
	}
	return &hub.ForbiddenError{Person: a.Person, Permission: perm, Message: fmt.Sprintf("%s may not %s", a.Person, perm)}
}

func (talkers) Name(string) string { return "" }

// A schedule fires as its creator, whose permission to talk is checked
// again when it fires: Bo's runs with person bo; Vi's (Vi may no longer
// talk) does not run — a recurring one stays listed for someone to
// cancel.
func TestScheduleFiresAsItsCreator(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	st := newSteps()
	r := newRig(t, t.TempDir(), clock, &agent.Demo{}, Options{step: st.hook}, talkers{"bo"})
	bo := r.create(Spec{Content: "Reminder: call the plumber", InSeconds: 300, CreatedBy: CreatedByAPI, Person: "bo"})
	vi := r.create(Spec{Content: "Reminder: water the plants", Cron: "*/5 * * * *", CreatedBy: CreatedByAPI, Person: "vi"})
	if bo.Person != "bo" || vi.Person != "vi" {
		t.Fatalf("created %+v and %+v, want their persons", bo, vi)
	}
	want := map[string]bool{"settled " + key(bo): true, "settled " + key(vi): true}
	clock.Advance(300 * time.Second)
	for timeout := time.After(15 * time.Second); len(want) > 0; {
		select {
		case got := <-st.ch:
			delete(want, got)
		case <-timeout:
			t.Fatalf("steps not seen: %v", want)
		}
	}
	var ran []string
	for _, u := range r.userEvents() {
		ran = append(ran, u.ScheduleID+"/"+u.Person)
	}
	if !slices.Contains(ran, bo.ID+"/bo") || slices.ContainsFunc(ran, func(s string) bool { return s[:len(vi.ID)] == vi.ID }) {
		t.Fatalf("fired inputs %q: want %s as bo, and nothing of %s", ran, bo.ID, vi.ID)
	}
	if _, ok := r.get(vi.ID); !ok {
		t.Fatalf("vi's schedule is gone; want it listed for someone to cancel")
	}
}
