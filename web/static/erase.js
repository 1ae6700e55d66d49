// erase.js — owns "Erase…" on a message: the dialog that says what an
// erase does (and that backups made before still hold the message), and
// DELETE /api/history/{seq}. The erased event that follows, from the
// server, is what changes the conversation (items.js), here and on every
// other client.

import { apiCall } from './shell.js';

const $ = (id) => document.getElementById(id);
const dialog = $('erase-dialog');
const confirmBtn = $('erase-confirm');
const keepBtn = $('erase-keep');
const errorLine = $('erase-error');
let seq = 0;

// offerErase opens the dialog for the message at s.
function offerErase(s) {
  if (!dialog || dialog.open) return;
  seq = s;
  errorLine.hidden = true;
  errorLine.textContent = '';
  confirmBtn.disabled = false;
  dialog.dataset.seq = String(s);
  dialog.showModal();
}

async function erase() {
  confirmBtn.disabled = true;
  try {
    await apiCall('DELETE', '/api/history/' + encodeURIComponent(String(seq)));
    dialog.close();
  } catch (e) {
    // 409: erased meanwhile from another door — what was wanted.
    if (e.status === 409 && /already/.test(e.message)) { dialog.close(); return; }
    errorLine.textContent = 'Could not erase it: ' + e.message + '.';
    errorLine.hidden = false;
    confirmBtn.disabled = false;
  }
}

if (dialog) {
  keepBtn.addEventListener('click', () => dialog.close());
  confirmBtn.addEventListener('click', erase);
}

export { offerErase };
