// Tests of the history part of the core (web/static/history.js via core.js): scroll-back pages
// prepended and deduplicated, the archive window after a far jump, search
// state, and the pure helpers the view uses (highlight, day dividers).
import assert from 'node:assert';
import * as Core from '../static/core.js';
import { ev, frame, connect } from './harness.mjs';

// A finished turn: user, assistant, turn_end at seq, seq+1, seq+2.
const turn = (seq, text, channel = 'web') => [
  ev(seq, 'user', 't' + seq, { channel, from: '', content: text }),
  ev(seq + 1, 'assistant', 't' + seq, { content: 're: ' + text }),
  ev(seq + 2, 'turn_end', 't' + seq, { status: 'completed', duration_ms: 5 }),
];
const turns = (from, n, prefix = 'm') => Array.from({ length: n }, (_, i) => turn(from + 3 * i, prefix + (from + 3 * i))).flat();
const users = (v) => v.items.filter((i) => i.kind === 'user').map((i) => i.content);
const kinds = (v) => v.items.map((i) => i.kind);
const take = (s) => { const r = s.requests.slice(); s.requests.length = 0; return r; };
const noDuplicateKeys = (v) => {
  const keys = v.items.map((i) => i.key);
  assert.strictEqual(new Set(keys).size, keys.length, 'duplicate item keys: ' + keys.join(' '));
  assert.strictEqual(v.byKey.size, keys.length, 'byKey out of step with items');
};
const loaded = (s, req, events, truncated = false) => Core.reduce(s, { type: 'history-loaded', req, events, truncated });

let s;
let req;

// 1. scroll-back: one request at a time, the page is prepended, what is
// already shown (seq ≥ the view's first) is not added again
s = Core.initialState();
connect(s, { last_seq: 1020 }, turns(1000, 7), false);
assert.strictEqual(s.firstSeq, 1000);
assert.strictEqual(Core.olderState(s), 'more');
assert.deepStrictEqual(take(s), []);
Core.reduce(s, { type: 'load-older' });
Core.reduce(s, { type: 'load-older' }); // still loading: no second request
[req] = take(s);
assert.strictEqual(s.requests.length, 0);
assert.strictEqual(req.kind, 'older');
assert.strictEqual(req.to, 999);
assert.strictEqual(req.from, 999 - Core.pageWindow(s) + 1);
assert.strictEqual(req.limit, 1000);
assert.strictEqual(Core.olderState(s), 'loading');
loaded(s, req, [...turns(990, 3), ...turn(1000, 'm1000'), ...turn(1003, 'm1003')]); // the answer overlaps what is shown
assert.deepStrictEqual(users(s), ['m990', 'm993', 'm996', 'm1000', 'm1003', 'm1006', 'm1009', 'm1012', 'm1015', 'm1018']);
noDuplicateKeys(s);
assert.strictEqual(s.firstSeq, req.from, 'the view covers the whole requested range');
assert.strictEqual(Core.olderState(s), 'more');
assert(s.announce.some((a) => /^Loaded 6 earlier items\.$/.test(a)), s.announce.join('|'));
assert(s.items.every((i) => !i.streaming), 'older replies never stream');
assert.strictEqual(s.lastSeq, 1020, 'older pages do not move the live position (since=)');
assert.strictEqual(Core.isBusy(s), false);

// 2. an answer cut at the limit: the rest is fetched before anything is
// prepended (no gap opens), then the beginning is reached
Core.reduce(s, { type: 'load-older' });
[req] = take(s);
const to = req.to;
assert.strictEqual(to, s.firstSeq - 1);
const head = turns(1, 20, 'old');           // seq 1..60
const tail = turns(61, Math.floor((to - 61 + 1) / 3), 'old'); // up to the view
loaded(s, req, head, true);
const [cont] = take(s);
assert.strictEqual(cont.kind, 'older');
assert.strictEqual(cont.from, 61);
assert.strictEqual(cont.to, to);
assert.strictEqual(users(s)[0], 'm990', 'nothing prepended until the range is complete');
loaded(s, cont, tail);
assert.strictEqual(users(s)[0], 'old1');
assert.strictEqual(Core.olderState(s), 'start');
assert(s.announce.includes('Beginning of the conversation.'));
noDuplicateKeys(s);
const seqs = s.items.filter((i) => i.kind === 'user').map((i) => i.seq);
assert.deepStrictEqual(seqs, seqs.slice().sort((a, b) => a - b), 'in seq order');
Core.reduce(s, { type: 'load-older' });
assert.deepStrictEqual(take(s), [], 'nothing before seq 1');

