// Tests of erased messages in the reducer (web/static/items.js via
// core.js): a live erased event takes the text out of the user or
// assistant item it names and marks it erased (by whom); a replay that
// holds the tombstones shows them erased from the start; an erased event
// for a message not in view changes nothing.
import assert from 'node:assert';
import * as Core from '../static/core.js';
import { ev, frame, connect } from './harness.mjs';

const turn = (seq, text) => [
  ev(seq, 'user', 't' + seq, { channel: 'web', from: '', content: text }),
  ev(seq + 1, 'assistant', 't' + seq, { content: 'You said ' + text }),
  ev(seq + 2, 'turn_end', 't' + seq, { status: 'completed', duration_ms: 5 }),
];
const msg = (s, kind) => s.items.find((i) => i.kind === kind);

// 1. live: the erased events of the message and of its reply
let s = Core.initialState();
connect(s, { last_seq: 3 }, turn(1, 'the code is quokkablue'));
assert.strictEqual(msg(s, 'user').erased, null);
frame(s, ev(4, 'erased', '', { seq: 1, by: 'web', type: 'user', ts: '2026-11-22T10:00:00.000Z', turn: 't1', channel: 'web' }));
frame(s, ev(5, 'erased', '', { seq: 2, by: 'api', type: 'assistant', ts: '2026-11-22T10:00:00.000Z', turn: 't1' }));
assert.strictEqual(msg(s, 'user').erased, 'web');
assert.strictEqual(msg(s, 'user').content, '');
assert.strictEqual(msg(s, 'assistant').erased, 'api');
assert.strictEqual(msg(s, 'assistant').text, '');
assert.ok(!JSON.stringify(s.items).includes('quokkablue'), 'the erased text is still in the items');
assert.strictEqual(s.lastSeq, 5);

// 2. replay: the tombstones stand for the messages
s = Core.initialState();
connect(s, { last_seq: 5 }, [
  ev(1, 'user', 't1', { erased: true, erased_by: 'console', channel: 'web', content: '' }),
  ev(2, 'assistant', 't1', { erased: true, erased_by: 'console', content: '' }),
  ev(3, 'turn_end', 't1', { status: 'completed', duration_ms: 5 }),
  ev(4, 'erased', '', { seq: 1, by: 'console', type: 'user', turn: 't1', channel: 'web' }),
  ev(5, 'erased', '', { seq: 2, by: 'console', type: 'assistant', turn: 't1' }),
]);
assert.strictEqual(msg(s, 'user').erased, 'console');
assert.strictEqual(msg(s, 'assistant').erased, 'console');

// 3. an erased event for a message not in view changes nothing
s = Core.initialState();
connect(s, { last_seq: 103 }, turn(101, 'hello'));
frame(s, ev(104, 'erased', '', { seq: 7, by: 'web', type: 'user', turn: 't7', channel: 'web' }));
assert.strictEqual(msg(s, 'user').erased, null);
assert.strictEqual(msg(s, 'user').content, 'hello');
