// core.js — owns the protocol state machine: the state (initialState), the
// reducer every change goes through (reduce), replay buffering until
// `synced`, seq dedupe, busy tracking (which turns run), pending ("sending…")
// messages and what the composer offers. Pure: no DOM, no I/O — frames to
// send go onto s.outbox, HTTP requests onto s.requests, and shell.js carries
// them out. node imports it in web/uitest. Events become items in items.js;
// scroll-back, jumps and search live in history.js (reduce hands their
// actions over). The view imports everything it needs from here.

import { plainText, render as markdown, safeHref, textOf } from './markdown.js';
import { idleLoad, touch, setNote, addItem, hasSeq, PERSISTED, channelLabel, channelKind, resetText,
  turnEndText } from './items.js';
import { reduceHistory, learnDensity, shown, pageWindow, olderState, itemForSeq, findMatches, highlight, marked,
  markedTerms, withDays } from './history.js';

// Stand-in for "a turn is running but its user event was not replayed to us"
// (connected.busy=true after a gapless replay that started later).
const UNKNOWN_TURN = '?';
// After this many sends without an echo (each ended by a dropped connection)
// a pending message is marked failed instead of being resent forever — an
// oversized frame, say, makes the server close the connection every time.
const MAX_SENDS = 3;

function initialState() {
  return {
    phase: 'down',       // down | handshake (socket open) | replay (got connected) | live (synced)
    sessionId: null,
    generation: 0,
    maxFrameBytes: 0,    // server.max_message_bytes from connected (0: not yet known)
    lastSeq: 0,          // highest seq applied to the view
    items: [],           // the conversation, in display order (see newItem)
    byKey: new Map(),    // item key → item, for in-place updates
    nextKey: 1,
    openTurns: [],       // turns started (user event) and not yet ended (turn_end)
    status: '',          // latest status text of the running turn
    cancelRequested: false,
    resetRequested: false,
    busyPolicy: '',      // reject | queue | interrupt: connected.busy_policy, or learned from a queued busy reply
    pending: [],         // {id, content, state: waiting|held|sent|queued|failed, note, sends, rev}
    replay: null,        // {info: connected data, events: []} between connected and synced
    lastFrameKind: null, // kind of the last frame we sent ('message' | 'command')
    note: null,          // {kind: 'busy'|'error'|'info', text, serial} shown by the composer
    noteSerial: 0,
    outbox: [],          // frames for the shell to send (drained after each dispatch)
    announce: [],        // texts for the screen-reader live region (drained by the view)

    // History (scroll-back, search, jump). The live view above is a "view":
    // items + byKey + firstSeq + older. It holds every persisted event with
    // seq ≥ firstSeq, so an older page is deduplicated by seq < firstSeq.
    firstSeq: null,      // null: nothing shown yet
    epoch: 1,            // bumps whenever the live view is cleared: answers for the old one are dropped
    epochs: 1,           // counter behind every view's epoch
    older: idleLoad(),   // the live view's scroll-back: {loading, error, acc, start}
    density: 0.05,       // persisted events per seq number (deltas take seqs too), sizes the next page
    archive: null,       // a detached window of older history after a far jump (see newArchive)
    focus: null,         // {seq, serial, moveFocus} | {bottom: true, serial}: the view scrolls there once
    focusSerial: 0,
    jumping: null,       // {seq, serial} while a jump waits for its page
    search: { open: false, query: '', status: 'idle', hits: [], mode: 'and', broad: false, error: '', serial: 0, forQuery: '' },
    requests: [],        // HTTP requests for the shell (drained after each dispatch, like outbox)
    reqSerial: 0,
  };
}

const isBusy = (s) => s.openTurns.length > 0;

function clearView(s) {
  s.items = [];
  s.byKey = new Map();
  s.firstSeq = null;
  s.epoch = ++s.epochs;
  s.older = idleLoad();
}