// 3. a turn cut by the page boundary is merged, not doubled: its tool_call
// is in the page, its tool_result already shown
s = Core.initialState();
connect(s, { last_seq: 52 }, [
  ev(50, 'tool_result', 't48', { id: 'c1', name: 'history_search', output: '2 hits' }),
  ev(51, 'assistant', 't48', { content: 'found them' }),
  ev(52, 'turn_end', 't48', { status: 'completed' }),
], false);
Core.reduce(s, { type: 'load-older' });
[req] = take(s);
loaded(s, req, [ev(48, 'user', 't48', { channel: 'email', from: 'a@b', content: 'what did I say?' }),
  ev(49, 'tool_call', 't48', { id: 'c1', name: 'history_search', args: { query: 'x' } })]);
assert.deepStrictEqual(kinds(s), ['user', 'tool', 'assistant']);
const tool = s.items[1];
assert.deepStrictEqual(tool.args, { query: 'x' });
assert.strictEqual(tool.output, '2 hits');
noDuplicateKeys(s);

// 4. a reset in older history is a divider, not a clear; a reset arriving
// live trims the view to the kept exchanges, and a page asked for the old view is dropped
s = Core.initialState();
connect(s, { last_seq: 26 }, [ev(20, 'reset', null, { reason: 'manual', kept: 1 }), ...turns(21, 2, 'new')], false);
assert.deepStrictEqual(kinds(s), ['reset', 'user', 'assistant', 'user', 'assistant']);
Core.reduce(s, { type: 'load-older' });
[req] = take(s);
assert.strictEqual(req.to, 19);
loaded(s, req, [...turns(1, 3, 'a'), ev(10, 'reset', null, { reason: 'idle-timeout', kept: 2 }), ...turns(11, 3, 'b')]);
assert.deepStrictEqual(users(s), ['a1', 'a4', 'a7', 'b11', 'b14', 'b17', 'new21', 'new24']);
const resets = s.items.filter((i) => i.kind === 'reset');
assert.deepStrictEqual(resets.map((r) => r.text), ['Conversation reset after a quiet spell. The assistant keeps the last 2 exchanges above as context.',
  'Conversation reset. The assistant keeps the last exchange above as context.']);
assert.strictEqual(s.items.indexOf(resets[0]), 6, 'the divider sits where the reset happened');
noDuplicateKeys(s);
// stale answer
s = Core.initialState();
connect(s, { last_seq: 102 }, turns(91, 4), false);
Core.reduce(s, { type: 'load-older' });
[req] = take(s);
frame(s, ev(103, 'reset', null, { reason: 'manual', kept: 1 }));
assert.deepStrictEqual(kinds(s), ['user', 'assistant', 'reset']);
assert.strictEqual(s.firstSeq, 100);
assert.strictEqual(Core.olderState(s), 'more', 'the trimmed view is not loading');
loaded(s, req, turns(1, 5));
assert.deepStrictEqual(kinds(s), ['user', 'assistant', 'reset'], 'a page for the view before the reset is dropped');
// a gapless reconnect keeps the loaded history; a fresh one (gapless=false) starts over
s = Core.initialState();
connect(s, { last_seq: 30 }, turns(22, 3), false);
Core.reduce(s, { type: 'load-older' });
[req] = take(s);
loaded(s, req, turns(1, 7));
assert.strictEqual(users(s).length, 10);
Core.reduce(s, { type: 'socket-closed' });
connect(s, { last_seq: 33 }, turn(31, 'after'), true);
assert.strictEqual(users(s).length, 11);
assert.strictEqual(s.firstSeq, 1);
Core.reduce(s, { type: 'socket-closed' });
connect(s, { last_seq: 40 }, turn(34, 'fresh'), false);
assert.deepStrictEqual(users(s), ['fresh']);
assert.strictEqual(s.firstSeq, 34);

