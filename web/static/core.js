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
import { initialTray, limitsFrom, trayState, takeTray, reduceAttachments, cleanAttachments, isImage, formatSize }
  from './attachments.js';
import { reduceHistory, learnDensity, shown, pageWindow, olderState, itemForSeq, findMatches, highlight, marked,
  markedTerms, withDays } from './history.js';
import { WAIT_CODES, RETRY_FOR_MS, initialDesk, retryDelay, clusterFrom } from './desk.js';

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
    openTurns: [],       // turns started (user event, or turn_start of a queued one) and not yet ended (turn_end)
    queuedTurns: new Set(), // turns of queued inputs (user.queued) that have not started (turn_start) or ended
    status: '',          // latest status text of the running turn
    cancelRequested: false,
    resetRequested: false,
    busyPolicy: '',      // reject | queue | interrupt: connected.busy_policy, or learned from a queued busy reply
    pending: [],         // {id, content, state: waiting|held|sent|queued|retrying|failed, note, sends, rev}
                         // retrying: refused with no_leader/no_answer, sent again by itself at retryAt (desk.js)
    ownIds: new Set(),   // client_msg_ids this tab sent: their echo is "you" (items.js mine)
    tray: initialTray(), // files for the next message (attachments.js)
    replay: null,        // {info: connected data, events: []} between connected and synced
    lastFrameKind: null, // kind of the last frame we sent ('message' | 'command')
    note: null,          // {kind: 'busy'|'error'|'info', text, serial} shown by the composer
    noteSerial: 0,
    outbox: [],          // frames for the shell to send (drained after each dispatch)
    announce: [],        // texts for the screen-reader live region (drained by the view)
    schedulesRev: 0,     // bumped by each schedules_changed frame (schedules.js reloads on it)
    memoryPeople: {},    // memory item id → the person of its latest memory_change seen live
    memoryRev: 0,        // bumped by each memory_changed event (memory.js reloads on it)
    desk: initialDesk(), // the cluster behind the page, from /api/session (desk.js)

    // History (scroll-back, search, jump). The live view above is a "view":
    // items + byKey + firstSeq + older. It holds every persisted event with
    // seq ≥ firstSeq, so an older page is deduplicated by seq < firstSeq.
    firstSeq: null,      // null: nothing shown yet
    epoch: 1,            // bumps whenever the live view is cleared: answers for the old one are dropped
    epochs: 1,           // counter behind every view's epoch
    older: idleLoad(),   // the live view's scroll-back: {loading, error, acc, start}
    density: 0.05,       // persisted events per seq number (a page holds fewer after a reset trims), sizes the next page
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

// keepExchanges trims the live view at a reset to what the assistant keeps:
// the last n exchanges (each from a user message on), as the hub trims its
// buffer. A client that joins later gets those same events replayed before
// the reset, so every tab shows the same. What is cut stays in the history.
// A queued input still waiting survives a reset (it runs after it): it is
// kept wherever it is and is not counted as an exchange.
function keepExchanges(s, n) {
  const waiting = (it) => it.kind === 'user' && it.queue === 'waiting';
  let from = s.items.length;
  for (let i = s.items.length - 1, users = 0; i >= 0 && users < n; i--) {
    if (s.items[i].kind === 'user' && !waiting(s.items[i])) { users++; from = i; }
  }
  const start = n > 0 ? s.items[from] : null;
  const kept = s.items.filter((it, i) => (n > 0 && i >= from) || waiting(it));
  clearView(s);
  for (const it of kept) { s.items.push(it); s.byKey.set(it.key, it); }
  if (start && typeof start.seq === 'number') s.firstSeq = start.seq;
}

