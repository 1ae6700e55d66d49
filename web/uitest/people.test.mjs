// Tests of names in the reducer (web/static/people.js, items.js via
// core.js, memwords.js): events that carry person show the person's name
// with the door ("Ann · web", "approved by Ann · web", the cancel notice,
// the reset line, "edited by Ann"); a person the page has no name for
// shows their id; an event without person (an older server) keeps the
// door-only label; what you may do follows GET /api/me's permissions.
import assert from 'node:assert';
import * as Core from '../static/core.js';
import * as People from '../static/people.js';
import { editedBy } from '../static/memwords.js';
import { ev, frame, connect } from './harness.mjs';

People.setPeople([{ person: 'ann', name: 'Ann' }, { person: 'bo', name: 'Bo' }]);

let s = Core.initialState();
connect(s, { last_seq: 9 }, [
  ev(1, 'user', 't1', { channel: 'web', content: 'hi', person: 'ann' }),
  ev(2, 'user', 't2', { channel: 'email', from: 'cy@example.com', content: 'hello', person: 'cy' }),
  ev(3, 'user', 't3', { channel: 'web', content: 'old' }),
  ev(4, 'approval_request', 't3', { id: 'ap1', tool: 'files__delete' }),
  ev(5, 'approval_result', 't3', { id: 'ap1', decision: 'approve', by: 'web', person: 'bo' }),
  ev(6, 'notice', 't3', { text: 'Cancelled from the web after 2 s.', person: 'ann' }),
  ev(7, 'notice', 't3', { text: 'Cancelled from the web after 1 s.' }),
]);
const users = s.items.filter((i) => i.kind === 'user').map((i) => i.label);
assert.deepStrictEqual(users, ['Ann · web', 'cy · email · cy@example.com', 'web'], 'names with the door; the id without a name; the door alone for no person');
const ap = s.items.find((i) => i.kind === 'approval');
assert.strictEqual(ap.person, 'bo');
assert.deepStrictEqual(s.items.filter((i) => i.kind === 'notice').map((i) => i.text),
  ['Cancelled by Ann from the web after 2 s.', 'Cancelled from the web after 1 s.']);

// A reset names who did it.
frame(s, ev(10, 'reset', '', { reason: 'manual', kept: 0, person: 'bo' }));
assert.strictEqual(s.items.find((i) => i.kind === 'reset').text, 'Conversation reset by Bo. The assistant starts afresh.');

// Memory: the person of the latest memory_changed seen live names the editor.
frame(s, ev(11, 'memory_changed', '', { action: 'edited', id: 'm3', by: 'web', person: 'ann' }));
assert.strictEqual(editedBy({ edited_by: 'web' }, s.memoryPeople.m3), 'edited by Ann in the web page');
assert.strictEqual(editedBy({ edited_by: 'web' }, undefined), 'edited in the web page');

// Permissions: everything until the server says who you are, then only yours.
People.setYou(null);
assert.strictEqual(People.can('reset'), true);
People.setYou({ person: 'vi', name: 'Vi', role: 'viewer', permissions: ['read'] });
assert.strictEqual(People.can('read'), true);
assert.strictEqual(People.can('reset'), false);
assert.strictEqual(People.can('talk'), false);
assert.strictEqual(People.nameOf('vi'), 'Vi');

// Nothing configured (via open): one implicit person; the labels stay as
// they were before people existed, though the events name "owner".
People.setYou({ person: 'owner', name: 'Owner', role: 'admin', permissions: ['read', 'talk'], via: 'open' });
let o = Core.initialState();
connect(o, { last_seq: 2 }, [
  ev(1, 'user', 't1', { channel: 'web', content: 'hi', person: 'owner' }),
  ev(2, 'notice', 't1', { text: 'Cancelled from the web after 1 s.', by: 'web', person: 'owner' }),
]);
assert.deepStrictEqual(o.items.filter((i) => i.kind === 'user').map((i) => i.label), ['web']);
assert.strictEqual(o.items.find((i) => i.kind === 'notice').text, 'Cancelled from the web after 1 s.');
frame(o, ev(3, 'reset', '', { reason: 'manual', kept: 0, person: 'owner' }));
assert.strictEqual(o.items.find((i) => i.kind === 'reset').text, 'Conversation reset. The assistant starts afresh.');
assert.strictEqual(editedBy({ edited_by: 'web' }, 'owner'), 'edited in the web page');
People.setYou(null);
