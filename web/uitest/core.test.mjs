// Tests of the protocol reducer (web/static/core.js): replay, dedupe, busy
// tracking, pending messages. Run by TestUICore (web/web_test.go).
import assert from 'node:assert';
import * as Core from '../static/core.js';
import { ev, frame, connect } from './harness.mjs';
const kinds = (s) => s.items.map((i) => i.kind + (i.text !== undefined ? ':' + i.text : i.content !== undefined ? ':' + i.content : ''));

// 1. basic replay + live stream + dedupe
let s = Core.initialState();
connect(s, {}, [ev(1, 'user', 't1', { channel: 'web', from: '', content: 'hi' }), ev(2, 'assistant', 't1', { content: 'hello' }), ev(3, 'turn_end', 't1', { status: 'completed', duration_ms: 5 })]);
assert.deepStrictEqual(kinds(s), ['user:hi', 'assistant:hello']);
assert.strictEqual(s.lastSeq, 3);
assert.strictEqual(Core.isBusy(s), false);
frame(s, ev(4, 'user', 't4', { channel: 'email', from: 'a@b', content: '<script>x</script>' }));
assert(Core.isBusy(s));
frame(s, ev(0, 'status', 't4', { text: 'working on it' }));
frame(s, { ts: 'x', type: 'delta', turn: 't4', data: { text: 'Hel' } });
frame(s, { ts: 'x', type: 'delta', turn: 't4', data: { text: 'lo' } });
assert.strictEqual(s.byKey.get('a:t4').text, 'Hello');
assert(s.byKey.get('a:t4').streaming);
frame(s, ev(4, 'user', 't4', { channel: 'email', from: 'a@b', content: 'dup' })); // duplicate seq
assert.strictEqual(s.items.filter((i) => i.kind === 'user').length, 2);
frame(s, ev(5, 'assistant', 't4', { content: 'Hello there' }));
frame(s, ev(6, 'turn_end', 't4', { status: 'completed', duration_ms: 50 }));
assert.strictEqual(s.byKey.get('a:t4').text, 'Hello there');
assert.strictEqual(Core.isBusy(s), false);
assert.strictEqual(s.status, '');
assert.strictEqual(s.items[2].label, 'email · a@b');
// live announcements were produced
assert(s.announce.length >= 2);

// 2. reconnect: replay buffered until synced, gapless keeps the view, duplicates ignored
Core.reduce(s, { type: 'socket-closed' });
assert.strictEqual(Core.sinceParam(s), 6);
Core.reduce(s, { type: 'socket-open' });
frame(s, { type: 'connected', data: { session_id: 'S', generation: 1, busy: false, last_seq: 7, resumed: true } });
frame(s, ev(6, 'turn_end', 't4', { status: 'completed' }));
frame(s, ev(7, 'notice', null, { text: 'n7' }));
assert.strictEqual(s.items.length, 4, 'replay must be buffered until synced');
frame(s, { type: 'synced', data: { last_seq: 7, gapless: true } });
assert.deepStrictEqual(kinds(s).slice(-1), ['notice:n7']);
assert.strictEqual(s.items.length, 5);

// 3. non-gapless: clear and render from scratch
Core.reduce(s, { type: 'socket-closed' });
connect(s, { last_seq: 20 }, [ev(15, 'user', 't15', { channel: 'console', from: '', content: 'c' })], false);
assert.deepStrictEqual(kinds(s), ['user:c']);
assert.strictEqual(s.lastSeq, 15);