function closeTurn(s, turn) {
  // A queued input that ends without running (replaced) was never the running turn.
  if (s.queuedTurns.delete(turn)) return;
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
  const frame = { type: 'message', content: p.content, client_msg_id: p.id };
  if (p.attachments.length) frame.attachments = p.attachments.map((a) => a.sha256);
  s.outbox.push(frame);
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
  if (ev.type === 'user' && d.client_msg_id) {
    removePending(s, d.client_msg_id);
    // Answered: the note that said we wait for the desk goes with the last such input.
    if (s.note && s.note.kind === 'wait' && !s.pending.some((p) => p.state === 'retrying')) setNote(s, '', '');
  }

  if (typeof ev.seq === 'number') {
    if (ev.seq <= s.lastSeq) return; // already rendered
    s.lastSeq = ev.seq;
    markStreams(s);
  }
  if (ev.type === 'reset') {
    keepExchanges(s, Number(d.kept) || 0);
    s.resetRequested = false;
  }
  if (hasSeq(ev) && s.firstSeq === null) s.firstSeq = ev.seq;

  const it = addItem(s, s, ev, false);
  switch (ev.type) {
    case 'user':
      // A queued input is recorded now and runs later: the session is not
      // running it (turn_start says when it does).
      if (d.queued === true) { if (ev.turn) s.queuedTurns.add(ev.turn); }
      else if (ev.turn && !s.openTurns.includes(ev.turn)) s.openTurns.push(ev.turn);
      if (live) s.announce.push(channelLabel(d) + (d.queued === true ? ' message, queued: ' : ' message: ') + (d.content ?? ''));
      break;
    case 'turn_start':
      if (ev.turn) {
        s.queuedTurns.delete(ev.turn);
        // One turn runs at a time: whatever we thought ran has ended.
        s.openTurns = [ev.turn];
        s.status = '';
      }
      break;
    case 'status':
      s.status = String(d.text ?? '');
      break;
    case 'assistant':
      if (live) s.announce.push('Assistant: ' + plainText(it.text));
      break;
    case 'turn_end':
      if (it && live) s.announce.push(it.text);
      if (d.status === 'replaced') s.queuedTurns.delete(ev.turn); // it never ran
      else closeTurn(s, ev.turn);
      break;
    case 'notice':
    case 'reset':
      if (live) s.announce.push(it.text);
      break;
  }
  // Someone reading older history is told that the live conversation moved on.
  if (live && s.archive && (ev.type === 'user' || ev.type === 'assistant')) s.archive.unseen++;
}

// Only persisted events carry a seq: a running turn's deltas come without
// one, after the last seq. markStreams notes how much of each streaming
// reply we had when the last seq arrived; a resume with since=lastSeq
// replays the deltas after it, so rewindStreams cuts the text back to that
// mark first and nothing is shown twice.
function markStreams(s) {
  for (const t of s.openTurns) {
    const b = s.byKey.get('a:' + t);
    if (b && b.streaming) b.mark = b.text.length;
  }
}

function rewindStreams(s) {
  for (const it of s.items) {
    if (it.kind === 'assistant' && it.streaming && !it.final) {
      it.text = it.text.slice(0, it.mark || 0);
      touch(it);
    }
  }
  // A bubble left empty goes (its replayed deltas, if any, make it again):
  // after a restart the reply it streamed is not on disk, and not shown.
  const empty = (it) => it.kind === 'assistant' && it.streaming && !it.final && it.text === '';
  for (const it of s.items) if (empty(it)) s.byKey.delete(it.key);
  s.items = s.items.filter((it) => !empty(it));
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
    s.queuedTurns = new Set();
    s.status = '';
  } else {
    rewindStreams(s);
  }
  s.sessionId = info.session_id ?? s.sessionId;
  s.generation = info.generation ?? s.generation;
  if (typeof info.max_message_bytes === 'number' && info.max_message_bytes > 0) s.maxFrameBytes = info.max_message_bytes;
  if (['reject', 'queue', 'interrupt'].includes(info.busy_policy)) s.busyPolicy = info.busy_policy;
  limitsFrom(s.tray, info);

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
  // One that names a message already echoed (a queued echo comes first)
  // has nothing of ours to mark.
  const p = d.client_msg_id ? s.pending.find((x) => x.id === d.client_msg_id)
    : (!d.queued && s.pending.find((x) => x.state === 'queued')) || oldestInFlight(s);
  if (d.queued && !s.busyPolicy) s.busyPolicy = 'queue';
  const text = String(d.message || (d.queued ? 'Queued: it will run after the current reply.' : 'The assistant is busy; try again when it is done.'));
  if (p) {
    p.state = d.queued ? 'queued' : 'failed';
    p.note = text;
    p.rev++;
  }
  setNote(s, 'busy', text);
}

