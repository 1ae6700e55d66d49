// view.js — owns rendering the whole page from the state: the connection
// indicator, the conversation (live or archive) with day dividers, the
// edges that load older and newer history, the status line, the composer's
// buttons and notes, and scrolling (follow the bottom, keep the reading
// place, go where a jump asked, load more near an edge). render() is
// coalesced to one per animation frame by scheduleRender().

import * as Core from './core.js';
import * as Desk from './desk.js';
import { state, net, dispatch } from './shell.js';
import { el, dayKey, dayKeyOf, clip } from './dom.js';
import { views, pendingView, reconcile, keyOfNode, itemCache, pendingCache } from './items-view.js';
import { renderSearch, clearHit, showTarget } from './search-view.js';
import { renderTray } from './attach-view.js';

// nothingToSend: no text typed and no file in the tray.
const nothingToSend = () => el.input.value.trim() === '' && state.tray.items.length === 0;

let renderQueued = false;
let shownNoteSerial = 0;
let noteTimer = null;

// Coalesce bursts of frames (a replay, fast deltas) into one render per frame.
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => { renderQueued = false; render(); });
}
document.addEventListener('visibilitychange', () => { if (!document.hidden) render(); });

const fromBottom = () => el.main.scrollHeight - el.main.scrollTop - el.main.clientHeight;
const nearBottom = () => fromBottom() < 80;
const nearBottomNow = () => fromBottom() < 1;
// Half a screen or more above the newest message: "↓ Latest" is offered.
const farFromBottom = () => fromBottom() > el.main.clientHeight / 2;

// atBottom: the reader is following the conversation (at its bottom after
// the last scroll, theirs or ours). A resize — a phone turned, a window
// narrowed to phone width — reflows the text and leaves scrollTop where it
// was, so it is what says "stay at the newest message" then.
// The browser may fire the reflow's scroll event before the
// ResizeObserver's callback: the scroll handler then sees the size change
// itself and follows instead of concluding the reader scrolled up.
let atBottom = true;
let lastSize = '';
function sizeChanged() {
  const size = el.main.clientWidth + 'x' + el.main.clientHeight;
  const changed = size !== lastSize;
  lastSize = size;
  return changed;
}
function followResize() {
  sizeChanged();
  if (atBottom && !state.archive) el.main.scrollTop = el.main.scrollHeight;
}
sizeChanged();
window.addEventListener('resize', followResize);
if ('ResizeObserver' in window) {
  new ResizeObserver(followResize).observe(el.main);
  // The conversation grows after it was rendered when an image arrives (a
  // thumbnail's size is known only once it has loaded): while following,
  // stay at the bottom — without this a page opened on a message with an
  // image stopped a thumbnail's height above the end.
  const grew = new ResizeObserver(() => {
    if (atBottom && !state.archive && !nearBottomNow()) el.main.scrollTop = el.main.scrollHeight;
  });
  grew.observe(el.log);
  grew.observe(el.pending);
}

function connectionView() {
  if (state.phase === 'live') return Desk.header(state);
  if (net.authNeeded) return ['offline', 'offline: not signed in'];
  if (!navigator.onLine) return ['offline', 'offline: no network'];
  if (state.phase !== 'down') return ['reconnecting', net.everConnected ? 'reconnecting…' : 'connecting…'];
  if (net.serverFull) {
    const secs = Math.max(1, Math.ceil((net.retryAt - Date.now()) / 1000));
    return ['offline', 'server full (too many clients), retrying in ' + secs + ' s'];
  }
  if (net.serverRestarting) return ['reconnecting', 'server restarting, reconnecting…'];
  // After a few failed tries call it what it is, and offer a manual retry.
  if (net.attempts >= 4) return ['offline', 'offline, retrying'];
  return ['reconnecting', net.everConnected ? 'reconnecting…' : 'connecting…'];
}

function updateTitle() {
  const t = Core.isBusy(state) ? 'working… — frontdesk' : 'frontdesk';
  if (document.title !== t) document.title = t;
}

