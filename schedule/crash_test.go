package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/agent"
	"github.com/frontdesk-hq/frontdesk/event"
	"github.com/frontdesk-hq/frontdesk/hub"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
	"github.com/frontdesk-hq/frontdesk/internal/testkit/testagent"
)

// TestCrashBetweenRecordAndRun stops the scheduler dead after a firing is
// recorded in schedules.json and before the session got it: after a
// restart it runs, once.
func TestCrashBetweenRecordAndRun(t *testing.T) {
	dir := t.TempDir()
	clock := fakeclock.New(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	st := newSteps("recorded")
	r := newRig(t, dir, clock, &agent.Demo{}, Options{step: st.hook})
	sc := r.create(Spec{Content: "Reminder: water the plants", InSeconds: 60})
	clock.Advance(time.Minute)
	if err := <-r.schedErr; !errors.Is(err, errCrash) {
		t.Fatalf("scheduler ended with %v, want the simulated crash", err)
	}
	r.schedErr <- errCrash // for stop
	r.stop()
	if n := len(r.userEvents()); n != 0 {
		t.Fatalf("%d inputs ran before the crash", n)
	}

	st = newSteps()
	r = newRig(t, dir, clock, &agent.Demo{}, Options{step: st.hook})
	st.wait(t, "settled", key(sc))
	got := r.userEvents()
	if len(got) != 1 || got[0].ClientMsgID != key(sc) {
		t.Fatalf("after restart: %+v, want the one firing", got)
	}
	if strings.HasPrefix(got[0].Content, "(late") {
		t.Fatalf("a firing recorded on time is not late: %q", got[0].Content)
	}
	if _, ok := r.get(sc.ID); ok {
		t.Fatal("the one-shot is still listed after it ran")
	}
}

// TestCrashAfterSubmitRunsOnce: the session recorded the firing (and ran
// its turn) but the scheduler died before clearing its record. After a
// restart the firing is offered again with the same client_msg_id and the
// session answers it as a duplicate: it does not run twice.
func TestCrashAfterSubmitRunsOnce(t *testing.T) {
	dir := t.TempDir()
	clock := fakeclock.New(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	st := newSteps("submitted")
	r := newRig(t, dir, clock, &agent.Demo{}, Options{step: st.hook})
	c := r.dial()
	sc := r.create(Spec{Content: "Reminder: backup", Cron: "0 13 * * *"})
	k := key(sc)
	clock.Advance(time.Hour)
	c.scheduled(sc.ID)
	st.wait(t, "submitted", k)
	r.stop()
	if got := r.get2Stopped(dir, sc.ID); got.Firing == nil || got.Firing.Key != k {
		t.Fatalf("on disk after the crash: %+v, want the firing recorded", got)
	}

	st = newSteps()
	r = newRig(t, dir, clock, &agent.Demo{}, Options{step: st.hook})
	st.wait(t, "settled", k)
	if got := r.userEvents(); len(got) != 1 {
		t.Fatalf("%d scheduled inputs in the chat log, want 1 (run once)", len(got))
	}
	if got := r.get2(sc.ID); got.Firing != nil || got.NextRun.Format(time.RFC3339) != "2026-05-02T13:00:00Z" {
		t.Fatalf("after restart %+v", got)
	}
}

// get2Stopped reads schedules.json directly (the rig is stopped).
func (r *rig) get2Stopped(dir, id string) Schedule {
	r.t.Helper()
	list, damage, err := load(storePath(dir), time.Now())
	if err != nil || damage != nil {
		r.t.Fatal(err, damage)
	}
	for _, sc := range list {
		if sc.ID == id {
			return *sc
		}
	}
	r.t.Fatalf("schedule %s not on disk", id)
	return Schedule{}
}

// TestDowntime: while the server was stopped a one-shot and three runs of
// an hourly schedule passed. At start the one-shot runs once, marked
// late; the hourly one does not make up its missed runs but runs at its
// next time.
func TestDowntime(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clock := fakeclock.New(start)
	r := newRig(t, dir, clock, &agent.Demo{}, Options{})
	once := r.create(Spec{Content: "Reminder: call the plumber", At: "2026-05-01T13:00:00Z"})
	hourly := r.create(Spec{Content: "check the queue", Cron: "30 * * * *"})
	r.stop()

	clock.Advance(3*time.Hour + 45*time.Minute) // 15:45: missed 13:00 and 12:30 … 15:30
	st := newSteps()
	r = newRig(t, dir, clock, &agent.Demo{}, Options{step: st.hook})
	st.wait(t, "settled", key(once))
	got := r.userEvents()
	if len(got) != 1 || got[0].ScheduleID != once.ID {
		t.Fatalf("at start: %+v, want the one-shot only", got)
	}
	if !strings.HasPrefix(got[0].Content, "(late: this was due Fri 1 May 13:00 UTC") || !strings.HasSuffix(got[0].Content, "Reminder: call the plumber") {
		t.Fatalf("late content %q", got[0].Content)
	}
	h := r.get2(hourly.ID)
	if h.LastRun != nil || h.NextRun.Format(time.RFC3339) != "2026-05-01T16:30:00Z" {
		t.Fatalf("hourly after downtime: last %v next %v, want no run and next 16:30", h.LastRun, h.NextRun)
	}
	clock.Advance(45 * time.Minute)
	st.wait(t, "settled", key(h))
	if got := r.userEvents(); len(got) != 2 || got[1].ScheduleID != hourly.ID || strings.HasPrefix(got[1].Content, "(late") {
		t.Fatalf("after 16:30: %+v", got)
	}
}

// TestStopWhileWaitingInLine stops the server while a firing waits behind
// a long turn (recorded by the session as a queued input, still recorded
// by the scheduler). After the restart the session runs it from its
// waiting line and the scheduler, offering it again, gets the duplicate:
// it runs once and is settled.
func TestStopWhileWaitingInLine(t *testing.T) {
	dir := t.TempDir()
	clock := fakeclock.New(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	st := newSteps()
	r := newRig(t, dir, clock, testagent.NewGate(), Options{step: st.hook})
	c := r.dial()
	if _, err := r.hub.Submit(ctxT(t), hub.Input{Channel: event.ChannelWeb, Content: "a long question"}); err != nil {
		t.Fatal(err)
	}
	c.until(func(e event.Event) bool { return e.Type == event.Delta })
	sc := r.create(Spec{Content: "Reminder: tea", InSeconds: 60})
	k := key(sc)
	clock.Advance(time.Minute)
	st.wait(t, "submitted", k)
	r.stop()
	if got := r.get2Stopped(dir, sc.ID); got.Firing == nil || got.Firing.Key != k {
		t.Fatalf("on disk after the stop: %+v, want the firing recorded", got)
	}

	st = newSteps()
	r = newRig(t, dir, clock, &agent.Demo{}, Options{step: st.hook})
	st.wait(t, "settled", k)
	got := r.userEvents()
	if len(got) != 1 || got[0].ClientMsgID != k {
		t.Fatalf("after the restart: %+v, want the firing once", got)
	}
	if _, ok := r.get(sc.ID); ok {
		t.Fatal("the one-shot is still listed after its turn")
	}
}

// TestLateSaysWhy: a one-shot missed while the server was stopped is late
// however little it missed by (here 20 s; it used to need a minute); one
// that runs more than a minute after its time while the server ran (the
// machine slept) says by how much, not that the server was stopped; one
// on time says nothing.
func TestLateSaysWhy(t *testing.T) {
	dir := t.TempDir()
	clock := fakeclock.New(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	r := newRig(t, dir, clock, &agent.Demo{}, Options{})
	missed := r.create(Spec{Content: "Reminder: missed", At: "2026-05-01T13:00:00Z"})
	r.stop()

	clock.Advance(time.Hour + 20*time.Second) // 13:00:20
	st := newSteps()
	r = newRig(t, dir, clock, &agent.Demo{}, Options{step: st.hook})
	st.wait(t, "settled", key(missed))
	slept := r.create(Spec{Content: "Reminder: slept", At: "2026-05-01T13:10:00Z"})
	onTime := r.create(Spec{Content: "Reminder: on time", At: "2026-05-01T13:30:00Z"})
	clock.Advance(15 * time.Minute) // 13:15:20: the timer comes 5 min 20 s late
	st.wait(t, "settled", key(slept))
	clock.Advance(15 * time.Minute) // 13:30:20: 20 s, within the minute
	st.wait(t, "settled", key(onTime))

	got := r.userEvents()
	want := []string{
		"(late: this was due Fri 1 May 13:00 UTC, while the server was not running) Reminder: missed",
		"(late: this was due Fri 1 May 13:10 UTC and runs 5m20s after it) Reminder: slept",
		"Reminder: on time",
	}
	if len(got) != len(want) {
		t.Fatalf("%d inputs, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Content != w {
			t.Errorf("input %d: %q, want %q", i, got[i].Content, w)
		}
	}
}