// 4. reset keeps in view what the assistant keeps (the last `kept`
// exchanges, here all there is) and says so under them
frame(s, ev(16, 'reset', null, { reason: 'idle-timeout', kept: 20 }));
assert.deepStrictEqual(kinds(s), ['user:c', 'reset:Conversation reset after a quiet spell. The assistant keeps the last 20 exchanges above as context.']);
// … and no more than that: three exchanges, kept 1 → the last one (its tool call and reply too)
s = Core.initialState();
connect(s, {}, [
  ev(1, 'user', 't1', { channel: 'web', content: 'one' }), ev(2, 'assistant', 't1', { content: 'r1' }), ev(3, 'turn_end', 't1', { status: 'completed' }),
  ev(4, 'user', 't4', { channel: 'web', content: 'two' }), ev(5, 'assistant', 't4', { content: 'r2' }), ev(6, 'turn_end', 't4', { status: 'completed' }),
  ev(7, 'user', 't7', { channel: 'email', content: 'three' }), ev(8, 'tool_call', 't7', { id: 'x', name: 'history_search', args: {} }),
  ev(9, 'tool_result', 't7', { id: 'x', name: 'history_search', output: 'ok' }), ev(10, 'assistant', 't7', { content: 'r3' }),
  ev(11, 'turn_end', 't7', { status: 'completed' })]);
frame(s, ev(12, 'reset', null, { reason: 'manual', kept: 1 }));
assert.deepStrictEqual(kinds(s), ['user:three', 'tool', 'assistant:r3', 'reset:Conversation reset. The assistant keeps the last exchange above as context.']);
assert.strictEqual(s.firstSeq, 7, 'scroll-back continues before the kept exchange');
assert.deepStrictEqual([...s.byKey.keys()].sort(), s.items.map((i) => i.key).sort(), 'byKey holds exactly the kept items');
frame(s, ev(13, 'reset', null, { reason: 'manual', kept: 0 }));
assert.deepStrictEqual(kinds(s), ['reset:Conversation reset. The assistant starts afresh.']);
assert.strictEqual(s.firstSeq, 13);

// 5. pending: queued offline, sent on synced, removed by echo (even a duplicate echo)
s = Core.initialState();
Core.reduce(s, { type: 'submit', id: 'c-1', content: 'offline msg' });
assert.strictEqual(s.outbox.length, 0);
assert.strictEqual(s.pending[0].state, 'waiting');
connect(s, {}, []);
assert.deepStrictEqual(s.outbox, [{ type: 'message', content: 'offline msg', client_msg_id: 'c-1' }]);
s.outbox.length = 0;
// connection dropped before the echo: resent with the same id next time
Core.reduce(s, { type: 'socket-closed' });
assert.strictEqual(s.pending[0].state, 'waiting');
connect(s, {}, [ev(1, 'user', 't1', { channel: 'web', from: '', content: 'offline msg', client_msg_id: 'c-1' })]);
assert.strictEqual(s.pending.length, 0, 'echo in replay acknowledges');
assert.strictEqual(s.outbox.length, 0, 'not resent after replay echo');
Core.reduce(s, { type: 'submit', id: 'c-2', content: 'again' });
frame(s, ev(1, 'user', 't1', { channel: 'web', client_msg_id: 'c-2', content: 'again' })); // old seq, matching id
assert.strictEqual(s.pending.length, 0, 'duplicate echo still acknowledges');

