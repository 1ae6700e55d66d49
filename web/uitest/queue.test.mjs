// Tests of queued inputs in the reducer (user.queued, turn_start, a turn_end
// "replaced"; docs/protocol.md "Queued inputs"): a queued input is shown
// waiting and does not make the session busy; turn_start does; a replaced
// one never ran; unknown event types are tolerated. Run by TestUIQueueCore.
import assert from 'node:assert';
import * as Core from '../static/core.js';
import { ev, frame, connect } from './harness.mjs';

const user = (s, turn) => s.items.find((i) => i.kind === 'user' && i.turn === turn);

// 1. an email behind a running turn: shown as waiting, the running turn stays the one running
let s = Core.initialState();
connect(s, {}, []);
frame(s, ev(1, 'user', 't1', { channel: 'web', content: 'long job' }));
frame(s, ev(2, 'delta', 't1', { text: 'Work' }));
frame(s, ev(3, 'user', 't3', { channel: 'email', from: 'ann@example.com', content: 'Lunch?', queued: true }));
assert.deepStrictEqual(s.openTurns, ['t1'], 'a queued input is not a running turn');
assert.strictEqual(user(s, 't3').queue, 'waiting');
assert.strictEqual(user(s, 't1').queue, '');
assert.strictEqual(Core.statusLine(s).text, 'Replying to web…', 'the status names the running turn, not the queued one');
assert.match(s.announce.at(-1), /^email · ann@example.com message, queued: Lunch\?$/);
// it sits where it arrived (after the reply that had started streaming)
frame(s, ev(4, 'delta', 't1', { text: 'ing' }));
frame(s, ev(5, 'assistant', 't1', { content: 'Working done' }));
frame(s, ev(6, 'turn_end', 't1', { status: 'completed', duration_ms: 900 }));
assert.deepStrictEqual(s.items.map((i) => i.kind + ':' + (i.turn || '')), ['user:t1', 'assistant:t1', 'user:t3']);
assert(!Core.isBusy(s), 'the running turn ended; the queued one has not started');
assert.strictEqual(user(s, 't3').queue, 'waiting');

// 2. turn_start: it runs now — busy, badge gone, its reply after
const rev = user(s, 't3').rev;
frame(s, ev(7, 'turn_start', 't3', { input_seq: 3, waited_ms: 8200 }));
assert(Core.isBusy(s));
assert.deepStrictEqual(s.openTurns, ['t3']);
assert.strictEqual(user(s, 't3').queue, '');
assert(user(s, 't3').rev > rev, 'the item is redrawn');
assert.strictEqual(Core.statusLine(s).text, 'Replying to email · ann@example.com…');
frame(s, ev(8, 'assistant', 't3', { content: 'Sure.' }));
frame(s, ev(9, 'turn_end', 't3', { status: 'completed' }));
assert(!Core.isBusy(s));
assert.deepStrictEqual(s.items.map((i) => i.kind + ':' + (i.turn || '')), ['user:t1', 'assistant:t1', 'user:t3', 'assistant:t3']);
// one that arrives before the running reply's first word sits above that reply
s = Core.initialState();
connect(s, {}, []);
frame(s, ev(1, 'user', 't1', { channel: 'web', content: 'go' }));
frame(s, ev(2, 'user', 't2', { channel: 'email', content: 'later', queued: true }));
frame(s, ev(3, 'delta', 't1', { text: 'reply' }));
frame(s, ev(4, 'assistant', 't1', { content: 'reply' }));
frame(s, ev(5, 'turn_end', 't1', { status: 'completed' }));
frame(s, ev(6, 'turn_start', 't2', { input_seq: 2, waited_ms: 40 }));
frame(s, ev(7, 'assistant', 't2', { content: 'answer' }));
frame(s, ev(8, 'turn_end', 't2', { status: 'completed' }));
assert.deepStrictEqual(s.items.map((i) => i.kind + ':' + (i.turn || '')), ['user:t1', 'user:t2', 'assistant:t1', 'assistant:t2']);

// 3. queued while idle (recorded, not yet started) does not mark the session busy
frame(s, ev(10, 'user', 't10', { channel: 'schedule', content: 'water the plants', queued: true }));
assert(!Core.isBusy(s));
assert.strictEqual(Core.composer(s).canSend, true);

// 4. replaced under busy_policy queue: it never ran — no turn-end line, the
// notice says it, and the running turn is still running
s = Core.initialState();
connect(s, { busy_policy: 'queue' }, []);
frame(s, ev(1, 'user', 't1', { channel: 'web', content: 'first' }));
frame(s, ev(2, 'user', 't2', { channel: 'web', content: 'second', queued: true }));
frame(s, ev(3, 'user', 't3', { channel: 'web', content: 'third', queued: true }));
frame(s, ev(4, 'notice', null, { text: 'A newer message replaced “second”; it will not run.' }));
frame(s, ev(5, 'turn_end', 't2', { status: 'replaced' }));
assert.deepStrictEqual(s.openTurns, ['t1'], 'a replaced turn_end does not end the running turn');
assert.strictEqual(user(s, 't2').queue, 'replaced');
assert.strictEqual(user(s, 't3').queue, 'waiting');
assert.deepStrictEqual(s.items.filter((i) => i.kind === 'turn_end'), []);
assert.strictEqual(s.items.filter((i) => i.kind === 'notice').length, 1);
// a cancel ends the running turn only; the waiting one goes on
frame(s, ev(6, 'turn_end', 't1', { status: 'cancelled' }));
assert(!Core.isBusy(s));
assert.strictEqual(user(s, 't3').queue, 'waiting');
frame(s, ev(7, 'turn_start', 't3', { input_seq: 3, waited_ms: 10 }));
assert.deepStrictEqual(s.openTurns, ['t3']);

