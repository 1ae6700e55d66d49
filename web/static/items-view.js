// items-view.js — owns how one conversation item looks: the Markdown tree
// made into DOM (only whitelisted tags and checked links), a builder and an
// updater per item kind (views), the "sending…" bubbles of pending messages,
// and the keyed reconciliation that keeps one element per item. A new kind
// of item (items.js) gets its look here.

import * as Core from './core.js';
import { state, dispatch } from './shell.js';
import { h, timeOf, timeEl, setTime, fullTime, relDay, clip } from './dom.js';
import { attachmentsNode } from './attach-view.js';
import { erasedText } from './items.js';
import { offerErase } from './erase.js';
import { shown, withDoor } from './people.js';

// eraseButton is "Erase…" on a message (erase.js asks first).
function eraseButton(it) {
  const b = h('button', 'small erase', 'Erase…');
  b.type = 'button';
  b.title = 'Erase this message everywhere the server keeps it';
  b.addEventListener('click', () => offerErase(it.seq));
  return b;
}

// showErased puts "message erased (by …)" in place of an erased message's
// text, and offers Erase… only on a message that stands and has a seq.
function showErased(li, it, box) {
  const gone = it.erased !== null && it.erased !== undefined;
  li.classList.toggle('erased', gone);
  const b = li.querySelector('.erase');
  if (b) b.hidden = gone || !(it.seq > 0);
  if (!gone) return false;
  box.replaceChildren(h('span', 'erased-note', erasedText(it.erased)));
  box.hidden = false;
  for (const a of li.querySelectorAll('.attachments')) a.remove();
  return true;
}

// ── Markdown tree → DOM ──
// Only these tags and attributes are ever created, and a link's href is
// checked again here: even a parser bug cannot make a script, an event
// handler or a javascript: link. Text goes in through text nodes only.
const MD_TAGS = new Set(['p', 'br', 'strong', 'em', 'code', 'pre', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'li',
  'blockquote', 'a', 'hr', 'table', 'thead', 'tbody', 'tr', 'th', 'td']);
const MD_ATTRS = { a: ['href', 'title'], ol: ['start'], pre: ['data-lang'], th: ['data-align'], td: ['data-align'] };
const canCopy = !!(navigator.clipboard && window.isSecureContext);

function mdNode(n) {
  if (n.tag === undefined) return document.createTextNode(String(n.text ?? ''));
  if (!MD_TAGS.has(n.tag)) return document.createTextNode(Core.textOf(n));
  const e = document.createElement(n.tag);
  for (const k of MD_ATTRS[n.tag] || []) {
    const v = n.attrs && n.attrs[k];
    if (v !== undefined) e.setAttribute(k, String(v));
  }
  if (n.tag === 'a') {
    if (!Core.safeHref(e.getAttribute('href'))) return document.createTextNode(Core.textOf(n));
    e.rel = 'noopener noreferrer';
    e.target = '_blank';
  }
  for (const c of n.children || []) e.append(mdNode(c));
  if (n.tag === 'table') { // wide tables scroll on their own instead of widening the page
    const w = h('div', 'table-wrap');
    w.tabIndex = 0;
    w.setAttribute('role', 'region');
    w.setAttribute('aria-label', 'table');
    w.append(e);
    return w;
  }
  if (n.tag === 'pre') {
    const w = h('div', 'code-wrap');
    if (canCopy) {
      const b = h('button', 'small copy', 'Copy');
      b.type = 'button';
      b.setAttribute('aria-label', 'Copy code');
      w.append(b);
    }
    w.append(e);
    return w;
  }
  return e;
}

// Top-level blocks are patched by their source tree: while a reply streams
// only the last block changes, so the others keep their nodes (and any
// text selection in them) instead of being rebuilt on every frame.
const blockSig = new WeakMap();
const CARET_INTO = new Set(['P', 'UL', 'OL', 'LI', 'BLOCKQUOTE', 'PRE', 'CODE', 'H3', 'H4', 'H5', 'H6', 'DIV',
  'TABLE', 'TBODY', 'THEAD', 'TR', 'TD', 'TH', 'STRONG', 'EM', 'A']);