// 6. busy reply marks the oldest in-flight message; queued keeps it
s = Core.initialState();
connect(s, { busy: true }, []);
assert(Core.isBusy(s), 'connected.busy');
Core.reduce(s, { type: 'submit', id: 'a', content: 'A' });
frame(s, { type: 'busy', data: { turn: 't9', message: 'Busy right now.' } });
assert.strictEqual(s.pending[0].state, 'failed');
assert.strictEqual(s.note.text, 'Busy right now.');
Core.reduce(s, { type: 'submit', id: 'b', content: 'B' });
frame(s, { type: 'busy', data: { turn: 't9', message: 'Queued.', queued: true } });
assert.strictEqual(s.pending[1].state, 'queued');
// unknown running turn ends with any turn_end
frame(s, ev(10, 'turn_end', 't9', { status: 'cancelled', duration_ms: 1200 }));
assert(!Core.isBusy(s));
assert.deepStrictEqual(kinds(s), [], 'a cancelled turn adds no line of its own: the hub\'s notice says it');
// cancel: the hub's one notice is the only word of it; other endings keep their line
frame(s, ev(11, 'user', 't11', { channel: 'web', content: 'go' }));
frame(s, { ts: 'x', type: 'delta', turn: 't11', data: { text: 'par' } });
frame(s, ev(12, 'assistant', 't11', { content: 'par', partial: true }));
frame(s, ev(13, 'turn_end', 't11', { status: 'cancelled', duration_ms: 2600 }));
frame(s, ev(14, 'notice', null, { text: 'Cancelled from the web after 2.6 s.' }));
assert.deepStrictEqual(kinds(s), ['user:go', 'assistant:par', 'notice:Cancelled from the web after 2.6 s.']);
assert(s.byKey.get('a:t11').partial && !s.byKey.get('a:t11').streaming);
frame(s, ev(15, 'user', 't15', { channel: 'web', content: 'again' }));
frame(s, ev(16, 'turn_end', 't15', { status: 'interrupted', duration_ms: 1000 }));
assert.deepStrictEqual(kinds(s).slice(-1), ['turn_end:Interrupted after 1.0 s (the server stopped while working).']);
// A turn cut by a failover says so, in the log's words (every node the same).
frame(s, ev(17, 'user', 't17', { channel: 'web', content: 'more' }));
frame(s, ev(18, 'turn_end', 't17', { status: 'interrupted', duration_ms: 1000,
  error: 'the node running this reply stopped or lost the lease; another node took over' }));
assert.deepStrictEqual(kinds(s).slice(-1),
  ['turn_end:Interrupted after 1.0 s: the node running this reply stopped or lost the lease; another node took over.']);

// 7. cancel only while busy and live
s = Core.initialState();
connect(s, {}, []);
Core.reduce(s, { type: 'cancel' });
assert.strictEqual(s.outbox.length, 0);
frame(s, ev(1, 'user', 't1', { channel: 'web', content: 'x' }));
Core.reduce(s, { type: 'cancel' });
Core.reduce(s, { type: 'cancel' });
assert.deepStrictEqual(s.outbox, [{ type: 'command', action: 'cancel' }]);
// error after a command does not fail a pending message
Core.reduce(s, { type: 'submit', id: 'm', content: 'M' });
s.lastFrameKind = 'command';
frame(s, { type: 'error', data: { code: 'x', message: 'nope' } });
assert.strictEqual(s.pending[0].state, 'sent');

// 8. interrupt ordering: new user before old turn_end keeps busy
s = Core.initialState();
connect(s, {}, []);
frame(s, ev(1, 'user', 't1', { channel: 'web', content: 'a' }));
frame(s, ev(2, 'user', 't2', { channel: 'web', content: 'b' }));
frame(s, ev(3, 'turn_end', 't1', { status: 'cancelled' }));
assert(Core.isBusy(s));
frame(s, ev(4, 'turn_end', 't2', { status: 'completed' }));
assert(!Core.isBusy(s));

// 9. after reset, the chat ring's user events without turn_end don't leave us busy
s = Core.initialState();
connect(s, { busy: false }, [ev(1, 'user', 't1', { channel: 'web', content: 'a' }), ev(2, 'assistant', 't1', { content: 'b' }), ev(9, 'reset', null, { reason: 'manual', kept: 1 })], false);
assert(!Core.isBusy(s));
// busy with a ring: only the last opened turn stays open
s = Core.initialState();
connect(s, { busy: true }, [ev(1, 'user', 't1', { channel: 'web', content: 'a' }), ev(3, 'user', 't3', { channel: 'web', content: 'c' })], false);
assert.deepStrictEqual(s.openTurns, ['t3']);

// 10. partial assistant, mid-stream reconnect marks gap
s = Core.initialState();
connect(s, {}, []);
frame(s, ev(1, 'user', 't1', { channel: 'web', content: 'a' }));
frame(s, { type: 'delta', turn: 't1', data: { text: 'abc' } });
Core.reduce(s, { type: 'socket-closed' });
connect(s, { busy: true, last_seq: 1 }, []);
frame(s, ev(2, 'assistant', 't1', { content: 'abcdef', partial: true }));
assert.strictEqual(s.byKey.get('a:t1').text, 'abcdef');
assert(s.byKey.get('a:t1').partial);