// The item nearest the top of the viewport, and where it is: after the
// list changes above it (an older page prepended, a day divider added) it
// is put back there, so reading is never yanked. Binary search: items are
// in order, and there may be thousands.
function topAnchor() {
  const kids = el.log.children;
  if (!kids.length) return null;
  const top = el.main.getBoundingClientRect().top;
  let lo = 0;
  let hi = kids.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (kids[mid].getBoundingClientRect().bottom <= top) lo = mid + 1; else hi = mid;
  }
  const key = keyOfNode.get(kids[lo]);
  return key ? { key, top: kids[lo].getBoundingClientRect().top } : null;
}

function bottomSig(list) {
  const last = list[list.length - 1];
  return (last ? last.key + ':' + last.rev : '') + '|' + state.pending.length;
}

let lastView = null;
let lastEpoch = 0;
let lastBottom = '';
let shownFocusSerial = 0;
let lastScrollTop = 0;

function render() {
  const v = Core.shown(state);
  const inArchive = !!state.archive;
  const switched = v !== lastView;
  lastView = v;
  if (switched || state.epoch !== lastEpoch) {
    // Another view (a reset cleared it, a jump opened the archive): the
    // reader has not scrolled in it yet.
    wantOlder = wantNewer = false;
    lastEpoch = state.epoch;
  }
  const focus = state.focus && state.focus.serial !== shownFocusSerial ? state.focus : null;
  // Follow the conversation when at its bottom; in the archive, or while a
  // jump or a join (the archive becoming live) places the view, do not.
  const stick = !inArchive && !switched && !focus && (nearBottom() || atBottom);
  const anchor = stick || focus ? null : topAnchor();

  // header: connection indicator (text, not colour alone)
  const [connState, connText] = connectionView();
  el.conn.dataset.state = connState;
  if (el.connText.textContent !== connText) el.connText.textContent = connText;
  el.retry.hidden = !(state.phase === 'down' && !net.authNeeded && connState === 'offline');

  // conversation: the live view or the archive, with day dividers
  const list = Core.withDays(v.items, dayKey, dayKeyOf(new Date()));
  reconcile(el.log, list, itemCache, (it) => views[it.kind] || views.notice);
  reconcile(el.pending, state.pending, pendingCache, () => pendingView);
  el.pending.hidden = inArchive;
  el.empty.hidden = v.items.length > 0 || (!inArchive && state.pending.length > 0);
  el.empty.textContent = state.phase === 'live' ? 'No messages yet.'
    : net.authNeeded ? 'Sign in to see the conversation.'
    : net.serverFull ? 'The server has as many clients as it takes: the conversation appears once a place is free.'
    : connState === 'offline' ? 'Not connected: the conversation appears once the server is reachable.' : 'Connecting…';
  renderEdges(v);
  renderArchiveBar();
  renderSearch();
  renderTray();

  // status line: only while a turn runs; Cancel only while it can be sent
  const busy = Core.isBusy(state);
  const line = Core.statusLine(state);
  el.status.hidden = !line;
  if (line) {
    el.status.dataset.kind = line.kind;
    if (el.statusText.textContent !== line.text) el.statusText.textContent = line.text;
  }

  // composer: Send says why it is off (or what it will do) in words
  el.cancel.hidden = !busy || state.phase !== 'live';
  el.cancel.disabled = !busy || state.phase !== 'live' || state.cancelRequested;
  el.cancel.textContent = state.cancelRequested ? 'Cancelling…' : 'Cancel';
  const comp = net.authNeeded ? { canSend: true, kind: 'offline', reason: 'Sign in above to connect; what you send meanwhile is kept.' }
    : Core.composer(state);
  el.send.disabled = !comp.canSend || nothingToSend();
  el.send.textContent = comp.kind === 'queue' ? 'Queue' : 'Send';
  el.reason.hidden = !comp.reason;
  el.reason.dataset.kind = comp.kind;
  if (el.reason.textContent !== comp.reason) el.reason.textContent = comp.reason;
  el.statusRow.hidden = el.status.hidden && el.reason.hidden;
  el.reset.disabled = state.phase !== 'live' || state.resetRequested;

  if (state.note && state.note.serial !== shownNoteSerial) {
    shownNoteSerial = state.note.serial;
    showNote(state.note.kind, state.note.text);
  }

  // screen readers: one polite announcement per render for what arrived live
  if (state.announce.length) {
    el.announcer.textContent = clip(state.announce.join('\n'), 1000);
    state.announce.length = 0;
  }

  updateTitle();

  // scrolling: follow the bottom, keep the reading place, or go where asked
  const sig = bottomSig(list);
  if (focus) {
    shownFocusSerial = focus.serial;
    if (focus.bottom) {
      clearHit();
      el.main.scrollTop = el.main.scrollHeight;
    } else {
      showTarget(v, focus);
    }
  } else if (stick) {
    el.main.scrollTop = el.main.scrollHeight;
  } else if (anchor) {
    const rec = itemCache.get(anchor.key);
    if (rec && rec.node.isConnected) {
      const dy = rec.node.getBoundingClientRect().top - anchor.top;
      if (Math.abs(dy) >= 1) el.main.scrollTop += dy;
    }
  }
  if (inArchive || nearBottom()) el.jump.hidden = true;
  else if ((sig !== lastBottom && !switched && !focus) || farFromBottom()) el.jump.hidden = false; // something new, or far, below
  lastBottom = sig;
  atBottom = !inArchive && nearBottom();
  // What we scrolled (or the browser clamped) is not the reader scrolling:
  // only moves from here on say "they want older messages".
  lastScrollTop = el.main.scrollTop;
  autoLoad();
}

