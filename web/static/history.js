// history.js — owns the history part of the state: scroll-back pages of
// older events (prepended, deduplicated by seq), the archive window a far
// jump opens, jumps to a search hit, the search box's state, and the pure
// helpers the view uses to show them (highlight, day dividers). Pure: it asks
// for HTTP requests by pushing onto s.requests; shell.js runs them and
// dispatches the answers back. reduceHistory handles its actions.

import { idleLoad, touch, setNote, addItem, hasSeq } from './items.js';

// A page's items are built on their own, then merged into a view: an item
// whose key the view already has (a turn cut by the page boundary: its
// tool_call in the page, its tool_result shown) gets the missing fields
// instead of a second copy.
function buildItems(s, events) {
  const v = { items: [], byKey: new Map() };
  for (const ev of events) addItem(s, v, ev, true);
  return v;
}

function mergeInto(v, built, front) {
  const add = [];
  for (const it of built.items) {
    const cur = v.byKey.get(it.key);
    if (!cur) { add.push(it); v.byKey.set(it.key, it); continue; }
    for (const k of Object.keys(it)) {
      if (k !== 'key' && k !== 'kind' && k !== 'rev' && (cur[k] === undefined || cur[k] === null || cur[k] === '')) cur[k] = it[k];
    }
    touch(cur);
  }
  v.items = front ? add.concat(v.items) : v.items.concat(add);
  return add.length;
}

const bySeq = (a, b) => a.seq - b.seq;

// prependEvents adds a page covering [from, v.firstSeq-1] above view v.
function prependEvents(s, v, events, from) {
  const fresh = events.filter((e) => hasSeq(e) && (v.firstSeq === null || e.seq < v.firstSeq)).sort(bySeq);
  const n = mergeInto(v, buildItems(s, fresh), true);
  v.firstSeq = v.firstSeq === null ? from : Math.min(v.firstSeq, from);
  return n;
}

// The page size adapts: a window of seq numbers expected to hold about
// PAGE_EVENTS persisted events (a streamed reply spends a seq per delta).
const PAGE_EVENTS = 120;
const RANGE_LIMIT = 1000; // the server's cap for one /api/history/range answer
const pageWindow = (s) => Math.max(100, Math.min(20000, Math.round(PAGE_EVENTS / s.density)));
function learnDensity(s, count, span) {
  if (span >= 20) s.density = Math.max(0.0005, Math.min(1, Math.max(count, 1) / span));
}

function request(s, req) {
  req.id = ++s.reqSerial;
  s.requests.push(req);
  return req;
}

// The view shown: the archive while one is open, else the live view.
const shown = (s) => s.archive || s;
const atStart = (v) => v.firstSeq !== null && v.firstSeq <= 1;
const canLoadOlder = (v) => !!v && v.firstSeq !== null && v.firstSeq > 1 && !v.older.loading;

function loadOlder(s) {
  const v = shown(s);
  if (!canLoadOlder(v)) return;
  const to = v.firstSeq - 1;
  const from = Math.max(1, to - pageWindow(s) + 1);
  v.older = { loading: true, error: '', acc: [], start: from };
  request(s, { kind: 'older', where: v === s ? 'live' : 'archive', epoch: v.epoch, from, to, limit: RANGE_LIMIT });
}

function loadNewer(s) {
  const ar = s.archive;
  if (!ar || ar.atEnd || ar.newer.loading) return;
  const from = ar.lastSeq + 1;
  const to = s.firstSeq !== null ? s.firstSeq - 1 : null;
  if (to !== null && from > to) { join(s); return; }
  ar.newer = { loading: true, error: '', acc: null, start: from };
  request(s, { kind: 'newer', where: 'archive', epoch: ar.epoch, liveEpoch: s.epoch, from, to, limit: 300 });
}

function newArchive(s, events, from, lastSeq) {
  const ar = buildItems(s, events.filter(hasSeq).sort(bySeq));
  return Object.assign(ar, { firstSeq: from, lastSeq, epoch: ++s.epochs, older: idleLoad(), newer: idleLoad(), atEnd: false, unseen: 0 });
}

// join: the archive reached the live view; they become one.
function join(s) {
  const ar = s.archive;
  s.archive = null;
  mergeInto(s, ar, true);
  s.firstSeq = s.firstSeq === null ? ar.firstSeq : Math.min(s.firstSeq, ar.firstSeq);
}

function setFocus(s, f) {
  s.focus = Object.assign({ serial: ++s.focusSerial }, f);
}

// jump shows the event seq (a search hit): at once when a view holds it,
// else after one page. A page from a little before it up to the live view
// that fits in one answer is prepended to the live view (one conversation,
// scroll down to the present); a larger gap opens the archive window.
function jump(s, seq, moveFocus) {
  s.jumping = null;
  if (s.firstSeq !== null && seq >= s.firstSeq) {
    s.archive = null;
    setFocus(s, { seq, moveFocus });
    return;
  }
  const ar = s.archive;
  if (ar && seq >= ar.firstSeq && seq <= ar.lastSeq) {
    setFocus(s, { seq, moveFocus });
    return;
  }
  const before = Math.max(40, Math.min(900, Math.round(30 / s.density)));
  const from = Math.max(1, seq - before);
  const to = s.firstSeq !== null ? s.firstSeq - 1 : null;
  s.jumping = { seq, serial: ++s.focusSerial, moveFocus };
  request(s, { kind: 'jump', seq, serial: s.jumping.serial, epoch: s.epoch, from, to, limit: RANGE_LIMIT });
}