// 11. too many resends -> failed
s = Core.initialState();
Core.reduce(s, { type: 'submit', id: 'z', content: 'Z' });
for (let i = 0; i < Core.MAX_SENDS; i++) { connect(s, {}, []); Core.reduce(s, { type: 'socket-closed' }); }
connect(s, {}, []);
assert.strictEqual(s.pending[0].state, 'failed');

// 12. different session id => fresh
s = Core.initialState();
connect(s, {}, [ev(5, 'notice', null, { text: 'old' })]);
Core.reduce(s, { type: 'socket-closed' });
connect(s, { session_id: 'OTHER', last_seq: 2 }, [ev(1, 'notice', null, { text: 'new' })], true);
assert.deepStrictEqual(kinds(s), ['notice:new']);

// 13. queue policy: replacement notice (queued=false) hits our queued message, not the new one
s = Core.initialState();
connect(s, { busy: true }, []);
Core.reduce(s, { type: 'submit', id: 'A', content: 'A' });
frame(s, { type: 'busy', data: { turn: 't1', message: 'queued', queued: true } });
Core.reduce(s, { type: 'submit', id: 'B', content: 'B' });
frame(s, { type: 'busy', data: { turn: 't1', message: 'A newer message replaced yours' } });
frame(s, { type: 'busy', data: { turn: 't1', message: 'queued', queued: true } });
assert.deepStrictEqual(s.pending.map((p) => p.id + ':' + p.state), ['A:failed', 'B:queued']);
// reconnect while still busy: queued B is not resent; once idle it is
s.outbox.length = 0;
Core.reduce(s, { type: 'socket-closed' });
connect(s, { busy: true }, []);
assert.strictEqual(s.outbox.length, 0);
Core.reduce(s, { type: 'socket-closed' });
connect(s, { busy: false }, []);
assert.deepStrictEqual(s.outbox.map((f) => f.client_msg_id), ['B']);
// 14. composer: Send is off with a reason while busy (reject, the default);
// under queue and interrupt it stays on and says what it will do.
s = Core.initialState();
assert.strictEqual(Core.composer(s).canSend, true, 'offline: sends are kept');
assert.match(Core.composer(s).reason, /kept/);
connect(s, {}, []);
assert.deepStrictEqual(Core.composer(s), { canSend: true, kind: '', reason: '' });
frame(s, ev(1, 'user', 't1', { channel: 'web', content: 'x' }));
assert.strictEqual(Core.composer(s).canSend, false);
assert.strictEqual(Core.composer(s).reason, 'Send when it is done, or cancel it (Esc).');
// the status line says who is answered; the composer does not repeat it
assert.deepStrictEqual(Core.statusLine(s), { kind: 'working', text: 'Replying to web…' });
frame(s, ev(2, 'status', 't1', { text: 'running tool…' }));
assert.deepStrictEqual(Core.statusLine(s), { kind: 'working', text: 'Replying to web · running tool…' });
Core.reduce(s, { type: 'cancel' });
assert.strictEqual(Core.composer(s).canSend, false);
assert.strictEqual(Core.composer(s).reason, '', 'the status line says it');
assert.deepStrictEqual(Core.statusLine(s), { kind: 'cancelling', text: 'Cancelling the reply…' });
// while the server is gone we do not know how the reply goes: no "working"
Core.reduce(s, { type: 'socket-closed' });
assert.strictEqual(Core.statusLine(s).kind, 'offline');
assert.strictEqual(Core.statusLine(s).text, 'The reply goes on at the server; it shows here once the connection is back.');
assert(!s.cancelRequested);
s.outbox.length = 0;
Core.reduce(s, { type: 'cancel' });
assert.strictEqual(s.outbox.length, 0, 'no cancel while down');
// a message this tab sent is "you"; another tab's, a webhook's are named
s = Core.initialState();
connect(s, {}, []);
Core.reduce(s, { type: 'submit', id: 'mine', content: 'hi' });
frame(s, ev(1, 'user', 't1', { channel: 'web', content: 'hi', client_msg_id: 'mine' }));
assert.strictEqual(Core.statusLine(s).text, 'Replying to you…');
frame(s, ev(2, 'turn_end', 't1', { status: 'completed' }));
assert.strictEqual(Core.statusLine(s), null);
frame(s, ev(3, 'user', 't3', { channel: 'web', content: 'hi', client_msg_id: 'other-tab' }));
assert.strictEqual(Core.whoseTurn(s), 'web');
frame(s, ev(4, 'turn_end', 't3', { status: 'completed' }));
frame(s, ev(5, 'user', 't5', { channel: 'webhook', from: 'ci', content: 'build failed' }));
assert.strictEqual(Core.statusLine(s).text, 'Replying to webhook · ci…');