function renderMarkdown(box, text, caret) {
  const old = box.querySelector('.caret');
  if (old) old.remove();
  const blocks = Core.markdown(text);
  blocks.forEach((b, i) => {
    const sig = JSON.stringify(b);
    const cur = box.children[i];
    if (cur && blockSig.get(cur) === sig) return;
    const node = mdNode(b);
    blockSig.set(node, sig);
    if (cur) cur.replaceWith(node); else box.append(node);
  });
  while (box.children.length > blocks.length) box.lastElementChild.remove();
  if (caret) {
    // The caret goes where the next word will appear: inside the last block.
    let n = box;
    for (let c = n.lastChild; c && c.nodeType === 1 && CARET_INTO.has(c.tagName); c = n.lastChild) n = c;
    const span = h('span', 'caret');
    span.setAttribute('aria-hidden', 'true');
    n.append(span);
  }
}

// Build and update one conversation item. build() makes the skeleton,
// update() fills it from the item; update runs again whenever item.rev changes.
const views = {
  user: {
    build(it) {
      const li = h('li', 'msg user');
      const b = h('div', 'bubble');
      const meta = h('div', 'meta');
      const badge = h('span', 'badge ch-' + it.channelKind, it.label);
      badge.title = 'via ' + (it.channel || 'unknown') + (it.from ? ' from ' + it.from : '');
      meta.append(badge, h('span', 'queue-badge'), timeEl(it.ts), eraseButton(it));
      const text = h('div', 'text', it.content); // the user's words as typed: plain text
      text.hidden = it.content === '' && it.attachments.length > 0;
      b.append(meta, text);
      if (it.attachments.length) b.append(attachmentsNode(it.attachments));
      li.append(b);
      return li;
    },
    // A queued input is marked until its turn starts, or says it never ran.
    update(li, it) {
      showErased(li, it, li.querySelector('.text'));
      li.dataset.queue = it.queue || '';
      const q = li.querySelector('.queue-badge');
      q.textContent = it.queue === 'waiting' ? 'queued' : it.queue === 'replaced' ? 'replaced, not run' : '';
      q.title = it.queue === 'waiting' ? 'Recorded; it runs when the reply before it is done' : '';
      q.hidden = !it.queue;
    },
  },
  assistant: {
    build(it) {
      const li = h('li', 'msg assistant');
      const b = h('div', 'bubble');
      const meta = h('div', 'meta');
      meta.append(h('span', 'who', 'assistant'), h('time', 'when'), eraseButton(it));
      b.append(meta, h('div', 'md'));
      li.append(b);
      return li;
    },
    update(li, it) {
      li.classList.toggle('streaming', it.streaming);
      li.classList.toggle('partial', it.partial);
      // aria-busy keeps screen readers from reading every streamed chunk.
      li.setAttribute('aria-busy', it.streaming ? 'true' : 'false');
      if (!showErased(li, it, li.querySelector('.md'))) renderMarkdown(li.querySelector('.md'), it.text, it.streaming);
      // A reply is stamped when it was complete — the time the chat log keeps,
      // so a reload shows the same; until then "…". (A cut-short reply is
      // dashed; the notice or turn-end line under it says why, once.)
      setTime(li.querySelector('.when'), it.final || !it.streaming ? it.ts : '');
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
      const over = it.ended || it.historic; // its turn is over: a missing result will not come
      const st = it.error ? 'failed' : it.output === null ? (over ? 'no result' : it.approval ? 'waiting for approval' : 'running…') : 'done';
      li.querySelector('.tool-state').textContent = st;
      li.classList.toggle('failed', !!it.error);
      let args = it.args;
      if (args !== null && typeof args !== 'string') { try { args = JSON.stringify(args, null, 2); } catch { args = String(args); } }
      li.querySelector('.tool-args').textContent = clip(String(args ?? ''), 4000);
      li.querySelector('.tool-out').textContent = it.error ? 'error: ' + it.error + (it.output ? '\n' + clip(it.output, 4000) : '')
        : it.output === null ? (over ? '(none)' : '…') : clip(it.output, 4000);
    },
  },
  // A tool call that waits for a person: Approve / Deny, for every client;
  // the first answer (from any door) wins and shows here.
  approval: {
    build(it) {
      const li = h('li', 'approval');
      const head = h('div', 'approval-head');
      head.append(h('span', 'approval-label', 'approval needed'), h('span', 'tool-name'), h('span', 'approval-state'));
      const buttons = h('div', 'approval-buttons');
      for (const [decision, label] of [['approve', 'Approve'], ['deny', 'Deny']]) {
        const b = h('button', decision, label);
        b.type = 'button';
        b.addEventListener('click', () => dispatch({ type: 'decide', id: it.id, decision }));
        buttons.append(b);
      }
      li.append(head, h('pre', 'tool-args'), buttons);
      return li;
    },
    update(li, it) {
      li.querySelector('.tool-name').textContent = it.server ? it.tool + ' (' + it.server + ')' : it.tool;
      let args = it.args;
      if (args !== null && typeof args !== 'string') { try { args = JSON.stringify(args, null, 2); } catch { args = String(args); } }
      // The server's words for what the call would do (a memory tool: the
      // item's text) read better than {"id":"m15"}.
      li.querySelector('.tool-args').textContent = clip(it.text || String(args ?? ''), 4000);
      const decided = !!it.decision;
      // Once answered the card says what became of the call, not that it
      // still needs an answer.
      li.querySelector('.approval-label').textContent = !decided ? 'approval needed'
        : it.decision === 'approve' ? 'approved' : 'denied';
      li.querySelector('.approval-state').textContent = decided ? decidedBy(it.by, it.person)
        : it.sent ? 'sending your answer…' : 'waiting for an answer';
      li.classList.toggle('decided', decided);
      li.classList.toggle('denied', it.decision === 'deny');
      for (const b of li.querySelectorAll('.approval-buttons button')) b.disabled = decided || !!it.sent || state.phase !== 'live';
      li.querySelector('.approval-buttons').hidden = decided;
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
  // A reset: live, the first item of the cleared view; in older history,
  // the line between what came before it and after.
  reset: {
    build(it) {
      const li = h('li', 'divider reset');
      li.append(h('span', 'divider-text', it.text));
      const d = timeOf(it.ts);
      if (d) li.title = 'Reset on ' + fullTime(d);
      return li;
    },
    update() {},
  },
  day: {
    build() {
      const li = h('li', 'divider day');
      li.append(h('span', 'divider-text'));
      return li;
    },
    update(li, it) {
      const d = timeOf(it.ts);
      li.firstChild.textContent = d ? relDay(d, false) : '';
    },
  },
};

// decidedBy says who answered an approval: a person at a door ("by Ann ·
// web"), a door, or what answered for nobody (hub/approval.go: timeout,
// cancel, shutdown, restart).
function decidedBy(by, person) {
  if (shown(person)) return 'by ' + withDoor(person, by);
  switch (by) {
    case 'timeout': return 'nobody answered in time';
    case 'cancel': return 'the reply was cancelled';
    case 'shutdown': return 'the server stopped';
    case 'restart': return 'the server restarted';
    default: return 'by ' + (by || 'unknown');
  }
}

const PENDING_LABEL = {
  waiting: 'waiting for the connection…',
  held: 'waiting for the assistant to finish…',
  sent: 'sending…',
  queued: 'queued',
  retrying: 'waiting for the desk…',
  failed: 'not sent',
};
const pendingView = {
  build(p) {
    const li = h('li', 'msg user pending');
    li.dataset.id = p.id;
    const b = h('div', 'bubble');
    const meta = h('div', 'meta');
    meta.append(h('span', 'badge ch-web', 'web'), h('span', 'pending-state'));
    const actions = h('div', 'actions');
    for (const [action, label] of [['retry', 'Retry'], ['edit', 'Edit'], ['discard', 'Discard']]) {
      const btn = h('button', 'small', label);
      btn.type = 'button';
      btn.dataset.action = action;
      actions.append(btn);
    }
    b.append(meta, h('div', 'text', p.content));
    if (p.attachments.length) b.append(attachmentsNode(p.attachments));
    b.append(h('div', 'flag'), actions);
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
      keyOfNode.set(rec.node, key);
    }
    if (rec.rev !== it.rev) { view.update(rec.node, it); rec.rev = it.rev; }
    const want = prev ? prev.nextSibling : container.firstChild;
    if (want !== rec.node) container.insertBefore(rec.node, want);
    prev = rec.node;
  }
  for (const [key, rec] of cache) if (!seen.has(key)) { rec.node.remove(); cache.delete(key); }
}

const keyOfNode = new WeakMap();
const itemCache = new Map();
const pendingCache = new Map();

export { views, pendingView, reconcile, keyOfNode, itemCache, pendingCache };
