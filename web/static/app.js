// app.js — the entry point (a module script): wires the composer, the token
// form, the header buttons and the keyboard to dispatch(), hooks the view
// into the shell, and starts. Everything else lives in modules of one
// concern each, served as they are (no build step):
//   markdown.js     Markdown to a tree of plain objects (pure)
//   items.js        protocol events to conversation items (pure)
//   history.js      scroll-back, archive, jumps, search state (pure)
//   attachments.js  the composer's tray of files, limits (pure)
//   core.js         the state and the reducer (pure; node tests import it)
//   desk.js         the cluster behind the node: the desk's state, retries, moves (pure)
//   people.js       who you are, people's names, what you may do (pure)
//   shell.js        WebSocket, signing in, HTTP requests, dispatch()
//   uploads.js      file uploads (XMLHttpRequest, progress), file URLs
//   dom.js          elements, h(), time formatting
//   items-view.js   one item's DOM; keyed reconciliation
//   attach-view.js  thumbnails and chips, the tray, attach/drop/paste
//   search-view.js  the search box and the jump target
//   erase.js        "Erase…" on a message: the dialog and DELETE /api/history/{seq}
//   view.js         render(): the page from the state; scrolling
// A new feature (a panel, say) gets a pure module for its state (its
// actions reduced like reduceAttachments/reduceHistory in core.js reduce),
// a view module that renders it (called from view.js render), and, for
// its own HTTP, a handler in shell.js requestHandlers.
// Every piece of server or user text goes through textContent, never innerHTML.

import * as Core from './core.js';
import { state, net, hooks, dispatch, retryNow, arrived, signIn, signInWithToken, signOut, DEFAULT_MAX_FRAME_BYTES } from './shell.js';
import * as People from './people.js';
import { el } from './dom.js';
import { scheduleRender, render, updateTitle, showNote, nothingToSend } from './view.js';
import { openSearch, closeSearch } from './search-view.js';
import './attach-view.js'; // the attach button, drop and paste

// updateTitle synchronously: background tabs get no animation frames, and the title matters most there.
hooks.changed = () => { updateTitle(); scheduleRender(); };
hooks.askToken = showSignIn;
hooks.signedIn = showYou;


// ── signing in ──
function showSignIn() {
  el.auth.hidden = false;
  el.authGone.hidden = !net.signedOut;
  el.authOIDC.hidden = !net.oidc;
  el.authError.hidden = !net.signInError;
  el.authError.textContent = net.signInError;
  el.authInput.value = '';
  el.you.hidden = true;
  el.signOut.hidden = true;
  el.authInput.focus();
}

el.authForm.addEventListener('submit', async (e) => {
  e.preventDefault();
  const t = el.authInput.value.trim();
  if (!t) { el.authInput.focus(); return; }
  el.authInput.value = '';
  const why = await signInWithToken(t);
  el.authError.hidden = !why;
  el.authError.textContent = why;
  if (why) { el.authInput.focus(); return; }
  el.auth.hidden = true;
  el.input.focus();
});

// showYou puts your name in the header and hides what you may not do
// (a body class per permission you lack: style.css hides the controls).
function showYou() {
  const you = People.you();
  el.auth.hidden = true;
  // Nothing configured (via open): one person, nothing to sign in or out of.
  el.you.hidden = !you || you.via === 'open';
  el.you.textContent = you ? you.name || you.person : '';
  if (you) el.you.title = 'Signed in as ' + you.person + (you.role ? ' (' + you.role + ')' : '');
  el.signOut.hidden = !you || you.via !== 'session';
  el.signOut.title = you ? 'Sign out ' + (you.name || you.person) : '';
  for (const perm of People.GUARDED) document.body.classList.toggle('cannot-' + perm, !People.can(perm));
  el.readOnly.hidden = People.can('talk');
  scheduleRender();
}

el.signOut.addEventListener('click', () => { signOut(); });