// The top of the shown view: a button to load older messages (also for
// keyboards; it keeps focus while it loads), the error with "Try again", or
// "Beginning of the conversation". In the archive the bottom has the same
// for newer messages.
function renderEdges(v) {
  const os = Core.olderState(state);
  el.older.hidden = os === 'none';
  el.older.dataset.state = os;
  const olderText = os === 'start' ? 'Beginning of the conversation'
    : os === 'error' ? 'Could not load earlier messages: ' + v.older.error : '';
  if (el.olderText.textContent !== olderText) el.olderText.textContent = olderText;
  el.olderText.hidden = !olderText;
  if (os === 'start' && document.activeElement === el.olderLoad) el.main.focus({ preventScroll: true });
  el.olderLoad.hidden = os === 'start' || os === 'none';
  el.olderLoad.textContent = os === 'loading' ? 'Loading earlier messages…' : os === 'error' ? 'Try again' : 'Load earlier messages';
  el.olderLoad.setAttribute('aria-disabled', String(os === 'loading'));

  const ar = state.archive;
  const ns = !ar || ar.atEnd ? 'none' : ar.newer.loading ? 'loading' : ar.newer.error ? 'error' : 'more';
  el.newer.hidden = ns === 'none';
  el.newer.dataset.state = ns;
  const newerText = ns === 'error' ? 'Could not load newer messages: ' + ar.newer.error : '';
  if (el.newerText.textContent !== newerText) el.newerText.textContent = newerText;
  el.newerText.hidden = !newerText;
  el.newerLoad.textContent = ns === 'loading' ? 'Loading newer messages…' : ns === 'error' ? 'Try again' : 'Load newer messages';
  el.newerLoad.setAttribute('aria-disabled', String(ns === 'loading'));
}

function renderArchiveBar() {
  const ar = state.archive;
  el.archiveBar.hidden = !ar;
  if (!ar) return;
  const text = 'Viewing earlier messages' + (ar.unseen ? ' · ' + ar.unseen + ' new' : '');
  if (el.archiveText.textContent !== text) el.archiveText.textContent = text;
}

