package schedule

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// TestOneShotRecurringAndDSTThroughTheHub drives a one-shot and a daily
// 9:00 Europe/Berlin schedule over the March clock change with a fake
// clock, through the real hub, with two WebSocket clients watching: each
// firing is a user event of channel schedule with its schedule_id, seen
// by both, answered, and run once; 9:00 stays 9:00 local time.
func TestOneShotRecurringAndDSTThroughTheHub(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	clock := fakeclock.New(time.Date(2026, 3, 26, 10, 0, 0, 0, berlin))
	st := newSteps()
	r := newRig(t, t.TempDir(), clock, &agent.Demo{}, Options{TZ: berlin, step: st.hook})
	a, b := r.dial(), r.dial()

	once := r.create(Spec{Content: "Reminder: stretch", InSeconds: 90, CreatedBy: "web"})
	daily := r.create(Spec{Content: "summarise the overnight email", Cron: "0 9 * * *", TZ: "Europe/Berlin"})
	if got := daily.NextRun.In(berlin).Format(time.RFC3339); got != "2026-03-27T09:00:00+01:00" {
		t.Fatalf("daily next_run %s", got)
	}
	if daily.TZ != "Europe/Berlin" || once.TZ != "Europe/Berlin" {
		t.Fatalf("tz: once %q daily %q", once.TZ, daily.TZ)
	}

	clock.Advance(90 * time.Second)
	for _, c := range []*client{a, b} {
		d, end := c.scheduled(once.ID)
		if d.Channel != event.ChannelSchedule || d.Content != "Reminder: stretch" || d.ClientMsgID == "" {
			t.Fatalf("fired input %+v", d)
		}
		var te event.TurnEndData
		_ = json.Unmarshal(end.Data, &te)
		if te.Status != event.StatusCompleted {
			t.Fatalf("turn ended %s", te.Status)
		}
	}
	st.wait(t, "settled", key(once))
	if _, ok := r.get(once.ID); ok {
		t.Fatal("a one-shot that ran is still listed")
	}

	// The daily one: Friday before the change (08:00 UTC), then Monday
	// after it (07:00 UTC). Clients see each day's firing.
	wantUTC := []string{"2026-03-27T08:00:00Z", "2026-03-28T08:00:00Z", "2026-03-29T07:00:00Z", "2026-03-30T07:00:00Z"}
	for i, w := range wantUTC {
		sc, _ := r.get(daily.ID)
		if got := sc.NextRun.UTC().Format(time.RFC3339); got != w {
			t.Fatalf("day %d: next_run %s, want %s", i, got, w)
		}
		clock.Advance(sc.NextRun.Sub(clock.Now()))
		for _, c := range []*client{a, b} {
			if d, _ := c.scheduled(daily.ID); d.Content != "summarise the overnight email" {
				t.Fatalf("day %d: content %q", i, d.Content)
			}
		}
		st.wait(t, "settled", key(sc))
		after, _ := r.get(daily.ID)
		if after.LastRun == nil || !after.LastRun.Equal(*sc.NextRun) || after.Firing != nil {
			t.Fatalf("day %d: after firing %+v", i, after)
		}
	}
	if got, want := len(r.userEvents()), 1+len(wantUTC); got != want {
		t.Fatalf("%d scheduled inputs in the chat log, want %d", got, want)
	}
	if got := r.get2(daily.ID).NextRun.In(berlin).Format(time.RFC3339); got != "2026-03-31T09:00:00+02:00" {
		t.Fatalf("next after the change: %s", got)
	}
	fi, err := os.Stat(storePath(r.dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("schedules.json: %v, mode %v", err, fi.Mode())
	}
}

func (r *rig) get2(id string) Schedule {
	sc, ok := r.get(id)
	if !ok {
		r.t.Fatalf("schedule %s is gone", id)
	}
	return sc
}

// TestFiringWaitsVisiblyForARunningTurn fires a schedule while a long
// turn runs: the firing is not refused (busy_policy reject) but recorded
// and shown at once to both clients as a queued input; when the long turn
// ends it starts (turn_start), runs once, and is settled.
func TestFiringWaitsVisiblyForARunningTurn(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	gate := testagent.NewGate()
	st := newSteps()
	r := newRig(t, t.TempDir(), clock, gate, Options{step: st.hook})
	a, b := r.dial(), r.dial()
	ctx := ctxT(t)
	res, err := r.hub.Submit(ctx, hub.Input{Channel: event.ChannelWeb, Content: "a long question"})
	if err != nil {
		t.Fatal(err)
	}
	a.until(func(e event.Event) bool { return e.Type == event.Delta }) // the long turn runs
	sc := r.create(Spec{Content: "Reminder: tea", InSeconds: 60})
	clock.Advance(time.Minute)

	var queuedTurn string
	for _, c := range []*client{a, b} {
		u := c.until(func(e event.Event) bool { return e.Type == event.User && e.Turn != res.Turn })
		var d event.UserData
		_ = json.Unmarshal(u.Data, &d)
		if d.ScheduleID != sc.ID || !d.Queued || d.Content != "Reminder: tea" || u.Turn == res.Turn {
			t.Fatalf("during the long turn: %s %+v, want the schedule's input queued", u.Turn, d)
		}
		queuedTurn = u.Turn
	}
	st.wait(t, "submitted", key(sc))
	if got := r.get2(sc.ID); got.Firing == nil {
		t.Fatal("no firing recorded while it waits")
	}

	gate.Release <- struct{}{} // the long turn ends; the reminder starts
	for _, c := range []*client{a, b} {
		end := c.until(func(e event.Event) bool { return e.Type == event.TurnEnd || e.Type == event.TurnStart })
		if end.Type != event.TurnEnd || end.Turn != res.Turn {
			t.Fatalf("got %s of %s, want the long turn's end first", end.Type, end.Turn)
		}
		c.until(func(e event.Event) bool { return e.Type == event.TurnStart && e.Turn == queuedTurn })
	}
	gate.Release <- struct{}{}
	for _, c := range []*client{a, b} {
		c.until(func(e event.Event) bool { return e.Type == event.TurnEnd && e.Turn == queuedTurn })
	}
	st.wait(t, "settled", key(sc))
	if n := len(r.userEvents()); n != 1 {
		t.Fatalf("%d scheduled inputs in the chat log, want 1", n)
	}
	if _, ok := r.get(sc.ID); ok {
		t.Fatal("the one-shot is still listed after its turn")
	}
}