function closeTurn(s, turn) {
  const i = s.openTurns.indexOf(turn);
  if (i >= 0) s.openTurns.splice(i, 1);
  // A turn_end for a turn we never saw start ends the "unknown" running turn.
  else s.openTurns = s.openTurns.filter((t) => t !== UNKNOWN_TURN);
  if (!isBusy(s)) {
    s.status = '';
    s.cancelRequested = false;
    // Messages held back while the turn ran can go now.
    if (s.phase === 'live' && s.pending.some((p) => p.state === 'held')) flushPending(s, false);
  }
}

// ── pending (client-side "sending…") messages ──
function sendPending(s, p) {
  p.state = 'sent';
  p.sends++;
  p.note = '';
  p.rev++;
  s.outbox.push({ type: 'message', content: p.content, client_msg_id: p.id });
  s.lastFrameKind = 'message';
}

// Under busy_policy reject (the default, assumed when the server does not
// say) a message sent while a turn runs is refused for sure, so a message
// that waited for the connection waits for the turn as well ("held") and is
// sent when it ends. Under queue and interrupt it goes at once, as it would
// have had we been online.
const holdWhileBusy = (s) => s.busyPolicy !== 'queue' && s.busyPolicy !== 'interrupt';

function flushPending(s, busy) {
  for (const p of s.pending) {
    if ((p.state === 'waiting' || p.state === 'held') && busy && holdWhileBusy(s)) {
      if (p.state !== 'held') { p.state = 'held'; p.rev++; }
      continue;
    }
    // A queued message (busy_policy: queue) is still in the server's queue
    // while a turn runs; sending it again would push out whatever replaced
    // it. With the session idle the queue has drained, and our message was
    // not echoed (else it would be gone): it was lost, e.g. by a restart.
    if (p.state === 'queued' && busy) continue;
    if (p.state !== 'waiting' && p.state !== 'held' && p.state !== 'queued') continue;
    if (p.sends >= MAX_SENDS) {
      p.state = 'failed';
      p.note = 'Not delivered: the connection dropped each time it was sent.';
      p.rev++;
    } else {
      sendPending(s, p);
    }
  }
}

// The server answers a message frame with exactly one of: its user echo, a
// busy reply or an error, in the order the frames were sent — so a busy or
// error belongs to the oldest message still waiting for an answer.
const oldestInFlight = (s) => s.pending.find((p) => p.state === 'sent');

function removePending(s, id) {
  s.pending = s.pending.filter((p) => p.id !== id);
}

function applyEvent(s, ev, live) {
  const d = ev.data || {};
  // A user echo acknowledges our pending message even when it is a duplicate
  // we already rendered: the server re-sends the original echo when we
  // re-send a client_msg_id it has accepted.
  if (ev.type === 'user' && d.client_msg_id) removePending(s, d.client_msg_id);

  if (typeof ev.seq === 'number') {
    if (ev.seq <= s.lastSeq) return; // already rendered
    s.lastSeq = ev.seq;
  }
  if (ev.type === 'reset') {
    clearView(s);
    s.resetRequested = false;
  }
  if (hasSeq(ev) && s.firstSeq === null) s.firstSeq = ev.seq;

  const it = addItem(s, s, ev, false);
  switch (ev.type) {
    case 'user':
      if (ev.turn && !s.openTurns.includes(ev.turn)) s.openTurns.push(ev.turn);
      if (live) s.announce.push(channelLabel(d) + ' message: ' + (d.content ?? ''));
      break;
    case 'status':
      s.status = String(d.text ?? '');
      break;
    case 'assistant':
      if (live) s.announce.push('Assistant: ' + plainText(it.text));
      break;
    case 'turn_end':
      if (it && live) s.announce.push(it.text);
      closeTurn(s, ev.turn);
      break;
    case 'notice':
    case 'reset':
      if (live) s.announce.push(it.text);
      break;
  }
  // Someone reading older history is told that the live conversation moved on.
  if (live && s.archive && (ev.type === 'user' || ev.type === 'assistant')) s.archive.unseen++;
}

