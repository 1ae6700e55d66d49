// items.js — owns the conversation's items: how one event of the protocol
// (user, delta, tool_call, assistant, turn_end, notice, reset, approval_…)
// becomes or updates an item of a view ({kind, key, rev, …}), and the words
// shown for channels, turn ends and resets. Pure: no DOM, no I/O. core.js
// uses it for the live view, history.js for pages of older history, so both
// look alike. A new event type that shows in the conversation starts here.

import { cleanAttachments } from './attachments.js';
import { nameOf, shown, withDoor } from './people.js';

// An idle loader of a page of history (see history.js).
const idleLoad = () => ({ loading: false, error: '', acc: null, start: 0 });

// ── helpers ──
// newItem adds an item to view v (the live state itself, an archive, or a
// page being built); keys come from s so they never collide across views.
function newItem(s, v, kind, key, fields) {
  const it = Object.assign({ kind, key: key || kind + ':' + s.nextKey++, rev: 1 }, fields);
  v.items.push(it);
  v.byKey.set(it.key, it);
  return it;
}
const touch = (it) => { it.rev++; return it; };

function setNote(s, kind, text) {
  s.note = { kind, text, serial: ++s.noteSerial };
}

function assistantBubble(s, v, ev) {
  const key = 'a:' + (ev.turn || 'none:' + s.nextKey++);
  return v.byKey.get(key) ||
    newItem(s, v, 'assistant', key, { turn: ev.turn, ts: ev.ts, text: '', streaming: false,
      final: false, partial: false, ended: false });
}

// channelLabel is whom a user message is from: "Ann · web" when the
// server named the person, else the door (and the from label it was given).
function channelLabel(d) {
  const ch = (d && d.channel) || 'unknown';
  const door = d && d.from ? ch + ' · ' + d.from : ch;
  return d && shown(d.person) ? withDoor(d.person, door) : door;
}

// noticeText names the person in the hub's cancel notice ("Cancelled from
// the web after 2 s." → "Cancelled by Ann from the web after 2 s.").
function noticeText(d) {
  const text = String(d.text ?? '');
  if (!shown(d.person)) return text;
  if (/^Cancelled (from|through) /.test(text)) return text.replace(/^Cancelled /, 'Cancelled by ' + nameOf(d.person) + ' ');
  return text + ' (' + nameOf(d.person) + ')';
}

// The badge style: the built-in channels have their own; any other name a
// webhook caller chose ("cron", "ci") is "custom".
function channelKind(ch) {
  return ['web', 'console', 'email', 'webhook', 'schedule'].includes(ch) ? ch : 'custom';
}

function turnEndText(d) {
  const secs = typeof d.duration_ms === 'number' && d.duration_ms >= 100 ? ' after ' + (d.duration_ms / 1000).toFixed(1) + ' s' : '';
  switch (d.status) {
    case 'cancelled': return 'Cancelled' + secs + '.';
    // The reason is the log's, the same on every node (a restart, a failover).
    case 'interrupted': return 'Interrupted' + secs + (d.error ? ': ' + d.error + '.' : ' (the server stopped while working).');
    case 'error': return 'Error' + secs + ': ' + (d.error || 'the turn failed.');
    default: return (d.status || 'Ended') + secs + (d.error ? ': ' + d.error : '.');
  }
}

// resetText is the divider a reset leaves: what happened and what the
// assistant still has. The exchanges it keeps stay in view above the divider
// (core.js keepExchanges), so "above" is where they are.
function resetText(d) {
  const reason = String(d.reason || '');
  const head = reason === 'manual' ? 'Conversation reset'
    : reason === 'idle-timeout' ? 'Conversation reset after a quiet spell'
    : 'Conversation reset' + (reason ? ' (' + reason.replace(/-/g, ' ') + ')' : '');
  const n = Number(d.kept) || 0;
  const by = shown(d.person) ? head + ' by ' + nameOf(d.person) : head;
  if (n <= 0) return by + '. The assistant starts afresh.';
  return by + '. The assistant keeps ' + (n === 1 ? 'the last exchange' : 'the last ' + n + ' exchanges') +
    ' above as context.';
}

