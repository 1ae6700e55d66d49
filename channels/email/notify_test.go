package email

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/frontdesk-hq/frontdesk/internal/testkit/fakeclock"
	"github.com/frontdesk-hq/frontdesk/schedule"
)

// TestScheduleNotify fires schedules through a real session whose email
// channel talks to the in-process SMTP server: notify email mails the
// reply to schedules.notify_to; notify auto mails it only when no client
// was connected at fire time.
func TestScheduleNotify(t *testing.T) {
	e := newEnv(t)
	p := e.start()
	clock := fakeclock.New(time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC))
	sched, err := schedule.Open(p.hub, schedule.Options{DataDir: e.dir, Clock: clock, TZ: time.UTC,
		Mailer: p.ch, NotifyTo: ana, Logger: slog.New(slog.NewTextHandler(e.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sched.Run(ctx) }()
	defer func() { stop(); <-done }()
	create := func(sp schedule.Spec) schedule.Schedule {
		t.Helper()
		sc, err := sched.Create(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	gone := func(id string) func() bool {
		return func() bool {
			list, err := sched.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, sc := range list {
				if sc.ID == id {
					return false
				}
			}
			return true
		}
	}

	// A client is connected: auto does not mail.
	sub, _, err := p.hub.Subscribe(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	watched := create(schedule.Spec{Content: "Reminder: stand up", InSeconds: 60, Notify: schedule.NotifyAuto})
	clock.Advance(time.Minute)
	eventually(t, "the watched auto schedule to run", gone(watched.ID))
	sub.Close()

	mailed := create(schedule.Spec{Content: "call the plumber", InSeconds: 60, Notify: schedule.NotifyEmail})
	clock.Advance(time.Minute)
	m := e.smtp.next(t)
	if m.To[0] != ana || m.Header.Get("Subject") != "Reminder: call the plumber" ||
		!strings.Contains(m.Body, "reply to: call the plumber") || m.Header.Get("Auto-Submitted") != "auto-generated" ||
		m.Header.Get("In-Reply-To") != "" {
		t.Fatalf("notify email: to %v subject %q auto %q body %q", m.To, m.Header.Get("Subject"), m.Header.Get("Auto-Submitted"), m.Body)
	}
	eventually(t, "the emailed schedule to settle", gone(mailed.ID))

	// Nobody connected: auto mails.
	alone := create(schedule.Spec{Content: "Reminder: nobody is watching", InSeconds: 60, Notify: schedule.NotifyAuto})
	clock.Advance(time.Minute)
	m = e.smtp.next(t)
	if m.Header.Get("Subject") != "Reminder: nobody is watching" || !strings.Contains(m.Body, "reply to: Reminder: nobody is watching") {
		t.Fatalf("notify auto, unwatched: subject %q body %q", m.Header.Get("Subject"), m.Body)
	}
	eventually(t, "the unwatched schedule to settle", gone(alone.ID))
	e.smtp.none(t)

	// Notify refuses an address not on allow_from.
	if err := p.ch.Notify("k", "stranger@elsewhere.net", "s", "b"); err == nil {
		t.Fatal("mailed an address not on allow_from")
	}
}
