package web_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/frontdesk-hq/frontdesk/schedule"
)

// TestBrowserSchedulesPanel: the Scheduled panel lists what is scheduled
// with its next run in the browser's local time, picks up a reminder the
// demo agent scheduled from the composer once the turn ends, and cancels
// one with its button.
func TestBrowserSchedulesPanel(t *testing.T) {
	e := startSchedules(t, schedule.Options{})
	if r := e.post(t, `{"content":"Reminder: call the plumber","cron":"0 9 * * 5","tz":"Europe/Berlin"}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	browser := newBrowser(t, 1200, 800)
	p := openTab(t, browser, "tab", "about:blank")
	// 9:00 in Berlin is 3:00 in New York in winter, 3:00 or 4:00 around
	// the changes: the panel shows the browser's local time.
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/New_York"})
		return err
	}), chromedp.Navigate(e.srv.URL+"/"))
	p.wait("connected", jsConnected)
	p.do(chromedp.Click(chromedp.CSS("#schedules-open")))
	p.wait("the schedule listed", `(() => { const li = document.querySelector('#schedules-list li');
		return !document.querySelector('#schedules').hidden && li &&
			li.querySelector('.sched-content').textContent === 'Reminder: call the plumber' &&
			/repeats: 0 9 \* \* 5 \(Europe\/Berlin\)/.test(li.querySelector('.sched-meta').textContent) &&
			/0[34]:00/.test(li.querySelector('.sched-meta').textContent); })()`)
	if got := eval[string](p, `document.querySelector('#schedules-open').textContent`); got != "Scheduled · 1" {
		t.Errorf("button %q, want the count", got)
	}

	p.send("remind me in 30 minutes to stretch")
	p.wait("the demo's reminder listed after its turn", `[...document.querySelectorAll('#schedules-list .sched-content')].some((n) => n.textContent === 'Reminder: stretch')`)
	p.do(chromedp.Click(chromedp.CSS(`#schedules-list li:last-child button[data-action="cancel"]`)))
	p.wait("it is gone after Cancel", `document.querySelectorAll('#schedules-list li').length === 1 &&
		document.querySelector('#schedules-list .sched-content').textContent === 'Reminder: call the plumber'`)
	if n := e.count(t); n != 1 {
		t.Fatalf("%d schedules on the server after cancel, want 1", n)
	}

	// One that fires: it arrives in the conversation with its own badge,
	// is answered, and leaves the list.
	if r := e.post(t, `{"content":"Reminder: drink water","in_seconds":1}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	p.wait("the fired reminder with the schedule badge", `[...document.querySelectorAll('#log li.msg.user')].some((li) =>
		/Reminder: drink water/.test(li.textContent) && li.querySelector('.badge.ch-schedule') &&
		li.querySelector('.badge.ch-schedule').textContent === 'schedule')`)
	p.wait("its reply", `[...document.querySelectorAll('#log li.msg.assistant .md')].some((m) => /⏰ Reminder: drink water/.test(m.textContent))`)
	p.wait("the list without it", `document.querySelectorAll('#schedules-list li').length === 1`)

}