// 5. older turns render like live ones, finished: a tool call without a
// result is not "running", a failed turn says so
s = Core.initialState();
connect(s, { last_seq: 12 }, turns(10, 1), false);
Core.reduce(s, { type: 'load-older' });
[req] = take(s);
loaded(s, req, [
  ev(5, 'user', 't5', { channel: 'console', content: 'x' }),
  ev(6, 'tool_call', 't5', { id: 'k', name: 'history_get_range', args: {} }),
  ev(7, 'notice', null, { text: 'The current request was canceled.' }),
  ev(8, 'turn_end', 't5', { status: 'error', error: 'model unreachable', duration_ms: 2100 }),
]);
assert.deepStrictEqual(kinds(s), ['user', 'tool', 'notice', 'turn_end', 'user', 'assistant']);
assert.strictEqual(s.items[1].output, null);
assert(s.items[1].historic && s.items[1].ended, 'an old tool call is over');
assert.strictEqual(s.items[3].text, 'Error after 2.1 s: model unreachable');
assert.strictEqual(s.items[0].channelKind, 'console');
// live: a tool call left without a result ends with its turn
s = Core.initialState();
connect(s, {}, []);
frame(s, ev(1, 'user', 't1', { channel: 'web', content: 'q' }));
frame(s, ev(2, 'tool_call', 't1', { id: 'a', name: 'n', args: {} }));
assert(!s.items[1].ended);
frame(s, ev(3, 'turn_end', 't1', { status: 'cancelled' }));
assert(s.items[1].ended);

// 6. an error is kept for the view (with "Try again") and announced
s = Core.initialState();
connect(s, { last_seq: 102 }, turns(100, 1), false);
Core.reduce(s, { type: 'load-older' });
[req] = take(s);
Core.reduce(s, { type: 'history-failed', req, error: 'the server did not answer' });
assert.strictEqual(Core.olderState(s), 'error');
assert.strictEqual(s.older.error, 'the server did not answer');
assert(s.announce.some((a) => /Could not load earlier messages: the server did not answer/.test(a)));
Core.reduce(s, { type: 'load-older' });
assert.strictEqual(take(s).length, 1, 'try again');
assert.strictEqual(Core.olderState(s), 'loading');

// 7. jump to an event already shown: focus only, no request
s = Core.initialState();
connect(s, { last_seq: 1020 }, turns(1000, 7), false);
Core.reduce(s, { type: 'jump', seq: 1004, moveFocus: true });
assert.deepStrictEqual(take(s), []);
assert.strictEqual(s.focus.seq, 1004);
assert.strictEqual(s.focus.moveFocus, true);
assert.strictEqual(Core.itemForSeq(s.items, 1004).key, 'a:t1003', 'an assistant hit finds its reply');
assert.strictEqual(Core.itemForSeq(s.items, 1003).content, 'm1003');
assert.strictEqual(Core.itemForSeq(s.items, 1005).content, 'm1006', 'an event without an item: the next item');

// 8. jump to an event not loaded, whose gap fits one answer: it joins the
// live view (one conversation, scroll down to the present)
const focusBefore = s.focus.serial;
Core.reduce(s, { type: 'jump', seq: 950, moveFocus: true });
[req] = take(s);
assert.strictEqual(req.kind, 'jump');
assert.strictEqual(req.to, 999);
assert(req.from < 950 && req.from >= 1);
assert.strictEqual(s.focus.serial, focusBefore, 'the view does not move until the page is in');
assert(s.jumping);
loaded(s, req, turns(req.from + (req.from % 3 === 0 ? 0 : 3 - (req.from % 3)), 20, 'j').filter((e) => e.seq <= 999));
assert.strictEqual(s.archive, null);
assert.strictEqual(s.jumping, null);
assert.strictEqual(s.focus.seq, 950);
assert.strictEqual(s.firstSeq, req.from);
assert(Core.itemForSeq(s.items, 950));
noDuplicateKeys(s);