// reconnecting: a connection lost moments ago (a restart) is retried about
// every second; otherwise the backoff doubles to 10 s; a full server (1013)
// is left alone longer. Jitter stays within ±25 %.
const mid = () => 0.5;
assert.deepStrictEqual([0, 1, 2, 3, 8].map((n) => Core.reconnectDelay(n, 2000, false, mid)), [250, 500, 1000, 1200, 1200]);
assert.deepStrictEqual([0, 1, 2, 3, 4, 5, 9].map((n) => Core.reconnectDelay(n, Infinity, false, mid)), [500, 1000, 2000, 4000, 8000, 10000, 10000]);
assert.deepStrictEqual([0, 1, 3, 4, 9].map((n) => Core.reconnectDelay(n, 2000, true, mid)), [2000, 4000, 16000, 30000, 30000]);
assert.strictEqual(Core.reconnectDelay(0, Infinity, false, () => 0), 375);
assert.strictEqual(Core.reconnectDelay(0, Infinity, false, () => 1), 625);
// a server back 4 s after a restart is tried again within about a second
let waited = 0;
for (let n = 0; waited < 4000; n++) waited += Core.reconnectDelay(n, waited, false, () => 1);
assert(waited < 4000 + 1500, 'reconnected ' + waited + ' ms after the drop');
for (const [policy, kind] of [['queue', 'queue'], ['interrupt', 'interrupt'], ['reject', 'busy']]) {
  s = Core.initialState();
  connect(s, { busy: true, busy_policy: policy }, []);
  assert.strictEqual(Core.composer(s).kind, kind, policy);
  assert.strictEqual(Core.composer(s).canSend, policy !== 'reject', policy);
}
// a queued busy reply teaches the policy when connected does not carry it
s = Core.initialState();
connect(s, { busy: true }, []);
Core.reduce(s, { type: 'submit', id: 'q', content: 'Q' });
frame(s, { type: 'busy', data: { turn: 't1', message: 'queued', queued: true, client_msg_id: 'q' } });
assert.strictEqual(Core.composer(s).kind, 'queue');

// 15. a message written offline waits for the running turn under reject
// (it would be refused), and goes as soon as the turn ends
s = Core.initialState();
Core.reduce(s, { type: 'submit', id: 'h', content: 'held' });
connect(s, { busy: true, last_seq: 1 }, [ev(1, 'user', 't1', { channel: 'email', from: 'a@b', content: 'other' })]);
assert.deepStrictEqual(s.pending.map((p) => p.state), ['held']);
assert.strictEqual(s.outbox.length, 0);
frame(s, ev(2, 'assistant', 't1', { content: 'done' }));
frame(s, ev(3, 'turn_end', 't1', { status: 'completed' }));
assert.deepStrictEqual(s.outbox, [{ type: 'message', content: 'held', client_msg_id: 'h' }]);
assert.deepStrictEqual(s.pending.map((p) => p.state), ['sent']);
// a held message goes back to waiting when the connection drops
s = Core.initialState();
Core.reduce(s, { type: 'submit', id: 'h', content: 'held' });
connect(s, { busy: true }, []);
Core.reduce(s, { type: 'socket-closed' });
assert.deepStrictEqual(s.pending.map((p) => p.state), ['waiting']);
// under queue it is sent at once (the server queues it)
s = Core.initialState();
Core.reduce(s, { type: 'submit', id: 'h', content: 'held' });
connect(s, { busy: true, busy_policy: 'queue' }, []);
assert.strictEqual(s.outbox.length, 1);