// even with nothing known to be running, a replaced turn_end ends nothing
s = Core.initialState();
connect(s, { busy: true }, []);
assert.deepStrictEqual(s.openTurns, ['?']);
frame(s, ev(50, 'turn_end', 't40', { status: 'replaced' }));
assert(Core.isBusy(s), 'the unknown running turn is still running');

// 5. the replay: a running turn and a queued input; connected.busy wins as before
s = Core.initialState();
connect(s, { busy: true }, [ev(1, 'user', 't1', { channel: 'web', content: 'a' }), ev(2, 'user', 't2', { channel: 'email', content: 'b', queued: true })], false);
assert.deepStrictEqual(s.openTurns, ['t1']);
assert.strictEqual(user(s, 't2').queue, 'waiting');
// … and a queued input that started before we joined
s = Core.initialState();
connect(s, { busy: true }, [ev(1, 'user', 't1', { channel: 'email', content: 'b', queued: true }), ev(2, 'turn_start', 't1', { input_seq: 1, waited_ms: 5 })], false);
assert.deepStrictEqual(s.openTurns, ['t1']);
assert.strictEqual(user(s, 't1').queue, '');

// 6. our message queued: the echo settles it; the busy{queued} after it marks nothing else
s = Core.initialState();
connect(s, { busy: true, busy_policy: 'queue' }, []);
Core.reduce(s, { type: 'submit', id: 'c1', content: 'mine' });
Core.reduce(s, { type: 'submit', id: 'c2', content: 'also mine' });
frame(s, ev(5, 'user', 't5', { channel: 'web', content: 'mine', client_msg_id: 'c1', queued: true }));
frame(s, { type: 'busy', data: { turn: 't5', queued: true, client_msg_id: 'c1', message: 'Queued.' } });
assert.deepStrictEqual(s.pending.map((p) => [p.id, p.state]), [['c2', 'sent']], 'the other message is not taken for queued');
assert.strictEqual(user(s, 't5').mine, true);

// 7. older pages: a queued input there ran (or was replaced) long ago
s = Core.initialState();
connect(s, { last_seq: 300 }, [ev(300, 'user', 't300', { channel: 'web', content: 'now' })], false);
Core.reduce(s, { type: 'load-older' });
const [req] = s.requests.splice(0);
Core.reduce(s, { type: 'history-loaded', req, events: [ev(100, 'user', 't100', { channel: 'email', content: 'old', queued: true }), ev(101, 'turn_start', 't100', { input_seq: 100 })] });
assert.strictEqual(user(s, 't100').queue, '');

// 8. event types this UI does not know are skipped, not fatal, and not shown
s = Core.initialState();
connect(s, {}, [ev(1, 'user', 't1', { channel: 'web', content: 'x' })]);
const before = s.items.length;
frame(s, ev(2, 'schedule_fired', null, { id: 'sch1' }));
frame(s, { seq: 3, ts: 'x', type: 'something_new' }); // no data at all
frame(s, { seq: 4, type: 'turn_start', turn: 'nobody' });
assert.strictEqual(s.items.length, before);
assert.strictEqual(s.lastSeq, 4);
frame(s, ev(5, 'assistant', 't1', { content: 'still fine' }));
assert.strictEqual(s.items.at(-1).text, 'still fine');

// 9. a reset keeps a waiting input in view (it runs after the reset) and does not count it as an exchange
s = Core.initialState();
connect(s, {}, []);
frame(s, ev(1, 'user', 't1', { channel: 'web', content: 'old' }));
frame(s, ev(2, 'assistant', 't1', { content: 'r-old' }));
frame(s, ev(3, 'turn_end', 't1', { status: 'completed' }));
frame(s, ev(4, 'user', 't4', { channel: 'web', content: 'kept' }));
frame(s, ev(5, 'user', 't5', { channel: 'email', content: 'waiting', queued: true }));
frame(s, ev(6, 'assistant', 't4', { content: 'r-kept' }));
frame(s, ev(7, 'turn_end', 't4', { status: 'cancelled' }));
frame(s, ev(8, 'reset', null, { reason: 'manual', kept: 1 }));
assert.deepStrictEqual(s.items.map((i) => i.kind + ':' + (i.content ?? i.text)), ['user:kept', 'user:waiting', 'assistant:r-kept',
  'reset:Conversation reset. The assistant keeps the last exchange above as context.']);
assert.strictEqual(user(s, 't5').queue, 'waiting');
frame(s, ev(9, 'reset', null, { reason: 'idle-timeout', kept: 0 }));
assert.deepStrictEqual(s.items.map((i) => i.kind + ':' + (i.content ?? '')), ['user:waiting', 'reset:']);
frame(s, ev(10, 'turn_start', 't5', { input_seq: 5, waited_ms: 3 }));
assert.deepStrictEqual(s.openTurns, ['t5']);
assert.strictEqual(user(s, 't5').queue, '');
