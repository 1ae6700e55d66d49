// shell.js — owns the outside world of the page: the one WebSocket (connect,
// backoff, close codes), signing in (GET /api/me, POST /auth/token, the
// HttpOnly session cookie the browser sends by itself), HTTP requests the
// core asks for (s.requests), and the one state object with dispatch(), the
// only way to change it. No DOM: the view registers hooks.changed (called
// after every change, to render), hooks.askToken (to show the sign-in
// screen) and hooks.signedIn (who you are is known).

import * as Core from './core.js';
import * as Desk from './desk.js';
import * as People from './people.js';

// Older versions kept the shared token here; it is exchanged for the
// session cookie once and deleted (signIn).
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
  serverFull: false,       // last close was 1013 (server.max_clients reached)
  lostAt: -Infinity,       // when the last good connection was lost (Date.now())
  authNeeded: false,       // the sign-in screen is up; no retries until it is answered
  tokenRejected: false,
  signInError: '',         // why the last sign-in failed, in words ('' none)
  oidc: false,             // the server offers OIDC sign-in (its 401 said so)
  signedOut: false,        // the session ended (sign-out, revoked): say so
  everConnected: false,
};

// No token is kept in the page: the session cookie (HttpOnly: no script
// can read it) signs every request in.

// The view's hooks: changed() after every change of state or net (it
// renders, coalesced), askToken() when the server wants a sign-in,
// signedIn() when who you are is known (GET /api/me or connected.you).
const hooks = { changed() {}, askToken() {}, signedIn() {} };
const changed = () => hooks.changed();

function dispatch(action) {
  Core.reduce(state, action);
  drainOutbox();
  drainRequests();
  armRetry();
  changed();
}

// ── the desk: inputs refused with no_leader/no_answer go again by themselves ──
let retryTimer = null;
let retryTimerAt = 0;
function armRetry() {
  const due = state.pending.filter((p) => p.state === 'retrying').map((p) => p.retryAt);
  if (!due.length) { clearTimeout(retryTimer); retryTimer = null; return; }
  const at = Math.min(...due);
  if (retryTimer !== null && retryTimerAt === at) return;
  clearTimeout(retryTimer);
  retryTimerAt = at;
  retryTimer = setTimeout(() => { retryTimer = null; dispatch({ type: 'retry-due', now: Date.now() }); }, Math.max(0, at - Date.now()));
}

// The page learns the cluster behind its node from /api/session: once a
// connection is live, then every 5 s while the node is a cluster node
// (none of this on a single node), and at once after a refusal that says
// no node runs the assistant. Not faster: every tab asks, and each answer
// is a command to the session's one goroutine.
const DESK_EVERY_MS = 5000;
let deskTimer = null;
function lookAtDesk() {
  clearTimeout(deskTimer);
  deskTimer = null;
  if (state.phase !== 'live') return;
  apiGet('/api/session', {}).then((b) => {
    dispatch({ type: 'cluster', cluster: b.cluster });
    if (b.cluster && state.phase === 'live') deskTimer = setTimeout(lookAtDesk, DESK_EVERY_MS);
  }, () => { if (state.phase === 'live') deskTimer = setTimeout(lookAtDesk, DESK_EVERY_MS); });
}

// moveIfDue moves a tab whose node has been unreachable long enough to a
// live node's public URL (desk.js moveTarget says which; '' stays), taking
// the token and the unanswered inputs along in the fragment.
function moveIfDue() {
  if (!net.everConnected || !Desk.moveDue(Date.now() - net.lostAt, net.serverRestarting)) return;
  const c = state.desk.cluster;
  const target = Desk.moveTarget(c, location.origin);
  if (!target) return;
  // The cookie is this node's: a token this tab signed in with (held in
  // memory only) goes along and is exchanged there; else it signs in again.
  location.assign(Desk.moveURL(target, { token: held, from: c.node, pending: state.pending }));
}

// arrived takes what a tab that moved here brought (Desk.moveURL), once,
// and removes it from the address bar and the history.
function arrived() {
  const m = Desk.readMove(location.hash);
  if (!m) return;
  history.replaceState(null, '', location.pathname + location.search);
  if (m.token) carried = m.token; // an older node's tab brought a token: exchanged by signIn
  dispatch({ type: 'adopt', pending: m.pending, from: m.from });
}

// ── history over HTTP: the core asks (state.requests), we fetch and report back ──
function drainRequests() {
  while (state.requests.length) runRequest(state.requests.shift());
}