function onError(s, d, now) {
  if (s.lastFrameKind === 'command') s.resetRequested = false;
  const text = String(d.message || d.code || 'error');
  const p = (d.client_msg_id && s.pending.find((x) => x.id === d.client_msg_id)) ||
    (!d.client_msg_id && s.lastFrameKind === 'message' ? oldestInFlight(s) : null);
  if (p && WAIT_CODES.has(d.code) && waitForDesk(s, p, now)) return;
  if (p) { p.state = 'failed'; p.note = text; p.rev++; }
  setNote(s, 'error', text);
}

// waitForDesk handles an input refused because no node runs the assistant
// now (or its outcome is unknown): it is sent again by itself, with the
// same client_msg_id, until RETRY_FOR_MS after the first refusal; false
// once that is over (it fails as any refusal).
function waitForDesk(s, p, now) {
  if (p.refusedAt === undefined) { p.refusedAt = now; p.tries = 0; }
  if (now - p.refusedAt >= RETRY_FOR_MS) return false;
  p.state = 'retrying';
  p.retryAt = now + retryDelay(p.tries++);
  p.sends = 0; // it reached the server: not a dropped connection
  p.note = 'No node runs the assistant right now; sending it again by itself.';
  p.rev++;
  if (!s.note || s.note.kind !== 'wait') setNote(s, 'wait', 'Waiting for the desk: no node runs the assistant right now. Your message is sent again by itself.');
  return true;
}

// retryDue sends again the refused inputs whose time has come (at once if
// live; else they wait for the connection like any other).
function retryDue(s, now) {
  for (const p of s.pending) {
    if (p.state !== 'retrying' || p.retryAt > now) continue;
    if (s.phase === 'live') sendPending(s, p);
    else { p.state = 'waiting'; p.rev++; }
  }
}

function onFrame(s, f, now) {
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
      onError(s, f.data || {}, now);
      return;
    case 'schedules_changed': // no seq, not history: the Scheduled panel looks again
      s.schedulesRev++;
      return;
    case 'memory_changed': // the Memory panel looks again; it is in the log too (its seq is counted below)
      s.memoryRev++;
      if (f.data && f.data.person && f.data.id) s.memoryPeople[f.data.id] = String(f.data.person); // who changed it last
      break;
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
    case 'frame':           // {frame, now}: now (ms) times a refused input's next send
      onFrame(s, a.frame, a.now || 0);
      break;
    case 'retry-due':       // {now}: the shell's timer for the earliest retryAt
      retryDue(s, a.now);
      break;
    case 'cluster':         // {cluster}: /api/session's cluster block (undefined on a single node)
      s.desk.cluster = clusterFrom(a.cluster);
      break;
    case 'adopt':           // {pending: [{id, content, attachments}], from}: what a tab brought when it moved here
      if (a.from) setNote(s, 'info', 'Node ' + a.from + ' stopped answering: this tab moved here.');
      for (const q of a.pending || []) {
        if (s.pending.some((p) => p.id === q.id)) continue;
        s.pending.push({ id: q.id, content: q.content, attachments: q.attachments || [], state: 'waiting', note: '', sends: 0, rev: 1 });
        s.ownIds.add(q.id);
      }
      if (s.phase === 'live') flushPending(s, isBusy(s));
      break;
    case 'submit': {        // {id, content}: the composer's text and the tray's files
      if (!trayState(s.tray).ready) break; // the composer says why
      const attachments = takeTray(s.tray);
      if (!String(a.content ?? '').trim() && !attachments.length) break;
      const p = { id: a.id, content: a.content, attachments, state: 'waiting', note: '', sends: 0, rev: 1 };
      s.pending.push(p);
      s.ownIds.add(a.id);
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
      // the tray (attachments.js), else scroll-back, jumps and search (history.js)
      if (!reduceAttachments(s, a)) reduceHistory(s, a);
      break;
  }
  return s;
}

