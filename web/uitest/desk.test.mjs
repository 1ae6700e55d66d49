// Tests of the desk (web/static/desk.js and its part of core.js's reducer):
// an input refused with no_leader/no_answer is sent again by itself with
// the same client_msg_id, bounded; the header is amber while no node runs
// the assistant and names the node and the holder otherwise; a tab whose
// node died moves only to a live node's public URL, with its token and
// its unanswered inputs. Run by TestUIDeskCore (web/ui_node_test.go).
import assert from 'node:assert';
import * as Core from '../static/core.js';
import * as Desk from '../static/desk.js';
import { ev, connect } from './harness.mjs';

const at = (s, f, now) => Core.reduce(s, { type: 'frame', frame: f, now });
const sent = (s) => s.outbox.splice(0).filter((f) => f.type === 'message').map((f) => f.client_msg_id);
const refuse = (s, id, now, code = 'no_leader') => at(s, { type: 'error', data: { code, message: 'no node is running the assistant', client_msg_id: id } }, now);

// 1. refused with no_leader: retrying, not failed; sent again with the same id when due; the echo clears the wait note
let s = Core.initialState();
connect(s, {}, []);
Core.reduce(s, { type: 'cluster', cluster: { node: 'n2', leader: 'n1', role: 'follower', nodes: [{ name: 'n1', url: '', alive: true }, { name: 'n2', url: '', alive: true }] } });
assert.deepStrictEqual(Desk.header(s), ['connected', 'connected · node n2 · holder n1']);
Core.reduce(s, { type: 'submit', id: 'c-1', content: 'hello' });
assert.deepStrictEqual(sent(s), ['c-1']);
refuse(s, 'c-1', 1000);
assert.strictEqual(s.pending[0].state, 'retrying', 'a no_leader refusal is not a failure');
assert.strictEqual(s.note.kind, 'wait');
assert.match(s.note.text, /Waiting for the desk/);
assert.deepStrictEqual(Desk.header(s), ['waiting', 'waiting for the desk… (node n2)'], 'amber while an input waits');
const due = s.pending[0].retryAt;
assert(due >= 1800 && due <= 2200, 'first retry about 1 s later: ' + due);
Core.reduce(s, { type: 'retry-due', now: due - 1 });
assert.deepStrictEqual(sent(s), [], 'not before its time');
Core.reduce(s, { type: 'retry-due', now: due });
assert.deepStrictEqual(sent(s), ['c-1'], 'sent again by itself, same client_msg_id');
assert.strictEqual(s.pending[0].state, 'sent');
refuse(s, 'c-1', due + 10, 'no_answer');
assert.strictEqual(s.pending[0].state, 'retrying', 'no_answer is retried too');
assert(s.pending[0].retryAt - (due + 10) >= 1600, 'the wait grows');
Core.reduce(s, { type: 'retry-due', now: s.pending[0].retryAt });
assert.deepStrictEqual(sent(s), ['c-1']);
at(s, ev(1, 'user', 't1', { channel: 'web', content: 'hello', client_msg_id: 'c-1' }), due + 3000);
assert.strictEqual(s.pending.length, 0, 'answered');
assert.strictEqual(s.note.kind, '', 'the wait note is cleared once answered');
assert.strictEqual(s.note.text, '');
assert.strictEqual(Desk.header(s)[0], 'connected');

// 2. bounded: a minute after the first refusal it fails, with the server's words
s = Core.initialState();
connect(s, {}, []);
Core.reduce(s, { type: 'submit', id: 'c-2', content: 'x' });
sent(s);
refuse(s, 'c-2', 0);
for (let now = 0; s.pending[0].state === 'retrying';) {
  now = s.pending[0].retryAt;
  Core.reduce(s, { type: 'retry-due', now });
  assert.deepStrictEqual(sent(s), ['c-2']);
  refuse(s, 'c-2', now);
  assert(now < Desk.RETRY_FOR_MS + 6000, 'gave up in time');
}
assert.strictEqual(s.pending[0].state, 'failed');
assert.match(s.pending[0].note, /no node is running the assistant/);
assert.strictEqual(s.note.kind, 'error');

// 3. a retry that falls due while the connection is down waits for it, and goes on reconnect
s = Core.initialState();
connect(s, {}, []);
Core.reduce(s, { type: 'submit', id: 'c-3', content: 'y' });
sent(s);
refuse(s, 'c-3', 0);
Core.reduce(s, { type: 'socket-closed' });
assert.strictEqual(s.pending[0].state, 'retrying');
Core.reduce(s, { type: 'retry-due', now: 10000 });
assert.strictEqual(s.pending[0].state, 'waiting');
connect(s, {}, []);
assert.deepStrictEqual(sent(s), ['c-3']);