// 9. a far jump (the answer is cut at the limit): the archive window; the
// live view goes on behind it; scrolling down joins them
s = Core.initialState();
connect(s, { last_seq: 5020 }, turns(5000, 7), false);
const liveItems = s.items.length;
Core.reduce(s, { type: 'jump', seq: 301, moveFocus: false });
[req] = take(s);
assert.strictEqual(req.to, 4999);
loaded(s, req, turns(req.from, 30, 'x'), true);
assert(s.archive, 'archive open');
assert.strictEqual(Core.shown(s), s.archive);
assert.strictEqual(s.items.length, liveItems, 'the live view is untouched');
assert.strictEqual(s.archive.firstSeq, req.from);
assert.strictEqual(s.archive.lastSeq, req.from + 89);
assert.strictEqual(s.focus.seq, 301);
assert(Core.itemForSeq(s.archive.items, 301));
assert(req.from > 1 && req.from < 301);
// live events keep arriving and are counted for the bar
frame(s, ev(5021, 'user', 't5021', { channel: 'email', content: 'meanwhile' }));
frame(s, ev(5022, 'assistant', 't5021', { content: 'ok' }));
frame(s, ev(5023, 'turn_end', 't5021', { status: 'completed' }));
assert.strictEqual(s.archive.unseen, 2);
assert.strictEqual(users(s).pop(), 'meanwhile');
// jumping within the archive needs no request
Core.reduce(s, { type: 'jump', seq: 310 });
assert.deepStrictEqual(take(s), []);
assert.strictEqual(s.focus.seq, 310);
assert(s.archive);
// older in the archive pages the archive, not the live view
Core.reduce(s, { type: 'load-older' });
const [o] = take(s);
assert.strictEqual(o.where, 'archive');
assert.strictEqual(o.to, req.from - 1);
loaded(s, o, turns(o.to - 5, 2, 'y'));
assert.strictEqual(s.archive.firstSeq, o.from);
assert.strictEqual(s.archive.items[0].content, 'y' + (o.to - 5));
assert.strictEqual(s.firstSeq, 5000);
// newer: pages until it reaches the live view, then they are one
Core.reduce(s, { type: 'load-newer' });
let [n] = take(s);
assert.strictEqual(n.kind, 'newer');
assert.strictEqual(n.from, s.archive.lastSeq + 1);
assert.strictEqual(n.to, 4999);
const mid = turns(n.from, 100, 'z');
loaded(s, n, mid, true);
assert(s.archive, 'still a window: the answer was cut');
assert.strictEqual(s.archive.lastSeq, mid[mid.length - 1].seq);
Core.reduce(s, { type: 'load-newer' });
[n] = take(s);
loaded(s, n, [...turns(n.from, Math.floor((4999 - n.from + 1) / 3), 'w'), ...turn(5000, 'dup')]);
assert.strictEqual(s.archive, null, 'joined');
assert.strictEqual(Core.shown(s), s);
assert.strictEqual(users(s).filter((u) => u === 'm5000' || u === 'dup').join(), 'm5000', 'the live copy stays, once');
assert.strictEqual(users(s).pop(), 'meanwhile');
noDuplicateKeys(s);
const all = s.items.filter((i) => typeof i.seq === 'number').map((i) => i.seq);
assert.deepStrictEqual(all, all.slice().sort((a, b) => a - b), 'one conversation in seq order');

// 10. back to live; a newer jump replaces an older one still loading
s = Core.initialState();
connect(s, { last_seq: 5020 }, turns(5000, 7), false);
Core.reduce(s, { type: 'jump', seq: 31 });
[req] = take(s);
loaded(s, req, turns(req.from, 30), true);
Core.reduce(s, { type: 'back-to-live' });
assert.strictEqual(s.archive, null);
assert.strictEqual(s.focus.bottom, true);
Core.reduce(s, { type: 'jump', seq: 31 });
const [first] = take(s);
Core.reduce(s, { type: 'jump', seq: 4000 });
const [second] = take(s);
loaded(s, first, turns(first.from, 30), true);
assert.strictEqual(s.archive, null, 'the superseded answer is dropped');
loaded(s, second, turns(second.from - (second.from % 3) + 1, 30), true);
assert(s.archive);
assert.strictEqual(s.focus.seq, 4000);
// a failed jump says so
Core.reduce(s, { type: 'jump', seq: 7 });
[req] = take(s);
Core.reduce(s, { type: 'history-failed', req, error: 'no network' });
assert.strictEqual(s.jumping, null);
assert.match(s.note.text, /Could not open that message: no network/);

// 11. the page size follows how many seqs a persisted event takes
// (streamed replies spend one per delta): sparse replay, wide window
s = Core.initialState();
connect(s, { last_seq: 1151 }, [
  ev(1000, 'user', 't1000', { channel: 'web', content: 'a' }),
  ev(1051, 'assistant', 't1000', { content: 'b' }),
  ev(1052, 'turn_end', 't1000', { status: 'completed' }),
  ev(1100, 'user', 't1100', { channel: 'web', content: 'c' }),
  ev(1151, 'assistant', 't1100', { content: 'd' }),
], false);
const w = Core.pageWindow(s);
assert(w > 1500 && w <= 20000, 'window ' + w);

