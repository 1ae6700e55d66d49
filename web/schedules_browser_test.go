package web_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
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

// TestBrowserSchedulesPanelFollowsOtherTabs: with the Scheduled panel open
// in two tabs, a schedule made through the API and one cancelled in the
// other tab show up at once — no turn ends in between (it used to stay
// stale until one did). A damaged schedules.json kept aside at start is
// said in the panel.
func TestBrowserSchedulesPanelFollowsOtherTabs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "schedules.json"), []byte("not json at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startSchedulesIn(t, dir, schedule.Options{})
	browser := newBrowser(t, 1200, 800)
	a := openTab(t, browser, "tab A", e.srv.URL+"/")
	b := openTab(t, browser, "tab B", e.srv.URL+"/")
	for _, p := range []*tab{a, b} {
		p.wait("connected", jsConnected)
		p.do(chromedp.Click(chromedp.CSS("#schedules-open")))
		p.wait("the damage said in the panel", `(() => { const w = document.querySelector('#schedules-warning');
			return !document.querySelector('#schedules').hidden && !w.hidden &&
				/schedules\.json was damaged .*kept as schedules\.json\.damaged-/.test(w.textContent) &&
				/⚠/.test(document.querySelector('#schedules-open').textContent); })()`)
	}
	if r := e.post(t, `{"content":"Reminder: from the API","in_seconds":3600}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	for _, p := range []*tab{a, b} {
		p.wait("the API's schedule listed without a turn", `[...document.querySelectorAll('#schedules-list .sched-content')].some((n) => n.textContent === 'Reminder: from the API') &&
			/by api/.test(document.querySelector('#schedules-list .sched-meta').textContent)`)
	}
	a.do(chromedp.Click(chromedp.CSS(`#schedules-list li button[data-action="cancel"]`)))
	b.wait("tab B empty after tab A's cancel", `document.querySelectorAll('#schedules-list li').length === 0`)
}