// 4. other errors still fail at once
s = Core.initialState();
connect(s, {}, []);
Core.reduce(s, { type: 'submit', id: 'c-4', content: 'z' });
sent(s);
at(s, { type: 'error', data: { code: 'storage_full', message: 'disk full', client_msg_id: 'c-4' } }, 0);
assert.strictEqual(s.pending[0].state, 'failed');

// 5. the header: no holder or a holder still taking over is amber; a single node is plain "connected"
s = Core.initialState();
connect(s, {}, []);
assert.deepStrictEqual(Desk.header(s), ['connected', 'connected']);
Core.reduce(s, { type: 'cluster', cluster: { node: 'n1', leader: '', role: 'electing', nodes: [] } });
assert.strictEqual(Desk.header(s)[0], 'waiting');
Core.reduce(s, { type: 'cluster', cluster: { node: 'n1', leader: 'n1', role: 'electing', nodes: [] } });
assert.strictEqual(Desk.header(s)[0], 'waiting', 'the holder still reading the log runs nothing yet');
Core.reduce(s, { type: 'cluster', cluster: { node: 'n1', leader: 'n1', role: 'leader', nodes: [] } });
assert.deepStrictEqual(Desk.header(s), ['connected', 'connected · node n1 (holder)']);
Core.reduce(s, { type: 'cluster', cluster: undefined });
assert.deepStrictEqual(Desk.header(s), ['connected', 'connected']);

// 6. where a tab moves: only from its node's own URL, to a live node with a URL, the holder first
const c = Desk.clusterFrom({ node: 'n1', leader: 'n3', role: 'follower', nodes: [
  { name: 'n1', url: 'http://127.0.0.1:8081/', alive: true },
  { name: 'n2', url: 'http://127.0.0.1:8082', alive: true },
  { name: 'n3', url: 'http://127.0.0.1:8083', alive: true }] });
assert.strictEqual(Desk.moveTarget(c, 'http://127.0.0.1:8081'), 'http://127.0.0.1:8083', 'the holder first');
c.nodes[2].alive = false;
assert.strictEqual(Desk.moveTarget(c, 'http://127.0.0.1:8081'), 'http://127.0.0.1:8082', 'a live node only');
assert.strictEqual(Desk.moveTarget(c, 'https://desk.example.com'), '', 'behind a proxy the tab stays');
c.nodes[1].url = '';
assert.strictEqual(Desk.moveTarget(c, 'http://127.0.0.1:8081'), '', 'no live node with a URL: stay');
assert.strictEqual(Desk.moveTarget(null, 'http://127.0.0.1:8081'), '');
assert.strictEqual(Desk.clusterFrom({ node: 'a', leader: 'a', role: 'leader', nodes: [{ name: 'b', url: 'javascript:alert(1)', alive: true }] }).nodes[0].url, '', 'only http(s) URLs');
assert.deepStrictEqual(Desk.clusterFrom({ node: 'a', leader: '', role: 'electing', nodes: ['a', 'b'] }).nodes[1], { name: 'b', url: '', alive: true }, 'the older shape');
assert.strictEqual(Desk.moveDue(2999, false), false);
assert.strictEqual(Desk.moveDue(3000, false), true);
assert.strictEqual(Desk.moveDue(5000, true), false, 'a restart gets longer');

// 7. what a tab takes along, and adopts on arrival: token, the node it left, its inputs with their ids
const url = Desk.moveURL('http://127.0.0.1:8082', { token: 'sécret tok', from: 'n1', pending: [{ id: 'c-9', content: 'ünïcode ✓', attachments: [], state: 'waiting' }] });
assert.match(url, /^http:\/\/127\.0\.0\.1:8082\/#move=[A-Za-z0-9_-]+$/);
const m = Desk.readMove(new URL(url).hash);
assert.deepStrictEqual(m, { token: 'sécret tok', from: 'n1', pending: [{ id: 'c-9', content: 'ünïcode ✓', attachments: [] }] });
assert.strictEqual(Desk.readMove('#move=!!'), null);
assert.strictEqual(Desk.readMove('#other'), null);
s = Core.initialState();
Core.reduce(s, { type: 'adopt', pending: m.pending, from: m.from });
assert.strictEqual(s.pending[0].state, 'waiting');
assert.match(s.note.text, /Node n1 stopped answering/);
connect(s, {}, []);
assert.deepStrictEqual(sent(s), ['c-9'], 'sent on the new node with the same id');
at(s, ev(5, 'user', 't5', { channel: 'web', content: 'ünïcode ✓', client_msg_id: 'c-9' }), 0);
assert.strictEqual(s.items[0].mine, true, 'its echo is ours');
