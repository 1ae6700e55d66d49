// attach-view.js — owns how files look and get in: a message's attachments
// (a thumbnail for an image, a chip with name and size for anything else;
// a click opens it in a new tab, or downloads it), the composer's tray with
// each upload's progress, and the ways in — the attach button, dropping
// files on the page, pasting images into the composer. The tray's state is
// in attachments.js; uploads go through uploads.js.

import * as Core from './core.js';
import { state, dispatch } from './shell.js';
import { el, h } from './dom.js';
import { attachmentURL } from './uploads.js';

// attachmentsNode shows stored files, {sha256, name, type, size} each.
export function attachmentsNode(list) {
  const box = h('div', 'attachments');
  for (const a of list) {
    const link = h('a', Core.isImage(a) ? 'thumb' : 'chip');
    link.href = attachmentURL(a.sha256);
    link.target = '_blank';
    link.rel = 'noopener noreferrer';
    link.title = a.name + ' (' + Core.formatSize(a.size) + ')';
    if (Core.isImage(a)) {
      const img = h('img');
      img.loading = 'lazy';
      img.alt = a.name;
      img.src = link.href;
      link.append(img);
    } else {
      link.download = a.name; // the server says "attachment" too: never shown in our origin
      link.append(h('span', 'chip-name', a.name), h('span', 'chip-size', Core.formatSize(a.size)));
    }
    box.append(link);
  }
  return box;
}

// ── the tray ──
const trayNodes = new Map(); // tray item id → {li, rev}

function trayItemNode(t) {
  const li = h('li', 'tray-item');
  li.dataset.id = t.id;
  const name = h('span', 'chip-name', t.name);
  const status = h('span', 'tray-status');
  const bar = h('progress', 'tray-progress');
  bar.max = Math.max(1, t.size);
  const retry = h('button', 'small tray-retry', 'Retry');
  retry.type = 'button';
  retry.dataset.action = 'retry';
  const remove = h('button', 'small tray-remove', '×');
  remove.type = 'button';
  remove.dataset.action = 'remove';
  remove.setAttribute('aria-label', 'Remove ' + t.name);
  li.append(h('span', 'tray-thumb'), name, status, bar, retry, remove);
  return li;
}

function updateTrayItem(li, t) {
  li.dataset.state = t.state;
  li.querySelector('.chip-name').textContent = t.name;
  const pct = t.size ? Math.floor((100 * t.loaded) / t.size) : 0;
  li.querySelector('.tray-status').textContent = t.state === 'uploading' ? 'uploading ' + pct + ' %'
    : t.state === 'failed' ? 'not uploaded: ' + t.error : Core.formatSize(t.size);
  const bar = li.querySelector('.tray-progress');
  bar.value = t.loaded;
  bar.hidden = t.state !== 'uploading';
  li.querySelector('.tray-retry').hidden = t.state !== 'failed' || !t.file;
  const thumb = li.querySelector('.tray-thumb');
  if (t.state === 'done' && Core.isImage(t.att) && !thumb.firstChild) {
    const img = h('img');
    img.alt = '';
    img.src = attachmentURL(t.att.sha256);
    thumb.append(img);
  }
}

// renderTray draws the tray from state.tray; view.js calls it on render.
export function renderTray() {
  const tray = state.tray;
  el.tray.hidden = tray.items.length === 0;
  const seen = new Set();
  let prev = null;
  for (const t of tray.items) {
    seen.add(t.id);
    let rec = trayNodes.get(t.id);
    if (!rec) { rec = { li: trayItemNode(t), rev: -1 }; trayNodes.set(t.id, rec); }
    if (rec.rev !== t.rev) { updateTrayItem(rec.li, t); rec.rev = t.rev; }
    const want = prev ? prev.nextSibling : el.tray.firstChild;
    if (want !== rec.li) el.tray.insertBefore(rec.li, want);
    prev = rec.li;
  }
  for (const [id, rec] of trayNodes) if (!seen.has(id)) { rec.li.remove(); trayNodes.delete(id); }
  el.trayError.hidden = !tray.error;
  if (el.trayError.textContent !== tray.error) el.trayError.textContent = tray.error;
}

el.tray.addEventListener('click', (e) => {
  const btn = e.target.closest('button[data-action]');
  const li = btn && btn.closest('li[data-id]');
  if (!li) return;
  dispatch({ type: btn.dataset.action === 'retry' ? 'upload-retry' : 'upload-remove', upload: li.dataset.id });
  el.input.focus();
});

// ── the ways in ──
el.attach.addEventListener('click', () => el.file.click());
el.file.addEventListener('change', () => {
  dispatch({ type: 'attach', files: [...el.file.files] });
  el.file.value = ''; // the same file may be picked again
  el.input.focus();
});

// Pasting an image (a screenshot) into the composer attaches it; text on
// the clipboard is pasted as usual.
el.input.addEventListener('paste', (e) => {
  const files = e.clipboardData ? [...e.clipboardData.files] : [];
  if (!files.length) return;
  if (!e.clipboardData.types.includes('text/plain')) e.preventDefault();
  dispatch({ type: 'attach', files });
});

// Files dragged over the page: the drop zone says what a drop does.
const hasFiles = (e) => !!e.dataTransfer && [...e.dataTransfer.types].includes('Files');
let dragDepth = 0;
document.addEventListener('dragenter', (e) => {
  if (!hasFiles(e)) return;
  dragDepth++;
  el.drop.hidden = false;
});
document.addEventListener('dragleave', (e) => {
  if (!hasFiles(e)) return;
  dragDepth = Math.max(0, dragDepth - 1);
  if (!dragDepth) el.drop.hidden = true;
});
document.addEventListener('dragover', (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault(); // else the browser opens the file instead of letting us drop it
  e.dataTransfer.dropEffect = 'copy';
});
document.addEventListener('drop', (e) => {
  dragDepth = 0;
  el.drop.hidden = true;
  if (!hasFiles(e)) return;
  e.preventDefault();
  dispatch({ type: 'attach', files: [...e.dataTransfer.files] });
  el.input.focus();
});
