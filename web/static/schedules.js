// schedules.js — the "Scheduled" panel: what is scheduled (reminders and
// recurring tasks, GET /api/schedules), each with its next run in local
// time and a Cancel button (DELETE /api/schedules/{id}), and a warning
// when the server started over a damaged schedules.json. It builds its
// own header button and panel, and refreshes when the panel opens, after
// a cancel, on each schedules_changed frame (a schedule created, fired or
// cancelled by any door, from any tab), whenever a turn has ended since
// it last looked, and every second while a run is under way. Loaded as
// its own module script after app.js, whose render hook it wraps.
// Every server string goes through textContent (h()).

import { h, whenLabel, fullTime, headerPanel } from './dom.js';
import { state, apiGet, apiCall, lookAgain } from './shell.js';

// A clock and the word, like Search: on a phone only the clock and the count show.
const { button, count, panel, head } = headerPanel({
  id: 'schedules', label: 'Scheduled', title: 'Reminders and recurring tasks', prefix: 'sched',
  shapes: [['circle', { cx: '10', cy: '10', r: '7' }], ['path', { d: 'M10 6v4l2.5 2.5' }]],
  onOpen: () => refresh(),
});
const status = h('p', 'sched-status', '');
status.setAttribute('role', 'status');
const warning = h('p', 'sched-warning', '');
warning.id = 'schedules-warning';
warning.hidden = true;
const list = h('ul', 'sched-list');
list.id = 'schedules-list';
panel.append(head, warning, status, list);
document.querySelector('header.top').after(panel);

let items = [];
let damaged = null;
let loading = null;
let again = false;
let settleTimer = null;

async function refresh() {
  // A look asked for while one is under way may follow a change that one
  // missed: it is made once that one is done.
  if (loading) { again = true; return loading; }
  loading = apiGet('/api/schedules', {}).then((b) => {
    items = b.schedules || [];
    damaged = b.damaged || null;
    status.textContent = '';
  }, (e) => {
    status.textContent = 'Could not load the schedules: ' + e.message + '.';
  }).finally(() => {
    loading = null;
    if (again) { again = false; refresh(); }
    paint();
    // A run under way is settled just after its turn ends: look again
    // until it is.
    clearTimeout(settleTimer);
    if (items.some((s) => s.firing)) settleTimer = setTimeout(refresh, 1000);
  });
  return loading;
}

function paint() {
  count.replaceChildren(...(items.length ? [h('span', 'sched-sep', ' · '), String(items.length)] : []), damaged ? ' ⚠' : '');
  // Said until the next start: the file kept aside is the operator's to look at.
  warning.hidden = !damaged;
  warning.textContent = damaged ? '⚠ ' + damaged.message + '.' : '';
  button.title = damaged ? 'Reminders and recurring tasks — ' + damaged.message : 'Reminders and recurring tasks';
  list.replaceChildren();
  if (!items.length && !status.textContent) status.textContent = 'Nothing is scheduled. Ask the assistant: “remind me in 10 minutes to …”.';
  for (const s of items) {
    const li = h('li', 'schedule');
    li.dataset.id = s.id;
    li.append(h('p', 'sched-content', s.content));
    const meta = [];
    if (s.next_run) meta.push('next: ' + whenLabel(s.next_run));
    else if (s.firing) meta.push('running now');
    if (s.cron) meta.push('repeats: ' + s.cron + ' (' + s.tz + ')');
    if (s.notify && s.notify !== 'none') meta.push('notify: ' + s.notify);
    meta.push('by ' + s.created_by);
    const m = h('p', 'sched-meta', meta.join(' · '));
    if (s.next_run) m.title = fullTime(new Date(s.next_run));
    li.append(m);
    const cancel = h('button', 'small danger', 'Cancel');
    cancel.type = 'button';
    cancel.dataset.action = 'cancel';
    cancel.setAttribute('aria-label', 'Cancel: ' + s.content.slice(0, 60));
    li.append(cancel);
    list.append(li);
  }
}

async function cancel(id, btn) {
  btn.disabled = true;
  try {
    await apiCall('DELETE', '/api/schedules/' + encodeURIComponent(id));
  } catch (e) {
    if (e.status === 404) { await refresh(); return; } // gone already: cancelled elsewhere, or fired
    btn.disabled = false;
    status.textContent = 'Could not cancel: ' + e.message + '.';
    return;
  }
  await refresh();
}

list.addEventListener('click', (e) => {
  const btn = e.target.closest('button[data-action="cancel"]');
  const li = btn && btn.closest('li[data-id]');
  if (li) cancel(li.dataset.id, btn);
});

// On each schedules_changed, after a reconnect (changes while the
// connection was down sent no frame), and after each turn (the session
// idle again with new events), look again.
// A burst (create, fire, settle) is one look.
let seen = -1;
lookAgain(() => state.schedulesRev, refresh, () => {
  if (state.phase !== 'live' || state.lastSeq === seen || state.openTurns.length !== 0) return null;
  seen = state.lastSeq;
  return 200;
});
refresh();
