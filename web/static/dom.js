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

export { el, h, timeOf, timeEl, setTime, fullTime, dayKeyOf, dayKey, relDay, whenLabel, clip };