// ── per-connection frames ──
function finishReplay(s, synced) {
  const info = s.replay ? s.replay.info : {};
  const events = s.replay ? s.replay.events : [];
  s.replay = null;

  // Besides gapless=false, two cases where our view cannot be continued:
  // a different session id (the data directory was replaced) and a server
  // seq counter below ours (would otherwise hide every new event).
  const fresh = !synced.gapless ||
    (s.sessionId !== null && info.session_id !== s.sessionId) ||
    (typeof info.last_seq === 'number' && info.last_seq < s.lastSeq);
  if (fresh) {
    clearView(s);
    s.lastSeq = 0;
    s.openTurns = [];
    s.status = '';
  }
  s.sessionId = info.session_id ?? s.sessionId;
  s.generation = info.generation ?? s.generation;
  if (typeof info.max_message_bytes === 'number' && info.max_message_bytes > 0) s.maxFrameBytes = info.max_message_bytes;
  if (['reject', 'queue', 'interrupt'].includes(info.busy_policy)) s.busyPolicy = info.busy_policy;

  for (const ev of events) applyEvent(s, ev, false);
  // How many persisted events a seq number holds here sizes the first page of older history.
  if (s.firstSeq !== null) learnDensity(s, events.filter((e) => hasSeq(e) && PERSISTED.has(e.type) && e.seq >= s.firstSeq).length, s.lastSeq - s.firstSeq + 1);

  // connected.busy is the server's snapshot taken with the replay, so it
  // wins over what the replayed events suggest (the chat ring kept after a
  // reset holds user events whose turn_end is gone, for instance).
  if (!info.busy) {
    s.openTurns = [];
    s.status = '';
    s.cancelRequested = false;
    for (const it of s.items) if (it.kind === 'assistant' && it.streaming) { it.streaming = false; touch(it); }
  } else {
    // One turn runs at a time: the latest started one, or one we never saw start.
    s.openTurns = s.openTurns.length ? [s.openTurns[s.openTurns.length - 1]] : [UNKNOWN_TURN];
  }

  s.phase = 'live';
  flushPending(s, !!info.busy);
}

function onBusy(s, d) {
  // busy names the message it answers by client_msg_id; the fallback by
  // kind (queued=true: our oldest in-flight message; queued=false: a queued
  // message of ours that was replaced, else a rejection) is for servers
  // that do not send it.
  const p = (d.client_msg_id && s.pending.find((x) => x.id === d.client_msg_id)) ||
    (!d.queued && s.pending.find((x) => x.state === 'queued')) || oldestInFlight(s);
  if (d.queued && !s.busyPolicy) s.busyPolicy = 'queue';
  const text = String(d.message || (d.queued ? 'Queued: it will run after the current reply.' : 'The assistant is busy; try again when it is done.'));
  if (p) {
    p.state = d.queued ? 'queued' : 'failed';
    p.note = text;
    p.rev++;
  }
  setNote(s, 'busy', text);
}

function onError(s, d) {
  if (s.lastFrameKind === 'command') s.resetRequested = false;
  const text = String(d.message || d.code || 'error');
  const p = (d.client_msg_id && s.pending.find((x) => x.id === d.client_msg_id)) ||
    (!d.client_msg_id && s.lastFrameKind === 'message' ? oldestInFlight(s) : null);
  if (p) { p.state = 'failed'; p.note = text; p.rev++; }
  setNote(s, 'error', text);
}

function onFrame(s, f) {
  if (!f || typeof f !== 'object' || typeof f.type !== 'string') return;
  switch (f.type) {
    case 'connected':
      s.phase = 'replay';
      s.replay = { info: f.data || {}, events: [] };
      return;
    case 'synced':
      finishReplay(s, f.data || {});
      return;
    case 'busy':
      onBusy(s, f.data || {});
      return;
    case 'error':
      onError(s, f.data || {});
      return;
  }
  // Until `synced` we cannot know whether to clear the view first, so hold the replay.
  if (s.phase === 'replay' && s.replay) s.replay.events.push(f);
  else applyEvent(s, f, true);
}