// Other modules carry out requests of their own kinds (uploads.js:
// 'upload', 'upload-abort'): they register a handler here.
const requestHandlers = {};

function runRequest(req) {
  if (requestHandlers[req.kind]) { requestHandlers[req.kind](req); return; }
  const failed = (e) => dispatch({ type: 'history-failed', req, error: e.message });
  if (req.kind === 'search') {
    apiGet('/api/history/search', { q: req.q, limit: req.limit })
      .then((b) => dispatch({ type: 'search-results', req, hits: b.hits, mode: b.mode, broad: b.broad, semantic: b.semantic }), failed);
    return;
  }
  apiGet('/api/history/range', { from: req.from, to: req.to, limit: req.limit })
    .then((b) => dispatch({ type: 'history-loaded', req, events: b.events, truncated: b.truncated }), failed);
}

// apiGet fetches a JSON endpoint with the token; errors become one sentence.
function apiGet(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== '') q.set(k, String(v));
  return apiCall('GET', path + '?' + q);
}

// apiCall sends method to a JSON endpoint with the token (body, if given,
// as JSON) and returns the answer's JSON ({} for none); an error is one
// sentence, with the HTTP status as its status when the server answered.
async function apiCall(method, path, body) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, cache: 'no-store', body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout ? AbortSignal.timeout(30000) : undefined });
  } catch {
    throw new Error(navigator.onLine ? 'the server did not answer' : 'no network');
  }
  if (res.status === 401) {
    askForToken();
    throw new Error('you are not signed in');
  }
  let b = null;
  try { b = await res.json(); } catch { /* 204, or not JSON */ }
  if (!res.ok) {
    const e = new Error((b && b.message) || 'the server answered ' + res.status);
    e.status = res.status;
    throw e;
  }
  return b || {};
}

// The server refused us on the API (the session ended): the sign-in screen.
function askForToken() {
  if (net.authNeeded) return;
  net.authNeeded = true;
  net.signedOut = !!People.you();
  if (net.ws) { const ws = net.ws; net.ws = null; ws.close(); dispatch({ type: 'socket-closed' }); }
  hooks.askToken();
  changed();
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
      net.serverFull = false;
      net.tokenRejected = false;
      net.everConnected = true;
      // connected.you: who this connection signed in as (how: GET /api/me's via, kept)
      if (f.data && f.data.you) { People.setYou({ ...(People.you() || {}), ...f.data.you }); hooks.signedIn(); }
    }
    dispatch({ type: 'frame', frame: f, now: Date.now() });
    if (f && f.type === 'synced') lookAtDesk();
    else if (f && f.type === 'error' && f.data && Desk.WAIT_CODES.has(f.data.code)) lookAtDesk();
    else if (f && f.type === 'user' && Desk.noDesk(state.desk.cluster)) lookAtDesk(); // an input ran: a node holds the lease again
  };
  ws.onclose = (e) => {
    if (net.ws !== ws) return;
    net.ws = null;
    dispatch({ type: 'socket-closed' });
    if (gotConnected) net.lostAt = Date.now();
    onClosed(e, gotConnected);
  };
}

async function onClosed(e, gotConnected) {
  if (e.code === 1008 && e.reason === 'credential revoked') {
    // This sign-in was revoked (signed out elsewhere, or by an admin).
    askForToken();
    return;
  }
  if (!gotConnected) {
    // A refused upgrade looks like any network failure to the browser (code
    // 1006), so ask the API whether not being signed in is the reason.
    if (await sessionUnauthorized()) {
      askForToken();
      return;
    }
  }
  if (e.code === 1008 && e.reason === 'slow consumer') {
    // We fell behind; nothing is wrong with the server. Come back at once (since= fills the gap).
    scheduleRetry(150 + Math.random() * 250);
    return;
  }
  // 1013 "try again later": the server is at server.max_clients. Say so,
  // and come back slowly — a network drop it is not.
  net.serverFull = e.code === 1013;
  net.serverRestarting = e.code === 1001;
  if (net.serverRestarting) {
    net.attempts = 0; // a restart is expected to be quick: start the backoff over
    net.lostAt = Date.now();
  }
  scheduleRetry();
}

async function sessionUnauthorized() {
  try {
    const res = await fetch('/api/me', { cache: 'no-store' });
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
    delay = Core.reconnectDelay(net.attempts, Date.now() - net.lostAt, net.serverFull);
    net.attempts++;
  }
  net.retryAt = Date.now() + delay;
  net.retryTimer = setTimeout(() => { moveIfDue(); connect(); }, delay);
  changed();
}