// ── scroll-back: load older (or, in the archive, newer) messages when the
// reader scrolls near an edge. Only the reader's own moves count: a page
// that merely fits the screen (right after a reset, say) is not filled
// with old history unasked — the button is there for that.
const EDGE_MARGIN = 800; // px beyond the viewport: load before the edge shows
let wantOlder = false;
let wantNewer = false;
let nearOlder = false;
let nearNewer = false;

function autoLoad() {
  // IntersectionObserver says when an edge comes near; its answer may be a
  // frame old (a page was just prepended), so the geometry is checked too.
  if (wantOlder && nearOlder && Core.olderState(state) === 'more' &&
      el.older.getBoundingClientRect().bottom > el.main.getBoundingClientRect().top - EDGE_MARGIN) {
    dispatch({ type: 'load-older' });
  }
  const ar = state.archive;
  if (wantNewer && nearNewer && ar && !ar.atEnd && !ar.newer.loading && !ar.newer.error &&
      el.newer.getBoundingClientRect().top < el.main.getBoundingClientRect().bottom + EDGE_MARGIN) {
    dispatch({ type: 'load-newer' });
  }
}

if ('IntersectionObserver' in window) {
  const io = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (e.target === el.older) nearOlder = e.isIntersecting;
      if (e.target === el.newer) nearNewer = e.isIntersecting;
    }
    autoLoad();
  }, { root: el.main, rootMargin: EDGE_MARGIN + 'px 0px ' + EDGE_MARGIN + 'px 0px' });
  io.observe(el.older);
  io.observe(el.newer);
} else {
  nearOlder = nearNewer = true; // the geometry check in autoLoad decides
}

// showNote shows a note by the composer for 8 s; a 'wait' note (the page
// waits for the desk) stays until the input is answered, which clears it
// (an empty text hides the note).
function showNote(kind, text) {
  clearTimeout(noteTimer);
  el.note.textContent = text;
  el.note.dataset.kind = kind;
  el.note.hidden = !text;
  if (text && kind !== 'wait') noteTimer = setTimeout(() => { el.note.hidden = true; }, 8000);
}
el.main.addEventListener('scroll', () => {
  if (sizeChanged()) { // a resize's reflow, not the reader
    followResize();
    lastScrollTop = el.main.scrollTop;
    return;
  }
  const t = el.main.scrollTop;
  const up = t < lastScrollTop - 1;
  if (up) wantOlder = true;
  else if (t > lastScrollTop + 1) wantNewer = true;
  lastScrollTop = t;
  // Only a move up stops following: our own scroll to the bottom may land
  // short when more grew meanwhile (a second image loaded before this event).
  atBottom = !state.archive && (nearBottom() || (atBottom && !up));
  if (atBottom || state.archive) el.jump.hidden = true;
  else if (farFromBottom()) el.jump.hidden = false;
  autoLoad();
}, { passive: true });
// A wheel or keys towards an edge also count when the view cannot scroll.
el.main.addEventListener('wheel', (e) => {
  if (e.deltaY < 0) wantOlder = true; else if (e.deltaY > 0) wantNewer = true;
  autoLoad();
}, { passive: true });
el.main.addEventListener('keydown', (e) => {
  if (['PageUp', 'Home', 'ArrowUp'].includes(e.key)) wantOlder = true;
  if (['PageDown', 'End', 'ArrowDown'].includes(e.key)) wantNewer = true;
});
el.jump.addEventListener('click', () => { el.main.scrollTop = el.main.scrollHeight; el.jump.hidden = true; });

el.olderLoad.addEventListener('click', () => {
  if (el.olderLoad.getAttribute('aria-disabled') === 'true') return;
  wantOlder = true;
  dispatch({ type: 'load-older' });
});
el.newerLoad.addEventListener('click', () => {
  if (el.newerLoad.getAttribute('aria-disabled') === 'true') return;
  wantNewer = true;
  dispatch({ type: 'load-newer' });
});
el.archiveBack.addEventListener('click', () => {
  dispatch({ type: 'back-to-live' });
  el.input.focus({ preventScroll: true });
});

export { scheduleRender, render, updateTitle, showNote, nearBottom, nothingToSend };