function viewFor(s, req) {
  if (req.where === 'live') return req.epoch === s.epoch ? s : null;
  return s.archive && s.archive.epoch === req.epoch ? s.archive : null;
}

function historyLoaded(s, req, events, truncated) {
  events = Array.isArray(events) ? events : [];
  const last = events.length ? events[events.length - 1] : null;
  if (req.kind === 'older') {
    const v = viewFor(s, req);
    if (!v || !v.older.loading) return; // the view was cleared or replaced meanwhile
    v.older.acc.push(...events);
    if (truncated && last && hasSeq(last) && last.seq < req.to) {
      // More than one answer's worth: fetch the rest up to the view, so no gap opens.
      request(s, Object.assign({}, req, { from: last.seq + 1 }));
      return;
    }
    const all = v.older.acc;
    const from = v.older.start;
    v.older = idleLoad();
    const n = prependEvents(s, v, all, from);
    learnDensity(s, all.length, req.to - from + 1);
    if (n > 0) s.announce.push('Loaded ' + n + ' earlier item' + (n === 1 ? '' : 's') + '.');
    if (atStart(v)) s.announce.push('Beginning of the conversation.');
    return;
  }
  if (req.kind === 'newer') {
    const ar = viewFor(s, req);
    if (!ar || !ar.newer.loading) return;
    ar.newer = idleLoad();
    const fresh = events.filter((e) => hasSeq(e) && e.seq > ar.lastSeq).sort(bySeq);
    mergeInto(ar, buildItems(s, fresh), false);
    if (truncated && last) { ar.lastSeq = Math.max(ar.lastSeq, last.seq); return; }
    if (req.to === null) { ar.lastSeq = last ? Math.max(ar.lastSeq, last.seq) : ar.lastSeq; ar.atEnd = true; return; }
    ar.lastSeq = req.to;
    // The live view was cleared meanwhile (a reset): its top moved; ask again.
    if (req.liveEpoch !== s.epoch || s.firstSeq === null) { loadNewer(s); return; }
    join(s);
    return;
  }
  if (req.kind === 'jump') {
    if (!s.jumping || s.jumping.serial !== req.serial) return; // a newer jump replaced it
    const { moveFocus } = s.jumping;
    s.jumping = null;
    if (req.epoch !== s.epoch) { jump(s, req.seq, moveFocus); return; } // the live view changed: plan again
    if (!truncated && s.firstSeq !== null && req.to !== null) {
      prependEvents(s, s, events, req.from);
      s.archive = null;
    } else {
      const lastSeq = truncated && last ? last.seq : req.to !== null ? req.to : last ? last.seq : req.from;
      s.archive = newArchive(s, events, req.from, lastSeq);
      if (!truncated && req.to === null) s.archive.atEnd = true;
    }
    setFocus(s, { seq: req.seq, moveFocus });
  }
}

function historyFailed(s, req, error) {
  const text = String(error || 'failed');
  if (req.kind === 'older' || req.kind === 'newer') {
    const v = viewFor(s, req);
    if (!v) return;
    if (req.kind === 'older') v.older = Object.assign(idleLoad(), { error: text });
    else v.newer = Object.assign(idleLoad(), { error: text });
    s.announce.push('Could not load ' + (req.kind === 'older' ? 'earlier' : 'newer') + ' messages: ' + text);
  } else if (req.kind === 'jump') {
    if (!s.jumping || s.jumping.serial !== req.serial) return;
    s.jumping = null;
    setNote(s, 'error', 'Could not open that message: ' + text);
  } else if (req.kind === 'search') {
    if (req.serial !== s.search.serial) return;
    Object.assign(s.search, { status: 'error', error: text, hits: [] });
  }
}

function search(s, q) {
  const sr = s.search;
  sr.query = String(q ?? '').trim();
  if (!sr.query) {
    Object.assign(sr, { status: 'idle', hits: [], error: '', forQuery: '' });
    sr.serial++; // drops an answer still on its way
    return;
  }
  Object.assign(sr, { status: 'loading', error: '' });
  request(s, { kind: 'search', q: sr.query, serial: ++sr.serial, limit: 50 });
}

// What the top of the shown view offers: 'none' (nothing shown), 'start'
// (seq 1 is shown), 'loading', 'error' or 'more'.
function olderState(s) {
  const v = shown(s);
  if (v.firstSeq === null) return 'none';
  if (v.older.loading) return 'loading';
  if (v.older.error) return 'error';
  return atStart(v) ? 'start' : 'more';
}