function retryNow() {
  net.attempts = 0;
  connect();
}

window.addEventListener('online', () => { if (!net.ws) retryNow(); });
window.addEventListener('offline', changed);

// lookAgain wraps the render hook for a panel that shows server state
// (Memory, Scheduled): look runs when revOf() moves (its *_changed frame
// came) or the connection comes back (changes while it was down sent no
// frame), 50 ms after the last of a burst. Otherwise more(), if given, may
// return a delay after which to look as well (null: not now).
function lookAgain(revOf, look, more) {
  let rev = 0;
  let wasLive = false;
  let timer = null;
  const render = hooks.changed;
  hooks.changed = () => {
    render();
    const live = state.phase === 'live';
    const reconnected = live && !wasLive;
    wasLive = live;
    let delay = null;
    if (revOf() !== rev || reconnected) {
      rev = revOf();
      delay = 50;
    } else if (more) {
      delay = more();
    }
    if (delay !== null) {
      clearTimeout(timer);
      timer = setTimeout(look, delay);
    }
  };
}

// ── signing in ──

let carried = ''; // a token a moved tab brought (arrived)
// held is the token this tab signed in with, in memory only (never in
// storage): a tab whose cluster node dies takes it to the next node.
let held = '';

// postToken exchanges a token for the session cookie (POST /auth/token):
// '' when it worked, else why not, in words.
async function postToken(token) {
  let res;
  try {
    res = await fetch('/auth/token', { method: 'POST', headers: { 'Content-Type': 'application/json' }, cache: 'no-store',
      body: JSON.stringify({ token }) });
  } catch {
    return navigator.onLine ? 'the server did not answer' : 'no network';
  }
  if (res.ok) return '';
  let b = null;
  try { b = await res.json(); } catch { /* not JSON */ }
  if (res.status === 401) return 'Wrong token: the server refused it. Check it and try again.';
  return (b && b.message) || 'the server answered ' + res.status;
}

// whoAmI asks GET /api/me (and the names of everyone, for the events):
// true when signed in; on 401 it brings up the sign-in screen.
async function whoAmI() {
  let res;
  try {
    res = await fetch('/api/me', { cache: 'no-store' });
  } catch {
    return true; // network down: connect() retries as usual and asks again
  }
  let b = null;
  try { b = await res.json(); } catch { /* not JSON */ }
  if (res.status === 401) {
    net.oidc = !!(b && b.oidc);
    askForToken();
    return false;
  }
  if (!res.ok || !b) return true; // an older server without /api/me: as before
  People.setYou(b);
  try { People.setPeople(await apiGet('/api/people', {})); } catch { /* names fall back to ids */ }
  if (b.name) People.setYou(b); // setPeople cleared the map: your own name again
  hooks.signedIn();
  return true;
}

// signIn starts the page: a token an older version kept in localStorage
// (or a moved tab brought) is exchanged once and deleted, then GET
// /api/me says whether we are signed in; connect() once we are.
async function signIn() {
  let old = carried;
  carried = '';
  try { old = old || localStorage.getItem(TOKEN_KEY) || ''; localStorage.removeItem(TOKEN_KEY); } catch { /* no storage */ }
  if (old) {
    const why = await postToken(old);
    if (why) net.signInError = 'The token this browser kept no longer works: ' + why;
    else held = old;
  }
  if (await whoAmI()) connect();
}

// signInWithToken is the sign-in screen's "paste a token": '' when it
// worked (the page connects), else why not.
async function signInWithToken(token) {
  const why = await postToken(token);
  if (why) return why;
  held = token;
  net.authNeeded = false;
  net.signedOut = false;
  net.signInError = '';
  net.attempts = 0;
  if (await whoAmI()) connect();
  return '';
}

// signOut ends this browser's session (POST /auth/logout): its WebSockets
// close, and the sign-in screen comes up.
async function signOut() {
  try { await fetch('/auth/logout', { method: 'POST', cache: 'no-store' }); } catch { /* the cookie goes anyway on 401 */ }
  held = '';
  askForToken(); // says "you were signed out" while you are still known
  People.setYou(null);
}

export { state, net, hooks, requestHandlers, dispatch, connect, retryNow, apiGet, apiCall, askForToken,
  lookAgain, arrived, signIn, signInWithToken, signOut, DEFAULT_MAX_FRAME_BYTES };