// ── history events (they may carry seq) ──

// addItem renders one event into view v: creates or updates its item and
// returns it (or null). It has no other effect, so the same code builds the
// live view and pages of older history (historic: never streaming, a tool
// without a result is not "running"), and both look alike.
function addItem(s, v, ev, historic) {
  const d = ev.data || {};
  const seq = typeof ev.seq === 'number' ? ev.seq : undefined;
  switch (ev.type) {
    case 'user':
      return newItem(s, v, 'user', seq ? 'u:' + seq : null, {
        seq, turn: ev.turn, ts: ev.ts, channel: d.channel, channelKind: channelKind(d.channel), from: d.from || '',
        label: channelLabel(d), content: String(d.content ?? ''),
        mine: !!(d.client_msg_id && s.ownIds && s.ownIds.has(d.client_msg_id)),
        attachments: cleanAttachments(d.attachments),
        // waiting | replaced | '' — a queued input waits for its turn_start
        // (older pages: it ran or was replaced long ago; their turn_end says which)
        queue: d.queued === true && !historic ? 'waiting' : '',
        erased: erasedBy(d),
      });
    case 'delta': {
      if (historic) return null;
      const b = assistantBubble(s, v, ev);
      if (b.final || b.ended) return null; // a late or repeated chunk; the final text is in
      b.text += String(d.text ?? '');
      b.streaming = true;
      return touch(b);
    }
    case 'tool_call': {
      const key = 't:' + ev.turn + ':' + d.id;
      const t = v.byKey.get(key) || newItem(s, v, 'tool', key, { seq, turn: ev.turn, ts: ev.ts, output: null, error: '', historic });
      Object.assign(t, { name: String(d.name ?? 'tool'), args: d.args });
      return touch(t);
    }
    case 'tool_result': {
      const key = 't:' + ev.turn + ':' + d.id;
      const t = v.byKey.get(key) || newItem(s, v, 'tool', key, { seq, turn: ev.turn, ts: ev.ts, name: String(d.name ?? 'tool'), args: null, historic });
      t.output = String(d.output ?? '');
      t.error = String(d.error ?? '');
      return touch(t);
    }
    case 'assistant': {
      const b = assistantBubble(s, v, ev);
      Object.assign(b, { seq, text: String(d.content ?? ''), final: true, streaming: false,
        partial: !!d.partial, ts: ev.ts, erased: erasedBy(d) });
      return touch(b);
    }
    case 'erased': {
      // A person erased the message at d.seq: its text goes, a line says so.
      const m = d.type === 'assistant' ? v.byKey.get('a:' + d.turn) : v.byKey.get('u:' + d.seq);
      if (!m || (m.seq !== undefined && m.seq !== d.seq)) return null; // not in this view
      Object.assign(m, { erased: shown(d.person) ? nameOf(d.person) : String(d.by ?? ''), content: '', text: '', attachments: [], streaming: false });
      return touch(m);
    }
    case 'turn_start': {
      // A queued input began to run: it waits no more.
      const u = queuedUser(v, ev.turn);
      if (u) { u.queue = ''; touch(u); }
      return null;
    }
    case 'turn_end': {
      if (d.status === 'replaced') {
        // A newer message took its place before it ran; the hub's notice says so.
        const u = queuedUser(v, ev.turn);
        if (u) { u.queue = 'replaced'; touch(u); }
        return null;
      }
      const b = v.byKey.get('a:' + ev.turn);
      if (b) { b.streaming = false; b.ended = true; touch(b); }
      // Tool calls of an ended turn that never got a result are not running any more.
      for (let i = v.items.length - 1; i >= 0 && i >= v.items.length - 200; i--) {
        const t = v.items[i];
        if (t.kind === 'tool' && t.turn === ev.turn && t.output === null && !t.ended) { t.ended = true; touch(t); }
      }
      // A cancelled turn is told by the hub's notice (who cancelled it, after
      // how long); a line of our own would say it a second time.
      if (d.status && d.status !== 'completed' && d.status !== 'cancelled') {
        // One per turn: a turn_end the log owed (the disk was full) comes
        // first without a seq, then again with one once it is written.
        const fields = { seq, turn: ev.turn, ts: ev.ts, status: d.status, text: turnEndText(d) };
        const seen = v.byKey.get('e:' + ev.turn);
        if (seen) return touch(Object.assign(seen, fields));
        return newItem(s, v, 'turn_end', 'e:' + ev.turn, fields);
      }
      return null;
    }
    case 'approval_request': {
      // A tool call waits for a yes or no; any client may answer.
      const key = 'ap:' + d.id;
      const a = v.byKey.get(key) || newItem(s, v, 'approval', key, { seq, turn: ev.turn, ts: ev.ts, decision: '', by: '', sent: '' });
      Object.assign(a, { id: String(d.id ?? ''), tool: String(d.tool ?? 'tool'), server: String(d.server ?? ''), args: d.args, text: String(d.text ?? '') });
      const call = runningCall(v, ev.turn, a.tool);
      if (call) { call.approval = a.id; touch(call); } // it waits for a person, it does not run yet
      return touch(a);
    }
    case 'approval_result': {
      const a = v.byKey.get('ap:' + d.id);
      if (!a) return null; // its request is in an older page
      Object.assign(a, { decision: String(d.decision ?? ''), by: String(d.by ?? ''), person: String(d.person ?? '') });
      const call = runningCall(v, ev.turn, a.tool);
      if (call && call.approval === a.id) { call.approval = ''; touch(call); }
      return touch(a);
    }
    case 'notice':
      return newItem(s, v, 'notice', seq ? 'n:' + seq : null, { seq, ts: ev.ts, text: noticeText(d) });
    case 'reset':
      // Live, the view was cleared first and this is its first item; in a
      // page of history it divides what came before the reset from after.
      return newItem(s, v, 'reset', seq ? 'r:' + seq : null, { seq, ts: ev.ts, text: resetText(d) });
    default:
      return null; // status, and unknown types (a newer server must not break us)
  }
}

