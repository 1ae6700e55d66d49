// frontdesk chat UI. Plain JS, no build step, no dependencies.
//
// The file has three parts, top to bottom:
//   1. Core      — the protocol state machine: replay buffering, seq dedupe,
//                  busy tracking, pending ("sending…") messages. No DOM, no I/O;
//                  node can require() this file and test it (see the bottom).
//   2. Shell     — the WebSocket: connect, backoff, close codes, token auth.
//   3. View      — DOM rendering from the core state. Every piece of server or
//                  user text goes through textContent, never innerHTML.
'use strict';

// ───────────────────────────── 1. Core ─────────────────────────────
const Core = (() => {
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
      pending: [],         // {id, content, state: waiting|sent|queued|failed, note, sends, rev}
      replay: null,        // {info: connected data, events: []} between connected and synced
      lastFrameKind: null, // kind of the last frame we sent ('message' | 'command')
      note: null,          // {kind: 'busy'|'error'|'info', text, serial} shown by the composer
      noteSerial: 0,
      outbox: [],          // frames for the shell to send (drained after each dispatch)
      announce: [],        // texts for the screen-reader live region (drained by the view)
    };
  }

  const isBusy = (s) => s.openTurns.length > 0;

  // ── helpers ──
  function newItem(s, kind, key, fields) {
    const it = Object.assign({ kind, key: key || kind + ':' + s.nextKey++, rev: 1 }, fields);
    s.items.push(it);
    s.byKey.set(it.key, it);
    return it;
  }
  const touch = (it) => { it.rev++; return it; };

  function clearView(s) {
    s.items = [];
    s.byKey = new Map();
  }

  function setNote(s, kind, text) {
    s.note = { kind, text, serial: ++s.noteSerial };
  }

  function assistantBubble(s, ev) {
    const key = 'a:' + (ev.turn || 'none:' + s.nextKey++);
    return s.byKey.get(key) ||
      newItem(s, 'assistant', key, { turn: ev.turn, ts: ev.ts, text: '', streaming: false,
        final: false, partial: false, ended: false });
  }

  function closeTurn(s, turn) {
    const i = s.openTurns.indexOf(turn);
    if (i >= 0) s.openTurns.splice(i, 1);
    // A turn_end for a turn we never saw start ends the "unknown" running turn.
    else s.openTurns = s.openTurns.filter((t) => t !== UNKNOWN_TURN);
    if (!isBusy(s)) { s.status = ''; s.cancelRequested = false; }
  }

  function channelLabel(d) {
    const ch = (d && d.channel) || 'unknown';
    return d && d.from ? ch + ' · ' + d.from : ch;
  }

  function turnEndText(d) {
    const secs = typeof d.duration_ms === 'number' ? ' after ' + (d.duration_ms / 1000).toFixed(1) + ' s' : '';
    switch (d.status) {
      case 'cancelled': return 'Cancelled' + secs + '.';
      case 'interrupted': return 'Interrupted' + secs + ' (the server stopped while working).';
      case 'error': return 'Error' + secs + ': ' + (d.error || 'the turn failed.');
      default: return (d.status || 'Ended') + secs + (d.error ? ': ' + d.error : '.');
    }
  }

  function resetText(d) {
    const reason = String(d.reason || 'reset').replace(/-/g, ' ');
    const n = Number(d.kept) || 0;
    return 'Conversation reset (' + reason + ') — kept ' + n + ' exchange' + (n === 1 ? '' : 's');
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

  function flushPending(s, busy) {
    for (const p of s.pending) {
      // A queued message (busy_policy: queue) is still in the server's queue
      // while a turn runs; sending it again would push out whatever replaced
      // it. With the session idle the queue has drained, and our message was
      // not echoed (else it would be gone): it was lost, e.g. by a restart.
      if (p.state === 'queued' && busy) continue;
      if (p.state !== 'waiting' && p.state !== 'queued') continue;
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

  // ── history events (they may carry seq) ──
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

    switch (ev.type) {
      case 'user': {
        newItem(s, 'user', ev.seq ? 'u:' + ev.seq : null, {
          turn: ev.turn, ts: ev.ts, channel: d.channel, from: d.from || '',
          label: channelLabel(d), content: String(d.content ?? ''),
        });
        if (ev.turn && !s.openTurns.includes(ev.turn)) s.openTurns.push(ev.turn);
        if (live) s.announce.push(channelLabel(d) + ' message: ' + (d.content ?? ''));
        break;
      }
      case 'status':
        s.status = String(d.text ?? '');
        break;
      case 'delta': {
        const b = assistantBubble(s, ev);
        if (b.final || b.ended) break; // a late or repeated chunk; the final text is in
        b.text += String(d.text ?? '');
        b.streaming = true;
        touch(b);
        break;
      }
      case 'tool_call': {
        const key = 't:' + ev.turn + ':' + d.id;
        const t = s.byKey.get(key) || newItem(s, 'tool', key, { turn: ev.turn, ts: ev.ts, output: null, error: '' });
        Object.assign(t, { name: String(d.name ?? 'tool'), args: d.args });
        touch(t);
        break;
      }
      case 'tool_result': {
        const key = 't:' + ev.turn + ':' + d.id;
        const t = s.byKey.get(key) || newItem(s, 'tool', key, { turn: ev.turn, ts: ev.ts, name: String(d.name ?? 'tool'), args: null });
        t.output = String(d.output ?? '');
        t.error = String(d.error ?? '');
        touch(t);
        break;
      }
      case 'assistant': {
        const b = assistantBubble(s, ev);
        Object.assign(b, { text: String(d.content ?? ''), final: true, streaming: false,
          partial: !!d.partial, ts: ev.ts });
        touch(b);
        if (live) s.announce.push('Assistant: ' + b.text);
        break;
      }
      case 'turn_end': {
        const b = s.byKey.get('a:' + ev.turn);
        if (b) { b.streaming = false; b.ended = true; touch(b); }
        if (d.status && d.status !== 'completed') {
          const text = turnEndText(d);
          newItem(s, 'turn_end', 'e:' + ev.turn + ':' + (ev.seq || s.nextKey++), { turn: ev.turn, ts: ev.ts, status: d.status, text });
          if (live) s.announce.push(text);
        }
        closeTurn(s, ev.turn);
        break;
      }
      case 'notice':
        newItem(s, 'notice', null, { ts: ev.ts, text: String(d.text ?? '') });
        if (live) s.announce.push(String(d.text ?? ''));
        break;
      case 'reset': {
        clearView(s);
        const text = resetText(d);
        newItem(s, 'notice', null, { ts: ev.ts, text });
        if (live) s.announce.push(text);
        break;
      }
      default:
        break; // unknown types are ignored, so a newer server does not break us
    }
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

    for (const ev of events) applyEvent(s, ev, false);

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
    const text = String(d.message || (d.queued ? 'Queued: it will run after the current reply.' : 'The assistant is busy; try again when it is done.'));
    if (p) {
      p.state = d.queued ? 'queued' : 'failed';
      p.note = text;
      p.rev++;
    }
    setNote(s, 'busy', text);
  }

  function onError(s, d) {
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
        for (const p of s.pending) if (p.state === 'sent') { p.state = 'waiting'; p.rev++; }
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
      default:
        break;
    }
    return s;
  }

  // `since` for the next connection; omitted while we have seen nothing.
  const sinceParam = (s) => (s.lastSeq > 0 ? s.lastSeq : null);

  return { initialState, reduce, isBusy, sinceParam, channelLabel, resetText, turnEndText, MAX_SENDS };
})();