// The item that shows event seq: the one made by it, else (an event that
// has no item of its own) the next one after it.
function itemForSeq(items, seq) {
  let best = null;
  for (const it of items) {
    if (typeof it.seq !== 'number') continue;
    if (it.seq === seq) return it;
    if (it.seq > seq && (!best || it.seq < best.seq)) best = it;
  }
  return best;
}

// findMatches returns the [start, end) ranges of query in text, compared as
// the server's search does: case-insensitively, any whitespace matching any
// (snippets have their line breaks flattened to spaces).
function findMatches(text, query) {
  const fold = (str) => Array.from(String(str ?? ''), (c) => {
    if (/\s/.test(c)) return ' ';
    const l = c.toLowerCase();
    return l.length === c.length ? l : c;
  }).join('');
  const t = fold(text);
  const q = fold(query).trim();
  const out = [];
  if (!q || t.length !== String(text ?? '').length) return out; // folding must keep offsets
  for (let i = t.indexOf(q); i >= 0; i = t.indexOf(q, i + q.length)) out.push([i, i + q.length]);
  return out;
}

// highlight splits text into [{text, mark}] runs for a snippet with the
// query marked; the view makes text nodes and <mark>s of them. query may
// be a list of terms (the words the server marked in a hit): each is marked.
function highlight(text, query) {
  text = String(text ?? '');
  const terms = Array.isArray(query) ? query : [query];
  const ranges = terms.flatMap((q) => findMatches(text, q)).sort((x, y) => x[0] - y[0] || y[1] - x[1]);
  const out = [];
  let at = 0;
  for (const [a, b] of ranges) {
    if (a < at) continue; // inside the previous mark
    if (a > at) out.push({ text: text.slice(at, a), mark: false });
    out.push({ text: text.slice(a, b), mark: true });
    at = b;
  }
  if (at < text.length || !out.length) out.push({ text: text.slice(at), mark: false });
  return out;
}

// marked splits a search hit's snippet into [{text, mark}] runs: the
// server marks each matched word «like this» (stemmed matches included,
// which the query's own letters would miss).
function marked(snippet) {
  const out = [];
  for (const [i, part] of String(snippet ?? '').split(/[«»]/).entries()) {
    if (part) out.push({ text: part, mark: i % 2 === 1 });
  }
  return out.length ? out : [{ text: '', mark: false }];
}

// markedTerms lists the distinct words a snippet marks, to find them again
// in the full message.
function markedTerms(snippet) {
  return [...new Set(marked(snippet).filter((p) => p.mark).map((p) => p.text.toLowerCase()))];
}

// withDays puts a day divider before the first item of each day, given
// dayOf(ts) → a key for its local day, or null. The first item gets none when it is of
// today (the usual case: no clutter until history reaches another day).
function withDays(items, dayOf, todayKey) {
  const out = [];
  const used = new Set();
  let prev = null;
  for (const it of items) {
    const d = it.ts ? dayOf(it.ts) : null;
    if (d !== null && d !== prev && !(prev === null && d === todayKey) && !used.has(d)) {
      // rev is today's key: the label ("Today", "Yesterday") is redrawn after midnight.
      out.push({ kind: 'day', key: 'd:' + d, ts: it.ts, rev: todayKey });
      used.add(d);
    }
    if (d !== null) prev = d;
    out.push(it);
  }
  return out;
}

// reduceHistory applies the history actions of the reducer (core.js reduce
// hands over every action it does not know); others are ignored.
function reduceHistory(s, a) {
  switch (a.type) {
    case 'load-older':      // scrolled to the top, or "Load earlier messages"
      loadOlder(s);
      break;
    case 'load-newer':      // the archive: scrolled to its bottom, or "Load newer messages"
      loadNewer(s);
      break;
    case 'history-loaded':  // {req, events, truncated}: an answer of /api/history/range
      historyLoaded(s, a.req, a.events, !!a.truncated);
      break;
    case 'history-failed':  // {req, error}: any history request failed
      historyFailed(s, a.req, a.error);
      break;
    case 'jump':            // {seq, moveFocus}: show that event (a search hit)
      if (typeof a.seq === 'number' && a.seq > 0) jump(s, a.seq, !!a.moveFocus);
      break;
    case 'back-to-live':    // leave the archive, show the present
      s.archive = null;
      s.jumping = null;
      setFocus(s, { bottom: true });
      break;
    case 'search-open':
      s.search.open = true;
      break;
    case 'search-close':
      s.search.open = false;
      s.jumping = null;
      break;
    case 'search':          // {q}: run a search (the shell debounces typing)
      search(s, a.q);
      break;
    case 'search-results':  // {req, hits, mode, broad, semantic}: an answer of /api/history/search
      if (a.req && a.req.serial === s.search.serial) {
        Object.assign(s.search, { status: 'done', hits: Array.isArray(a.hits) ? a.hits : [], mode: a.mode === 'or' ? 'or' : 'and',
          broad: a.broad === true, semantic: typeof a.semantic === 'string' ? a.semantic : '', error: '', forQuery: a.req.q });
      }
      break;
    default:
      break;
  }
}

export { reduceHistory, learnDensity, shown, pageWindow, olderState, itemForSeq, findMatches, highlight, marked,
  markedTerms, withDays };
