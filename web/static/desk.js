// desk.js — owns what the page knows of the cluster behind it (pure): the
// node it talks to, the lease holder ("the desk": the node that runs the
// assistant) and the nodes with their public URLs and whether they are up
// (GET /api/session's `cluster` block), when an input refused with
// no_leader/no_answer is sent again, and where a tab whose node stopped
// answering moves. core.js keeps the state (s.desk) and reduces; shell.js
// asks /api/session, runs the timers and carries out the move. A single
// node has no `cluster` block: then none of this shows.

// Refusals that mean "no node runs the assistant right now" (nothing was
// stored) or "it may or may not have been done": both are safe to send
// again with the same client_msg_id, which never runs twice.
const WAIT_CODES = new Set(['no_leader', 'no_answer']);
// How long an input is sent again by itself before it is marked not sent.
const RETRY_FOR_MS = 60000;
// How long the page's own node must stay unreachable before the tab moves
// to another node: a kill is seen at once, a restart (close 1001) gets
// longer to come back.
const MOVE_AFTER_MS = 3000;
const MOVE_AFTER_RESTART_MS = 15000;

const initialDesk = () => ({ cluster: null });

// retryDelay is the wait before the next send of a refused input, in ms:
// 1 s doubling to 5 s, ±20 % jitter so that tabs refused together do not
// come back in lockstep. The server's Retry-After (HTTP) is 1 s.
function retryDelay(tries, random = Math.random) {
  return Math.min(5000, 1000 * 2 ** Math.max(0, tries)) * (0.8 + random() * 0.4);
}

// clusterFrom reads /api/session's `cluster` block (null: a single node,
// or nothing usable). Nodes of the older shape (plain names) have no URL
// and count as alive.
function clusterFrom(c) {
  if (!c || typeof c !== 'object' || typeof c.node !== 'string') return null;
  const nodes = (Array.isArray(c.nodes) ? c.nodes : []).map((n) => (typeof n === 'string'
    ? { name: n, url: '', alive: true }
    : { name: String((n && n.name) || ''), url: cleanURL(n && n.url), alive: !!(n && n.alive) }))
    .filter((n) => n.name);
  return { node: c.node, leader: String(c.leader || ''), role: String(c.role || ''), nodes };
}

// cleanURL keeps an http(s) URL without its trailing slash; anything else
// is "" (a page is sent there: nothing but a web address).
function cleanURL(u) {
  if (typeof u !== 'string' || !u) return '';
  try {
    const p = new URL(u);
    if ((p.protocol !== 'http:' && p.protocol !== 'https:') || p.username || p.password) return '';
    return p.origin + p.pathname.replace(/\/+$/, '');
  } catch {
    return '';
  }
}

// noDesk: the node says nobody runs the assistant now (it knows no holder,
// or it is the holder still taking over).
const noDesk = (c) => !!c && (!c.leader || c.role === 'electing');

const retrying = (s) => s.pending.some((p) => p.state === 'retrying');

// waiting: the page is connected but no node can run an input now — its
// node says so, or an input of ours was refused for that reason and waits
// to be sent again.
const waiting = (s) => s.phase === 'live' && (noDesk(s.desk.cluster) || retrying(s));

// header is the connection indicator's state and text while connected:
// amber "waiting for the desk" when no node can take an input, else
// connected, naming this node and the holder on a cluster.
function header(s) {
  const c = s.desk.cluster;
  if (waiting(s)) return ['waiting', 'waiting for the desk…' + (c ? ' (node ' + c.node + ')' : '')];
  if (!c) return ['connected', 'connected'];
  if (c.leader === c.node) return ['connected', 'connected · node ' + c.node + ' (holder)'];
  return ['connected', 'connected · node ' + c.node + ' · holder ' + c.leader];
}

// moveTarget is the URL of the node a tab whose node stopped answering
// should move to, or '' to stay: only a tab opened at its node's own public
// URL moves (behind a proxy the proxy moves it), and only to another live
// node with a URL, the holder first.
function moveTarget(c, origin) {
  if (!c) return '';
  const self = c.nodes.find((n) => n.name === c.node);
  if (!self || !self.url || urlOrigin(self.url) !== origin) return '';
  const others = c.nodes.filter((n) => n.name !== c.node && n.alive && n.url && urlOrigin(n.url) !== origin);
  const pick = others.find((n) => n.name === c.leader) || others[0];
  return pick ? pick.url : '';
}

function urlOrigin(u) {
  try { return new URL(u).origin; } catch { return ''; }
}

// What a tab takes along when it moves, in the new URL's fragment (never
// sent to a server, read once and removed): the token (localStorage is
// per origin), the node it left, and its inputs not yet answered, with
// their client_msg_id so that none runs twice.
function moveURL(target, carry) {
  const json = JSON.stringify({ token: carry.token || '', from: carry.from || '',
    pending: (carry.pending || []).map((p) => ({ id: p.id, content: p.content, attachments: p.attachments || [] })) });
  const b64 = btoa(String.fromCharCode(...new TextEncoder().encode(json)))
    .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  return target + '/#move=' + b64;
}

// readMove reads what moveURL packed from location.hash (null: none, or
// not ours).
function readMove(hash) {
  const m = /^#move=([A-Za-z0-9_-]+)$/.exec(hash || '');
  if (!m) return null;
  try {
    const bin = atob(m[1].replace(/-/g, '+').replace(/_/g, '/'));
    const v = JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0))));
    if (!v || typeof v !== 'object') return null;
    const pending = (Array.isArray(v.pending) ? v.pending : [])
      .filter((p) => p && typeof p.id === 'string' && p.id && typeof p.content === 'string')
      .map((p) => ({ id: p.id, content: p.content, attachments: Array.isArray(p.attachments) ? p.attachments : [] }));
    return { token: typeof v.token === 'string' ? v.token : '', from: typeof v.from === 'string' ? v.from : '', pending };
  } catch {
    return null;
  }
}

// moveDue says whether a tab whose node has been unreachable for downMs
// (restarting: its last close was 1001) should move now.
const moveDue = (downMs, restarting) => downMs >= (restarting ? MOVE_AFTER_RESTART_MS : MOVE_AFTER_MS);

export { WAIT_CODES, RETRY_FOR_MS, initialDesk, retryDelay, clusterFrom, cleanURL, noDesk, waiting, header,
  moveTarget, moveURL, readMove, moveDue };