// 16. reset: one command while live; the reset event trims the view to the
// kept exchanges and says so; an error (older server) clears the request
s = Core.initialState();
Core.reduce(s, { type: 'reset' });
assert.strictEqual(s.outbox.length, 0, 'no reset while offline');
connect(s, {}, [ev(1, 'user', 't1', { channel: 'web', content: 'a' }), ev(2, 'assistant', 't1', { content: 'b' }), ev(3, 'turn_end', 't1', { status: 'completed' })]);
Core.reduce(s, { type: 'reset' });
Core.reduce(s, { type: 'reset' });
assert.deepStrictEqual(s.outbox, [{ type: 'command', action: 'reset' }]);
assert(s.resetRequested);
frame(s, { type: 'error', data: { code: 'unknown_action', message: 'unknown command action "reset"' } });
assert(!s.resetRequested);
assert.match(s.note.text, /unknown command/);
s.outbox.length = 0;
Core.reduce(s, { type: 'reset' });
frame(s, ev(4, 'reset', null, { reason: 'manual', kept: 1 }));
assert(!s.resetRequested);
assert.deepStrictEqual(kinds(s), ['user:a', 'assistant:b', 'reset:Conversation reset. The assistant keeps the last exchange above as context.']);

// 17. channel badges: the built-in channels, anything else is custom
assert.deepStrictEqual(['web', 'console', 'email', 'webhook', 'schedule', 'cron', undefined].map(Core.channelKind),
  ['web', 'console', 'email', 'webhook', 'schedule', 'custom', 'custom']);
s = Core.initialState();
connect(s, {}, [ev(1, 'user', 't1', { channel: 'email', from: 'ana@example.com', content: 'hi' })]);
assert.strictEqual(s.items[0].channelKind, 'email');
assert.strictEqual(s.items[0].label, 'email · ana@example.com');

// 18. a finished reply is announced as text, without Markdown punctuation
s = Core.initialState();
connect(s, {}, []);
frame(s, ev(1, 'assistant', 't1', { content: '**Done**: see `x`\n\n- one' }));
assert.deepStrictEqual(s.announce, ['Assistant: Done: see x\none']);

// approvals: a request shows for everyone; deciding sends one command and
// waits for the result, which any door may give
{
  const s = Core.initialState();
  connect(s, {}, []);
  frame(s, ev(10, 'user', 't10', { channel: 'web', from: '', content: 'delete it' }));
  frame(s, ev(11, 'tool_call', 't10', { id: 'c1', name: 'files__delete', args: { path: '/x' }, server: 'files' }));
  frame(s, ev(12, 'approval_request', 't10', { id: 'a12', server: 'files', tool: 'files__delete', args: { path: '/x' } }));
  const a = s.byKey.get('ap:a12');
  assert.strictEqual(a.kind, 'approval');
  // the turn waits for a person, not for the backend's "asking …"
  frame(s, { type: 'status', turn: 't10', data: { text: 'asking gpt-4o…' } });
  assert.deepStrictEqual(Core.statusLine(s), { kind: 'approval', text: 'Waiting for approval to run files__delete — Approve or Deny below.' });
  assert.strictEqual(s.byKey.get('t:t10:c1').approval, 'a12', 'the call waits for approval, it is not running');
  assert.strictEqual(a.tool, 'files__delete');
  assert.strictEqual(a.decision, '');
  Core.reduce(s, { type: 'decide', id: 'a12', decision: 'approve' });
  assert.deepStrictEqual(s.outbox.pop(), { type: 'command', action: 'approve', id: 'a12' });
  Core.reduce(s, { type: 'decide', id: 'a12', decision: 'deny' }); // a second click sends nothing
  assert.strictEqual(s.outbox.length, 0);
  assert.strictEqual(a.sent, 'approve');
  frame(s, ev(13, 'approval_result', 't10', { id: 'a12', decision: 'deny', by: 'console' })); // another door was first
  assert.strictEqual(a.decision, 'deny');
  assert.strictEqual(a.by, 'console');
  assert.strictEqual(s.byKey.get('t:t10:c1').approval, '', 'answered: no longer waiting');
  assert.deepStrictEqual(Core.statusLine(s), { kind: 'working', text: 'Replying to web · asking gpt-4o…' }, 'answered: the reply goes on');
  Core.reduce(s, { type: 'decide', id: 'nope', decision: 'approve' });
  assert.strictEqual(s.outbox.length, 0, 'an unknown approval sends nothing');
}