// runningCall is the last call of tool in turn without a result, among
// the last items of view v (null: none).
function runningCall(v, turn, tool) {
  for (let i = v.items.length - 1; i >= 0 && i >= v.items.length - 200; i--) {
    const it = v.items[i];
    if (it.kind === 'tool' && it.turn === turn && it.name === tool && it.output === null) return it;
  }
  return null;
}

// queuedUser finds the user item of turn among the last items of view v.
function queuedUser(v, turn) {
  for (let i = v.items.length - 1; i >= 0 && i >= v.items.length - 500; i--) {
    const it = v.items[i];
    if (it.kind === 'user' && it.turn === turn) return it;
  }
  return null;
}

// erasedBy is who erased the message whose data is d (a tombstone), or
// null for a message that stands.
const erasedBy = (d) => (d && d.erased === true ? String(d.erased_by ?? '') : null);

// erasedText stands where an erased message was.
const erasedText = (by) => 'message erased' + (by ? ' (by ' + by + ')' : '');

const hasSeq = (e) => e && typeof e.seq === 'number' && e.seq > 0;
const PERSISTED = new Set(['user', 'assistant', 'tool_call', 'tool_result', 'turn_end', 'turn_start', 'notice', 'reset',
  'approval_request', 'approval_result', 'memory_changed', 'erased']);

export { idleLoad, newItem, touch, setNote, assistantBubble, channelLabel, channelKind, turnEndText, resetText,
  addItem, hasSeq, PERSISTED, erasedText };