// ── the reducer: every change to the state goes through here ──
function reduce(s, a) {
  switch (a.type) {
    case 'socket-open':
      s.phase = 'handshake';
      break;
    case 'socket-closed':
      s.phase = 'down';
      s.replay = null;          // a half-received replay is dropped; we ask again with the same since
      s.cancelRequested = false;
      // Messages sent on the dead connection and not echoed yet are re-sent
      // (same client_msg_id, so the server never runs one twice).
      s.resetRequested = false;
      for (const p of s.pending) if (p.state === 'sent' || p.state === 'held') { p.state = 'waiting'; p.rev++; }
      break;
    case 'frame':
      onFrame(s, a.frame);
      break;
    case 'submit': {
      const p = { id: a.id, content: a.content, state: 'waiting', note: '', sends: 0, rev: 1 };
      s.pending.push(p);
      if (s.phase === 'live') sendPending(s, p);
      break;
    }
    case 'retry': {
      const p = s.pending.find((x) => x.id === a.id);
      if (!p) break;
      p.sends = 0;
      if (s.phase === 'live') sendPending(s, p); else { p.state = 'waiting'; p.note = ''; p.rev++; }
      break;
    }
    case 'discard':
      removePending(s, a.id);
      break;
    case 'cancel':
      if (s.phase === 'live' && isBusy(s) && !s.cancelRequested) {
        s.outbox.push({ type: 'command', action: 'cancel' });
        s.lastFrameKind = 'command';
        s.cancelRequested = true;
      }
      break;
    case 'decide': {        // {id, decision}: answer an approval_request
      const it = s.byKey.get('ap:' + a.id);
      if (s.phase === 'live' && it && !it.decision && !it.sent && (a.decision === 'approve' || a.decision === 'deny')) {
        s.outbox.push({ type: 'command', action: a.decision, id: a.id });
        s.lastFrameKind = 'command';
        it.sent = a.decision; // buttons off until the result (or an error) comes
        touch(it);
      }
      break;
    }
    case 'reset':
      if (s.phase === 'live' && !s.resetRequested) {
        s.outbox.push({ type: 'command', action: 'reset' });
        s.lastFrameKind = 'command';
        s.resetRequested = true;
      }
      break;

    default:
      reduceHistory(s, a); // scroll-back, jumps and search (history.js)
      break;
  }
  return s;
}

// What the composer offers now: whether Send works and, if it does not or
// does something special, the sentence that says why.
function composer(s) {
  if (s.phase !== 'live') {
    return { canSend: true, kind: 'offline', reason: 'Not connected: what you send now is kept and delivered when the connection is back.' };
  }
  if (!isBusy(s)) return { canSend: true, kind: '', reason: '' };
  if (s.cancelRequested) return { canSend: false, kind: 'busy', reason: 'Cancelling the reply…' };
  if (s.busyPolicy === 'queue') {
    return { canSend: true, kind: 'queue', reason: 'The assistant is replying. A message sent now waits in the queue and runs next (a newer one replaces it).' };
  }
  if (s.busyPolicy === 'interrupt') {
    return { canSend: true, kind: 'interrupt', reason: 'The assistant is replying. Sending now stops that reply and starts on yours.' };
  }
  return { canSend: false, kind: 'busy', reason: 'The assistant is replying. You can send when it is done, or cancel it.' };
}

// `since` for the next connection; omitted while we have seen nothing.
const sinceParam = (s) => (s.lastSeq > 0 ? s.lastSeq : null);


export { initialState, reduce, isBusy, sinceParam, composer, MAX_SENDS,
  channelLabel, channelKind, resetText, turnEndText,
  olderState, itemForSeq, findMatches, highlight, marked, markedTerms, withDays, shown, pageWindow,
  markdown, safeHref, textOf };