// Resume mid-turn: deltas carry no seq; the server replays those after the
// last seq we have, and the reducer cuts what it streamed after that seq
// first, so nothing is shown twice.
s = Core.initialState();
connect(s, { busy: true }, [ev(1, 'user', 't1', { channel: 'web', content: 'q' })]);
frame(s, { ts: 'x', type: 'delta', turn: 't1', data: { text: 'Hel' } });
frame(s, ev(2, 'tool_call', 't1', { id: 'c', name: 'x', args: {} }));
frame(s, { ts: 'x', type: 'delta', turn: 't1', data: { text: 'lo ' } });
Core.reduce(s, { type: 'socket-closed' });
assert.strictEqual(Core.sinceParam(s), 2);
connect(s, { busy: true, last_seq: 2 }, [{ ts: 'x', type: 'delta', turn: 't1', data: { text: 'lo ' } },
  { ts: 'x', type: 'delta', turn: 't1', data: { text: 'world' } }]);
assert.strictEqual(s.byKey.get('a:t1').text, 'Hello world');
// A turn_end the log owed (a full disk) comes without a seq, then with one
// once written: one line, not two.
frame(s, { ts: 'x', type: 'turn_end', turn: 't1', data: { status: 'error', code: 'storage_full', error: 'the disk is full' } });
assert(!Core.isBusy(s));
frame(s, ev(3, 'turn_end', 't1', { status: 'error', code: 'storage_full', error: 'the disk is full' }));
assert.strictEqual(s.items.filter((i) => i.kind === 'turn_end').length, 1);
assert.strictEqual(s.byKey.get('e:t1').seq, 3);
// After a restart the reply that was streaming is not on disk: the replay
// brings no deltas, and the bubble goes rather than staying empty.
s = Core.initialState();
connect(s, { busy: true }, [ev(1, 'user', 't1', { channel: 'web', content: 'q' })]);
frame(s, { ts: 'x', type: 'delta', turn: 't1', data: { text: 'half a rep' } });
Core.reduce(s, { type: 'socket-closed' });
connect(s, { busy: false, last_seq: 2 }, [ev(2, 'turn_end', 't1', { status: 'interrupted', duration_ms: 900 })]);
assert.deepStrictEqual(kinds(s), ['user:q', 'turn_end:Interrupted after 0.9 s (the server stopped while working).']);

// schedules_changed: no seq, no item, nothing in the replay's order — it
// only bumps schedulesRev, on which the Scheduled panel looks again.
{
  const s = Core.initialState();
  connect(s, {}, [ev(1, 'user', 't1', { channel: 'web', from: '', content: 'hi' })]);
  const items = s.items.length;
  const last = s.lastSeq;
  frame(s, { type: 'schedules_changed', ts: '2026-11-25T00:00:00.000Z' });
  frame(s, { type: 'schedules_changed', ts: '2026-11-25T00:00:01.000Z' });
  assert.strictEqual(s.schedulesRev, 2);
  assert.strictEqual(s.items.length, items, 'schedules_changed is not shown in the conversation');
  assert.strictEqual(s.lastSeq, last);
}

console.log('all core tests passed');