// ── composer ──
function newMsgID() {
  // crypto.randomUUID exists only in secure contexts; getRandomValues everywhere.
  if (crypto.randomUUID) return 'c-' + crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return 'c-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

function submit() {
  const content = el.input.value.replace(/\s+$/, ''); // keep leading indentation, drop trailing blank lines
  const files = state.tray.items.map((t) => (t.att ? t.att.sha256 : ''));
  if ((!content.trim() && !files.length) || !Core.composer(state).canSend) return; // the reason is on screen
  const id = newMsgID();
  const frame = { type: 'message', content, client_msg_id: id, attachments: files.length ? files : undefined };
  const bytes = new TextEncoder().encode(JSON.stringify(frame)).length;
  const limit = state.maxFrameBytes || DEFAULT_MAX_FRAME_BYTES;
  if (bytes > limit) {
    showNote('error', 'That message is too long (' + Math.ceil(bytes / 1024) + ' KiB; the limit is ' + Math.floor(limit / 1024) + ' KiB).');
    return;
  }
  el.input.value = '';
  autosize();
  if (state.archive) dispatch({ type: 'back-to-live' }); // you want to see it go out
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
  el.send.disabled = !Core.composer(state).canSend || nothingToSend();
}
el.input.addEventListener('input', autosize);

el.cancel.addEventListener('click', () => { dispatch({ type: 'cancel' }); el.input.focus(); });

// Reset asks first, in a modal dialog: focus moves into it, Escape or
// "Keep" backs out, and focus returns to the composer either way.
el.reset.addEventListener('click', () => {
  if (el.resetDialog.open) return;
  el.resetDialog.showModal();
  el.resetKeep.focus();
});
el.resetKeep.addEventListener('click', () => el.resetDialog.close());
el.resetConfirm.addEventListener('click', () => {
  el.resetDialog.close();
  dispatch({ type: 'reset' });
});
el.resetDialog.addEventListener('close', () => el.input.focus());

// Code blocks: Copy puts the code on the clipboard.
el.log.addEventListener('click', (e) => {
  const btn = e.target.closest('button.copy');
  const code = btn && btn.parentElement.querySelector('pre code');
  if (!code) return;
  navigator.clipboard.writeText(code.textContent).then(() => {
    btn.textContent = 'Copied';
    setTimeout(() => { btn.textContent = 'Copy'; }, 1500);
  }, () => { btn.textContent = 'Copy failed'; });
});
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
    else if (p && p.content) el.input.value = el.input.value.replace(/\s+$/, '') + '\n' + p.content;
    if (p) dispatch({ type: 'tray-restore', attachments: p.attachments }); // its files go back in the tray
    dispatch({ type: 'discard', id });
    autosize();
    el.input.focus();
  }
});


const typing = (t) => t instanceof Element && (t.closest('input, textarea, select, [contenteditable=""], [contenteditable="true"]') !== null);
// `/` opens the search when you are not writing: focus outside every text
// field, or in the composer while it is empty (it has focus from the start).
// Once the composer holds text, `/` is just a character.
const slashSearches = (t) => !typing(t) || (t === el.input && el.input.value === '');
document.addEventListener('keydown', (e) => {
  if (e.defaultPrevented || e.isComposing || el.resetDialog.open) return;
  if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && (e.key === 'k' || e.key === 'K')) {
    e.preventDefault();
    openSearch();
  } else if (e.key === '/' && !e.ctrlKey && !e.metaKey && !e.altKey && slashSearches(e.target)) {
    e.preventDefault();
    openSearch();
  } else if (e.key === 'Escape' && state.search.open && !el.search.contains(e.target)) {
    closeSearch();
  } else if (e.key === 'Escape' && !e.ctrlKey && !e.metaKey && !e.altKey && !el.cancel.hidden && !el.cancel.disabled) {
    // Esc stops a running reply from anywhere but the search box (whose Esc
    // closes it first) — the same as the Cancel button.
    e.preventDefault();
    dispatch({ type: 'cancel' });
  }
});

// Repaint the indicator now and then so "offline" shows up while the backoff waits.
setInterval(() => { if (state.phase !== 'live') scheduleRender(); }, 1000);

autosize();
arrived(); // a tab that moved here from a node that stopped answering
render();
signIn(); // then connect()
el.input.focus();