// 12. search: requests, stale answers dropped, errors kept, empty query idle
s = Core.initialState();
Core.reduce(s, { type: 'search-open' });
assert(s.search.open);
Core.reduce(s, { type: 'search', q: '   ' });
assert.deepStrictEqual(take(s), []);
assert.strictEqual(s.search.status, 'idle');
Core.reduce(s, { type: 'search', q: ' pel ' });
const [q1] = take(s);
Core.reduce(s, { type: 'search', q: 'pelican' });
const [q2] = take(s);
assert.deepStrictEqual([q1.kind, q1.q, q2.q, q2.limit], ['search', 'pel', 'pelican', 50]);
assert.strictEqual(s.search.status, 'loading');
const hits = [{ seq: 9, ts: '2026-11-22T10:00:00.000Z', turn: 't8', type: 'assistant', snippet: '…the Pelican…' }];
Core.reduce(s, { type: 'search-results', req: q2, hits });
Core.reduce(s, { type: 'search-results', req: q1, hits: [] }); // late answer to the older query
assert.strictEqual(s.search.status, 'done');
assert.deepStrictEqual(s.search.hits, hits);
assert.strictEqual(s.search.forQuery, 'pelican');
Core.reduce(s, { type: 'search', q: 'x' });
const [q3] = take(s);
Core.reduce(s, { type: 'history-failed', req: q3, error: 'q must not be empty' });
assert.strictEqual(s.search.status, 'error');
assert.strictEqual(s.search.error, 'q must not be empty');
Core.reduce(s, { type: 'search-close' });
assert(!s.search.open);
assert.strictEqual(s.search.query, 'x', 'the query is kept for the next open');

// 13. highlight: case-insensitive, every occurrence, text only; offsets
// survive characters whose lower case is longer
const hl = (t, q) => Core.highlight(t, q).map((p) => (p.mark ? '[' + p.text + ']' : p.text)).join('');
assert.strictEqual(hl('You said “Pelican crossing” — pelican!', 'pelican'), 'You said “[Pelican] crossing” — [pelican]!');
assert.strictEqual(hl('no match here', 'zeppelin'), 'no match here');
assert.strictEqual(hl('<b>x</b> y', '<b>'), '[<b>]x</b> y');
assert.strictEqual(hl('line one two', 'one\ntwo'), 'line [one two]', 'a line break matches the flattened space');
assert.strictEqual(hl('İstanbul istanbul', 'istanbul'), 'İstanbul [istanbul]');
assert.strictEqual(hl('aaaa', 'aa'), '[aa][aa]');
assert.deepStrictEqual(Core.highlight('', 'x'), [{ text: '', mark: false }]);
assert.deepStrictEqual(Core.findMatches('abc', ''), []);
assert.strictEqual(hl('My sister’s Birthdays, birthday', ['birthdays', 'sister', 'birthday']), 'My [sister]’s [Birthdays], [birthday]',
  'a list of terms: each marked, the longest where they overlap');
const mk = (sn) => Core.marked(sn).map((p) => (p.mark ? '[' + p.text + ']' : p.text)).join('');
assert.strictEqual(mk('My «sister»\'s «birthday» is…'), "My [sister]'s [birthday] is…");
assert.strictEqual(mk('no marks'), 'no marks');
assert.deepStrictEqual(Core.marked(''), [{ text: '', mark: false }]);
assert.deepStrictEqual(Core.markedTerms('«Sister» and «sister» «birthdays»'), ['sister', 'birthdays']);

// 14. day dividers: none above today's first item, one before each new day
const at = (ts, key) => ({ kind: 'user', key, ts, rev: 1 });
const dayOf = (ts) => ts.slice(0, 10);
const withDays = (items, today) => Core.withDays(items, dayOf, today).map((i) => (i.kind === 'day' ? 'day:' + i.key : i.key));
assert.deepStrictEqual(withDays([at('2026-11-22T09:00', 'a'), at('2026-11-22T10:00', 'b')], '2026-11-22'), ['a', 'b']);
assert.deepStrictEqual(withDays([at('2026-11-20T09:00', 'a'), at('2026-11-21T10:00', 'b'), at('2026-11-22T10:00', 'c'), at('2026-11-22T11:00', 'd')], '2026-11-22'),
  ['day:d:2026-11-20', 'a', 'day:d:2026-11-21', 'b', 'day:d:2026-11-22', 'c', 'd']);
assert.deepStrictEqual(withDays([at('2026-11-20T09:00', 'a'), { kind: 'notice', key: 'n' }, at('2026-11-20T10:00', 'b')], '2026-11-22'),
  ['day:d:2026-11-20', 'a', 'n', 'b'], 'items without ts do not split a day');
assert.deepStrictEqual(withDays([at('2026-11-21T23:00', 'a'), at('2026-11-20T01:00', 'b'), at('2026-11-21T23:30', 'c')], '2026-11-22'),
  ['day:d:2026-11-21', 'a', 'day:d:2026-11-20', 'b', 'c'], 'a clock that went back never repeats a key');
assert.strictEqual(Core.withDays([at('2026-11-20T09:00', 'a')], dayOf, '2026-11-22')[0].rev, '2026-11-22', 'relabelled after midnight');

console.log('all history tests passed');
