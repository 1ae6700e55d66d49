// dom.js — owns the page's elements by id (el), the one element factory h()
// (text only ever through textContent) and how times and days are written.
// A leaf: imports nothing; every other view module uses it.

const $ = (id) => document.getElementById(id);
const el = {
  conn: $('conn'), connText: $('conn-text'), retry: $('retry'),
  main: $('conversation'), log: $('log'), pending: $('pending'), empty: $('empty'),
  jump: $('jump'), statusRow: $('status-row'), status: $('statusline'), statusText: $('status-text'),
  announcer: $('announcer'), form: $('composer'), input: $('message'), send: $('send'),
  cancel: $('cancel'), note: $('composer-note'), reason: $('composer-reason'),
  auth: $('auth'), authForm: $('auth-form'), authInput: $('auth-token'), authError: $('auth-error'),
  authGone: $('auth-gone'), authOIDC: $('auth-oidc'), you: $('you'), signOut: $('sign-out'), readOnly: $('read-only'),
  tray: $('tray'), trayError: $('tray-error'), attach: $('attach'), file: $('file'), drop: $('drop'),
  reset: $('reset'), resetDialog: $('reset-dialog'), resetConfirm: $('reset-confirm'), resetKeep: $('reset-keep'),
  older: $('older'), olderText: $('older-text'), olderLoad: $('older-load'),
  newer: $('newer'), newerText: $('newer-text'), newerLoad: $('newer-load'),
  archiveBar: $('archive-bar'), archiveText: $('archive-text'), archiveBack: $('archive-back'),
  searchOpen: $('search-open'), search: $('search'), searchInput: $('search-input'), searchClose: $('search-close'),
  searchPanel: $('search-panel'), searchStatus: $('search-status'), searchRetry: $('search-retry'), searchResults: $('search-results'),
};

function h(tag, className, text) {
  const n = document.createElement(tag);
  if (className) n.className = className;
  if (text !== undefined) n.textContent = text; // text only, always
  return n;
}

function timeOf(ts) {
  const d = new Date(ts);
  return isNaN(d) ? null : d;
}

function timeEl(ts) {
  const t = h('time', 'when');
  setTime(t, ts);
  return t;
}

// One way to write a time, the terminal's and the reminders': 24-hour
// "15:04" in a message, and in full with the zone's name — "Mon 23 Nov
// 15:04 CET" — where the day or the zone matters (a title, a schedule).
const clock = (d) => d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
function zoneName(d) {
  const z = new Intl.DateTimeFormat([], { timeZoneName: 'short' }).formatToParts(d).find((p) => p.type === 'timeZoneName');
  return z ? z.value : '';
}
function fullTime(d) {
  const day = d.toLocaleDateString([], { weekday: 'short' }) + ' ' + d.getDate() + ' ' + d.toLocaleDateString([], { month: 'short' }) +
    (d.getFullYear() !== new Date().getFullYear() ? ' ' + d.getFullYear() : '');
  return (day + ' ' + clock(d) + ' ' + zoneName(d)).trim();
}

// setTime writes ts into a <time>; no ts (a reply still streaming) leaves "…".
function setTime(t, ts) {
  const d = ts ? timeOf(ts) : null;
  t.textContent = d ? clock(d) : '…';
  if (d) { t.dateTime = d.toISOString(); t.title = fullTime(d); } else { t.removeAttribute('datetime'); t.title = ''; }
}

// Days in local time: a key to compare, and the words for a divider or a search hit.
const dayKeyOf = (d) => d.getFullYear() + '-' + (d.getMonth() + 1) + '-' + d.getDate();
const dayKeys = new Map(); // ts → day key: withDays asks for every item on every render
function dayKey(ts) {
  let k = dayKeys.get(ts);
  if (k === undefined) {
    const d = timeOf(ts);
    k = d ? dayKeyOf(d) : null;
    if (dayKeys.size > 50000) dayKeys.clear();
    dayKeys.set(ts, k);
  }
  return k;
}
function relDay(d, short) {
  const now = new Date();
  if (dayKeyOf(d) === dayKeyOf(now)) return 'Today';
  const y = new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1);
  if (dayKeyOf(d) === dayKeyOf(y)) return 'Yesterday';
  const opts = short ? { weekday: 'short', day: 'numeric', month: 'short' } : { weekday: 'long', day: 'numeric', month: 'long' };
  if (d.getFullYear() !== now.getFullYear()) opts.year = 'numeric';
  return d.toLocaleDateString([], opts);
}
function whenLabel(ts) {
  const d = timeOf(ts);
  return d ? relDay(d, true) + ', ' + clock(d) : '';
}

function clip(s, n) {
  return s.length > n ? s.slice(0, n) + '\n… (' + (s.length - n) + ' more characters)' : s;
}

function svg(tag, attrs) {
  const n = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  return n;
}

// headerPanel builds a header button (an icon of the given SVG shapes, the
// label, then a count; before the reset button) that opens a panel of its
// own (hidden at first; a heading and a Close button in its head), as the
// Memory and Scheduled panels have. The button opens and closes it, Close
// closes it and gives the button focus; onOpen runs each time it opens.
// prefix names the count's and the head's classes (prefix-count,
// prefix-head).
function headerPanel({ id, label, title, prefix, shapes, onOpen }) {
  const button = h('button', 'small icon-btn');
  const icon = svg('svg', { class: 'icon', viewBox: '0 0 20 20', 'aria-hidden': 'true', focusable: 'false' });
  for (const [tag, attrs] of shapes) icon.append(svg(tag, attrs));
  button.append(icon, h('span', 'btn-label', label));
  button.id = id + '-open';
  button.type = 'button';
  button.title = title;
  button.setAttribute('aria-controls', id);
  button.setAttribute('aria-expanded', 'false');
  const count = h('span', prefix + '-count', '');
  button.append(count);
  el.reset.before(button);

  const panel = h('section', id);
  panel.id = id;
  panel.hidden = true;
  panel.setAttribute('aria-label', label);
  const head = h('div', prefix + '-head');
  const heading = h('h2', '', label);
  const close = h('button', 'small', 'Close');
  close.type = 'button';
  head.append(heading, close);
  const toggle = (open) => {
    panel.hidden = !open;
    button.setAttribute('aria-expanded', String(open));
    if (open) onOpen();
  };
  button.addEventListener('click', () => toggle(panel.hidden));
  close.addEventListener('click', () => { toggle(false); button.focus(); });
  return { button, count, panel, head, heading };
}

export { el, h, timeOf, timeEl, setTime, fullTime, dayKeyOf, dayKey, relDay, whenLabel, clip, headerPanel };