if (typeof module !== 'undefined' && module.exports) {
  module.exports = Core; // node: tests load the core only
} else {
  startApp(); // browser (function declarations below are hoisted)
}

function startApp() {
  // ───────────────────────────── 2. Shell ─────────────────────────────
  const TOKEN_KEY = 'frontdesk.token';
  // Client-side guard for server.max_message_bytes: the server announces its
  // limit in `connected`; 64 KiB (the default) until then.
  const DEFAULT_MAX_FRAME_BYTES = 65536;

  const state = Core.initialState();
  const net = {
    ws: null,
    attempts: 0,            // failed attempts since the last `connected`; drives the backoff
    retryTimer: null,
    retryAt: 0,
    serverRestarting: false, // last close was 1001
    authNeeded: false,       // token form is up; no retries until it is answered
    tokenRejected: false,
    everConnected: false,
  };

  // localStorage may be unavailable (private mode, disabled storage): keep the token in memory then.
  let memToken = '';
  const getToken = () => { try { return localStorage.getItem(TOKEN_KEY) || ''; } catch { return memToken; } };
  const setToken = (t) => { memToken = t; try { t ? localStorage.setItem(TOKEN_KEY, t) : localStorage.removeItem(TOKEN_KEY); } catch { /* memory only */ } };

  function dispatch(action) {
    Core.reduce(state, action);
    drainOutbox();
    updateTitle(); // synchronously: background tabs get no animation frames, and the title matters most there
    scheduleRender();
  }

  function drainOutbox() {
    while (state.outbox.length) {
      const frame = state.outbox.shift();
      if (!net.ws || net.ws.readyState !== WebSocket.OPEN) break; // the close handler re-queues messages
      try { net.ws.send(JSON.stringify(frame)); } catch { /* closing; handled by onclose */ }
    }
    state.outbox.length = 0;
  }

  function wsURL() {
    const q = new URLSearchParams();
    const since = Core.sinceParam(state);
    if (since !== null) q.set('since', String(since));
    const token = getToken();
    if (token) q.set('token', token);
    const qs = q.toString();
    return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws' + (qs ? '?' + qs : '');
  }

  function connect() {
    clearTimeout(net.retryTimer);
    net.retryTimer = null;
    if (net.ws || net.authNeeded) return;
    let ws;
    try { ws = new WebSocket(wsURL()); } catch { scheduleRetry(); return; }
    net.ws = ws;
    let gotConnected = false;
    ws.onopen = () => { if (net.ws === ws) dispatch({ type: 'socket-open' }); };
    ws.onmessage = (e) => {
      if (net.ws !== ws) return;
      let f;
      try { f = JSON.parse(e.data); } catch { return; } // not ours to crash on
      if (f && f.type === 'connected') {
        gotConnected = true;
        net.attempts = 0;
        net.serverRestarting = false;
        net.tokenRejected = false;
        net.everConnected = true;
      }
      dispatch({ type: 'frame', frame: f });
    };
    ws.onclose = (e) => {
      if (net.ws !== ws) return;
      net.ws = null;
      dispatch({ type: 'socket-closed' });
      onClosed(e, gotConnected);
    };
  }

  async function onClosed(e, gotConnected) {
    if (!gotConnected) {
      // A refused upgrade looks like any network failure to the browser (code
      // 1006), so ask the API whether the token is the reason.
      const hadToken = !!getToken();
      if (await sessionUnauthorized(hadToken)) {
        net.authNeeded = true;
        net.tokenRejected = hadToken;
        if (hadToken) setToken(''); // a wrong token is not kept for the next page load
        showTokenForm();
        scheduleRender();
        return;
      }
    }
    if (e.code === 1008 && e.reason === 'slow consumer') {
      // We fell behind; nothing is wrong with the server. Come back at once (since= fills the gap).
      scheduleRetry(150 + Math.random() * 250);
      return;
    }
    net.serverRestarting = e.code === 1001;
    if (net.serverRestarting) net.attempts = 0; // a restart is expected to be quick: start the backoff over
    scheduleRetry();
  }

  async function sessionUnauthorized(withToken) {
    try {
      const headers = withToken ? { Authorization: 'Bearer ' + getToken() } : {};
      const res = await fetch('/api/session', { headers, cache: 'no-store' });
      return res.status === 401;
    } catch {
      return false; // network down: retry as usual
    }
  }

  // Exponential backoff: 0.5 s doubling up to 10 s, ±25 % jitter so that many
  // clients dropped together (a server restart) do not reconnect in lockstep.
  function scheduleRetry(delay) {
    clearTimeout(net.retryTimer);
    if (delay === undefined) {
      delay = Math.min(10000, 500 * 2 ** net.attempts) * (0.75 + Math.random() * 0.5);
      net.attempts++;
    }
    net.retryAt = Date.now() + delay;
    net.retryTimer = setTimeout(connect, delay);
    scheduleRender();
  }

  function retryNow() {
    net.attempts = 0;
    connect();
  }

  window.addEventListener('online', () => { if (!net.ws) retryNow(); });
  window.addEventListener('offline', scheduleRender);

  // ───────────────────────────── 3. View ─────────────────────────────
  const $ = (id) => document.getElementById(id);
  const el = {
    conn: $('conn'), connText: $('conn-text'), retry: $('retry'),
    main: $('conversation'), log: $('log'), pending: $('pending'), empty: $('empty'),
    jump: $('jump'), status: $('statusline'), statusText: $('status-text'),
    announcer: $('announcer'), form: $('composer'), input: $('message'), send: $('send'),
    cancel: $('cancel'), note: $('composer-note'),
    auth: $('auth'), authForm: $('auth-form'), authInput: $('auth-token'), authError: $('auth-error'),
  };

  function h(tag, className, text) {
    const n = document.createElement(tag);
    if (className) n.className = className;
    if (text !== undefined) n.textContent = text; // text only, always
    return n;
  }

  function timeOf(ts) {
    const d = new Date(ts);
    return isNaN(d) ? null : d;
  }

  function timeEl(ts) {
    const d = timeOf(ts);
    const t = h('time', 'when', d ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : '');
    if (d) { t.dateTime = d.toISOString(); t.title = d.toLocaleString(); }
    return t;
  }

  function clip(s, n) {
    return s.length > n ? s.slice(0, n) + '\n… (' + (s.length - n) + ' more characters)' : s;
  }

  // Build and update one conversation item. build() makes the skeleton,
  // update() fills it from the item; update runs again whenever item.rev changes.
  const views = {
    user: {
      build(it) {
        const li = h('li', 'msg user');
        const b = h('div', 'bubble');
        const meta = h('div', 'meta');
        meta.append(h('span', 'badge', it.label), timeEl(it.ts));
        b.append(meta, h('div', 'text', it.content));
        li.append(b);
        return li;
      },
      update() {},
    },
    assistant: {
      build(it) {
        const li = h('li', 'msg assistant');
        const b = h('div', 'bubble');
        const meta = h('div', 'meta');
        meta.append(h('span', 'who', 'assistant'), timeEl(it.ts));
        b.append(meta, h('div', 'text'), h('div', 'flag'));
        li.append(b);
        return li;
      },
      update(li, it) {
        li.classList.toggle('streaming', it.streaming);
        li.classList.toggle('partial', it.partial);
        // aria-busy keeps screen readers from reading every streamed chunk.
        li.setAttribute('aria-busy', it.streaming ? 'true' : 'false');
        li.querySelector('.text').textContent = it.text;
        li.querySelector('.flag').textContent = it.partial ? 'The reply was cut short.' : '';
      },
    },
    tool: {
      build() {
        const li = h('li', 'tool');
        const det = h('details');
        const sum = h('summary');
        sum.append(h('span', 'tool-label', 'tool'), h('span', 'tool-name'), h('span', 'tool-state'));
        det.append(sum, h('div', 'tool-h', 'arguments'), h('pre', 'tool-args'), h('div', 'tool-h', 'result'), h('pre', 'tool-out'));
        li.append(det);
        return li;
      },
      update(li, it) {
        li.querySelector('.tool-name').textContent = it.name || 'tool';
        const st = it.error ? 'failed' : it.output === null ? 'running…' : 'done';
        li.querySelector('.tool-state').textContent = st;
        li.classList.toggle('failed', !!it.error);
        let args = it.args;
        if (args !== null && typeof args !== 'string') { try { args = JSON.stringify(args, null, 2); } catch { args = String(args); } }
        li.querySelector('.tool-args').textContent = clip(String(args ?? ''), 4000);
        li.querySelector('.tool-out').textContent = it.error ? 'error: ' + it.error + (it.output ? '\n' + clip(it.output, 4000) : '')
          : it.output === null ? '…' : clip(it.output, 4000);
      },
    },
    notice: {
      build(it) { return h('li', 'notice', it.text); },
      update() {},
    },
    turn_end: {
      build(it) { return h('li', 'turn-end ' + it.status, it.text); },
      update() {},
    },
  };

  const PENDING_LABEL = {
    waiting: 'waiting for the connection…',
    sent: 'sending…',
    queued: 'queued',
    failed: 'not sent',
  };
  const pendingView = {
    build(p) {
      const li = h('li', 'msg user pending');
      li.dataset.id = p.id;
      const b = h('div', 'bubble');
      const meta = h('div', 'meta');
      meta.append(h('span', 'badge', 'web'), h('span', 'pending-state'));
      const actions = h('div', 'actions');
      for (const [action, label] of [['retry', 'Retry'], ['edit', 'Edit'], ['discard', 'Discard']]) {
        const btn = h('button', 'small', label);
        btn.type = 'button';
        btn.dataset.action = action;
        actions.append(btn);
      }
      b.append(meta, h('div', 'text', p.content), h('div', 'flag'), actions);
      li.append(b);
      return li;
    },
    update(li, p) {
      li.dataset.state = p.state;
      li.querySelector('.pending-state').textContent = PENDING_LABEL[p.state] || p.state;
      li.querySelector('.flag').textContent = p.note || '';
      // Retry only makes sense once it failed; Discard/Edit are always available
      // so a message that never gets an answer can't get stuck on screen.
      li.querySelector('[data-action=retry]').hidden = p.state !== 'failed';
    },
  };

  // Keyed reconciliation: reuse each item's element, update it when its rev
  // changed, keep DOM order equal to list order, drop what is gone. Streaming
  // a delta thus rewrites one text node instead of the whole list.
  function reconcile(container, list, cache, viewFor) {
    const seen = new Set();
    let prev = null;
    for (const it of list) {
      const key = it.key || it.id;
      seen.add(key);
      let rec = cache.get(key);
      const view = viewFor(it);
      if (!rec) {
        rec = { node: view.build(it), rev: -1 };
        cache.set(key, rec);
      }
      if (rec.rev !== it.rev) { view.update(rec.node, it); rec.rev = it.rev; }
      const want = prev ? prev.nextSibling : container.firstChild;
      if (want !== rec.node) container.insertBefore(rec.node, want);
      prev = rec.node;
    }
    for (const [key, rec] of cache) if (!seen.has(key)) { rec.node.remove(); cache.delete(key); }
  }

  const itemCache = new Map();
  const pendingCache = new Map();
  let renderQueued = false;
  let shownNoteSerial = 0;
  let noteTimer = null;

  // Coalesce bursts of frames (a replay, fast deltas) into one render per frame.
  function scheduleRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => { renderQueued = false; render(); });
  }
  document.addEventListener('visibilitychange', () => { if (!document.hidden) render(); });

  function nearBottom() {
    const m = el.main;
    return m.scrollHeight - m.scrollTop - m.clientHeight < 80;
  }

  function connectionView() {
    if (state.phase === 'live') return ['connected', 'connected'];
    if (net.authNeeded) return ['offline', 'offline: access token needed'];
    if (!navigator.onLine) return ['offline', 'offline: no network'];
    if (state.phase !== 'down') return ['reconnecting', net.everConnected ? 'reconnecting…' : 'connecting…'];
    if (net.serverRestarting) return ['reconnecting', 'server restarting, reconnecting…'];
    // After a few failed tries call it what it is, and offer a manual retry.
    if (net.attempts >= 4) return ['offline', 'offline, retrying'];
    return ['reconnecting', net.everConnected ? 'reconnecting…' : 'connecting…'];
  }

  function updateTitle() {
    const t = Core.isBusy(state) ? 'working… — frontdesk' : 'frontdesk';
    if (document.title !== t) document.title = t;
  }

  function render() {
    const stick = nearBottom();
    const before = el.main.scrollHeight;

    // header: connection indicator (text, not colour alone)
    const [connState, connText] = connectionView();
    el.conn.dataset.state = connState;
    if (el.connText.textContent !== connText) el.connText.textContent = connText;
    el.retry.hidden = !(state.phase === 'down' && !net.authNeeded && connState === 'offline');

    // conversation
    reconcile(el.log, state.items, itemCache, (it) => views[it.kind] || views.notice);
    reconcile(el.pending, state.pending, pendingCache, () => pendingView);
    el.empty.hidden = state.items.length > 0 || state.pending.length > 0;
    el.empty.textContent = state.phase === 'live' ? 'No messages yet.'
      : net.authNeeded ? 'Enter the access token to see the conversation.'
      : connState === 'offline' ? 'Not connected: the conversation appears once the server is reachable.' : 'Connecting…';

    // status line: only while a turn runs
    const busy = Core.isBusy(state);
    el.status.hidden = !busy;
    const statusText = state.cancelRequested ? 'cancelling…' : state.status || 'working…';
    if (busy && el.statusText.textContent !== statusText) el.statusText.textContent = statusText;

    // composer
    el.cancel.hidden = !busy;
    el.cancel.disabled = !busy || state.phase !== 'live' || state.cancelRequested;
    el.cancel.textContent = state.cancelRequested ? 'Cancelling…' : 'Cancel';
    el.send.disabled = el.input.value.trim() === '';

    if (state.note && state.note.serial !== shownNoteSerial) {
      shownNoteSerial = state.note.serial;
      showNote(state.note.kind, state.note.text);
    }

    // screen readers: one polite announcement per render for what arrived live
    if (state.announce.length) {
      el.announcer.textContent = clip(state.announce.join('\n'), 1000);
      state.announce.length = 0;
    }

    updateTitle();
    if (stick) el.main.scrollTop = el.main.scrollHeight;
    else if (el.main.scrollHeight > before) el.jump.hidden = false;
  }

  function showNote(kind, text) {
    el.note.textContent = text;
    el.note.dataset.kind = kind;
    el.note.hidden = false;
    clearTimeout(noteTimer);
    noteTimer = setTimeout(() => { el.note.hidden = true; }, 8000);
  }

  // ── token form ──
  function showTokenForm() {
    el.auth.hidden = false;
    el.authError.hidden = !net.tokenRejected;
    el.authError.textContent = net.tokenRejected ? 'That token was not accepted.' : '';
    el.authInput.value = '';
    el.authInput.focus();
  }

  el.authForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const t = el.authInput.value.trim();
    if (!t) { el.authInput.focus(); return; }
    setToken(t);
    el.authInput.value = '';
    el.auth.hidden = true;
    el.authError.hidden = true;
    net.authNeeded = false;
    net.attempts = 0;
    connect();
    el.input.focus();
  });

  // ── composer ──
  function newMsgID() {
    // crypto.randomUUID exists only in secure contexts; getRandomValues everywhere.
    if (crypto.randomUUID) return 'c-' + crypto.randomUUID();
    const b = crypto.getRandomValues(new Uint8Array(16));
    return 'c-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }

  function submit() {
    const content = el.input.value.replace(/\s+$/, ''); // keep leading indentation, drop trailing blank lines
    if (!content.trim()) return;
    const id = newMsgID();
    const bytes = new TextEncoder().encode(JSON.stringify({ type: 'message', content, client_msg_id: id })).length;
    const limit = state.maxFrameBytes || DEFAULT_MAX_FRAME_BYTES;
    if (bytes > limit) {
      showNote('error', 'That message is too long (' + Math.ceil(bytes / 1024) + ' KiB; the limit is ' + Math.floor(limit / 1024) + ' KiB).');
      return;
    }
    el.input.value = '';
    autosize();
    dispatch({ type: 'submit', id, content });
    el.main.scrollTop = el.main.scrollHeight; // you just sent it: show it
  }

  el.form.addEventListener('submit', (e) => { e.preventDefault(); submit(); el.input.focus(); });
  el.input.addEventListener('keydown', (e) => {
    // Enter sends, Shift+Enter is a newline; never send while an IME is composing (CJK input).
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
      e.preventDefault();
      submit();
    }
  });
  function autosize() {
    const max = Math.round(window.innerHeight * 0.4);
    el.input.style.height = 'auto';
    el.input.style.height = Math.min(el.input.scrollHeight + 2, max) + 'px';
    el.input.style.overflowY = el.input.scrollHeight + 2 > max ? 'auto' : 'hidden'; // no scrollbar until it is needed
    el.send.disabled = el.input.value.trim() === '';
  }
  el.input.addEventListener('input', autosize);

  el.cancel.addEventListener('click', () => { dispatch({ type: 'cancel' }); el.input.focus(); });
  el.retry.addEventListener('click', retryNow);

  el.pending.addEventListener('click', (e) => {
    const btn = e.target.closest('button[data-action]');
    const li = btn && btn.closest('li[data-id]');
    if (!li) return;
    const id = li.dataset.id;
    if (btn.dataset.action === 'retry') dispatch({ type: 'retry', id });
    if (btn.dataset.action === 'discard') { dispatch({ type: 'discard', id }); el.input.focus(); }
    if (btn.dataset.action === 'edit') {
      const p = state.pending.find((x) => x.id === id);
      if (p && !el.input.value.trim()) el.input.value = p.content;
      else if (p) el.input.value = el.input.value.replace(/\s+$/, '') + '\n' + p.content;
      dispatch({ type: 'discard', id });
      autosize();
      el.input.focus();
    }
  });

  el.main.addEventListener('scroll', () => { if (nearBottom()) el.jump.hidden = true; });
  el.jump.addEventListener('click', () => { el.main.scrollTop = el.main.scrollHeight; el.jump.hidden = true; });

  // Repaint the indicator now and then so "offline" shows up while the backoff waits.
  setInterval(() => { if (state.phase !== 'live') scheduleRender(); }, 1000);

  autosize();
  render();
  connect();
  el.input.focus();
}