// What the composer offers now: whether Send works and, if it does not or
// does something special, the sentence that says why.
function composer(s) {
  const tray = trayState(s.tray);
  if (!tray.ready) return { canSend: false, kind: 'busy', reason: tray.reason };
  if (s.phase !== 'live') {
    return { canSend: true, kind: 'offline', reason: 'Not connected: what you send now is kept and delivered when the connection is back.' };
  }
  if (!isBusy(s)) return { canSend: true, kind: '', reason: '' };
  // The status line beside it says that the assistant is replying, and to whom.
  if (s.cancelRequested) return { canSend: false, kind: 'busy', reason: '' };
  if (s.busyPolicy === 'queue') {
    return { canSend: true, kind: 'queue', reason: 'A message sent now waits and runs next (a newer one replaces it).' };
  }
  if (s.busyPolicy === 'interrupt') {
    return { canSend: true, kind: 'interrupt', reason: 'Sending now stops this reply and starts on yours.' };
  }
  return { canSend: false, kind: 'busy', reason: 'Send when it is done, or cancel it (Esc).' };
}

// whoseTurn names who the running turn answers: 'you' for a message this
// tab sent, else its channel label ('webhook · ci'); '' when not known.
function whoseTurn(s) {
  const t = s.openTurns[s.openTurns.length - 1];
  if (!t || t === UNKNOWN_TURN) return '';
  const it = s.items.findLast((i) => i.kind === 'user' && i.turn === t);
  return !it ? '' : it.mine ? 'you' : it.label;
}

// statusLine is the one line shown while a turn runs (null: none): whom the
// assistant answers and the backend's latest progress text; while we are
// not connected we cannot know, so it says that instead.
function statusLine(s) {
  if (!isBusy(s)) return null;
  if (s.phase !== 'live') return { kind: 'offline', text: 'The reply goes on at the server; it shows here once the connection is back.' };
  if (s.cancelRequested) return { kind: 'cancelling', text: 'Cancelling the reply…' };
  // A tool call waiting for a yes or no: the turn waits for a person, not
  // for the model, whatever the backend's last status said.
  const ask = waitingApproval(s);
  if (ask) return { kind: 'approval', text: 'Waiting for approval to run ' + ask.tool + ' — Approve or Deny below.' };
  const who = whoseTurn(s);
  return { kind: 'working', text: (who ? 'Replying to ' + who : 'Replying') + (s.status ? ' · ' + s.status : '…') };
}

// waitingApproval is the last approval of the running turn that has no
// answer yet (null: none).
function waitingApproval(s) {
  const t = s.openTurns[s.openTurns.length - 1];
  for (let i = s.items.length - 1; i >= 0 && i >= s.items.length - 200; i--) {
    const it = s.items[i];
    if (it.kind === 'approval' && !it.decision && (t === UNKNOWN_TURN || it.turn === t)) return it;
  }
  return null;
}

// reconnectDelay is how long the shell waits before its next try, in ms:
// attempts is the failed tries since the last good connection, lostMs how
// long ago that connection was lost (Infinity: never connected), full that
// the server refused us as full (close 1013). A connection lost moments ago
// is most likely a restart that is back within seconds: retry about every
// second then. Otherwise 0.5 s doubling to 10 s; a full server 2 s doubling
// to 30 s. ±25 % jitter, so that clients dropped together do not return in
// lockstep.
function reconnectDelay(attempts, lostMs, full, random = Math.random) {
  const base = full ? Math.min(30000, 2000 * 2 ** attempts)
    : lostMs < 30000 ? Math.min(1200, 250 * 2 ** attempts)
    : Math.min(10000, 500 * 2 ** attempts);
  return base * (0.75 + random() * 0.5);
}

// `since` for the next connection; omitted while we have seen nothing.
const sinceParam = (s) => (s.lastSeq > 0 ? s.lastSeq : null);


export { cleanAttachments, isImage, formatSize, trayState };
export { initialState, reduce, isBusy, sinceParam, composer, statusLine, whoseTurn, reconnectDelay, MAX_SENDS,
  channelLabel, channelKind, resetText, turnEndText,
  olderState, itemForSeq, findMatches, highlight, marked, markedTerms, withDays, shown, pageWindow,
  markdown, safeHref, textOf };
