// memory.js — the "Memory" panel: what the assistant remembers, as items a
// person manages (GET /api/memory). Add one (POST), edit one in place (PUT
// /api/memory/{id}), forget one (DELETE) with an Undo that saves the text
// again as a new item, and narrow the list by words typed in its own
// search box — matched as `type:memory` search matches (GET
// /api/history/search: stemmed words, and by meaning when configured), so
// the two find the same items. Items are listed by id, the order /memory
// prints them in the terminal. The list follows
// every door: each memory_changed frame (the agent saved, the terminal
// forgot, another tab edited) and each reconnect make it look again. It
// builds its own header button and panel; loaded as its own module script
// after app.js, whose render hook it wraps, like schedules.js.
// Every server string goes through textContent (h()).

import { h, whenLabel, fullTime, timeOf, headerPanel } from './dom.js';
import { state, apiGet, apiCall, lookAgain } from './shell.js';
import { madeBy, editedBy } from './memwords.js';

// A bookmark and the word: on a phone only the bookmark and the count show.
const { button, count, panel, head, heading } = headerPanel({
  id: 'memory', label: 'Memory', title: 'What the assistant remembers', prefix: 'mem',
  shapes: [['path', { d: 'M5.5 3h9v14l-4.5-3.5L5.5 17z' }]],
  onOpen: () => { refresh(); addInput.focus(); },
});
const total = h('span', 'mem-total', '');
heading.append(total);

// Add: a line to remember, saved with source "web".
const addForm = h('form', 'mem-add');
addForm.id = 'memory-add';
const addInput = h('input', 'mem-input');
addInput.id = 'memory-new';
addInput.type = 'text';
addInput.placeholder = 'Something to remember…';
addInput.autocomplete = 'off';
addInput.setAttribute('aria-label', 'Something for the assistant to remember');
const addBtn = h('button', 'small', 'Remember');
addBtn.type = 'submit';
addForm.append(addInput, addBtn);

// Search within: filters what is listed, as you type.
const filter = h('input', 'mem-filter');
filter.id = 'memory-filter';
filter.type = 'search';
filter.placeholder = 'Search memory…';
filter.autocomplete = 'off';
filter.spellcheck = false;
filter.setAttribute('aria-label', 'Search within the memory');
filter.setAttribute('aria-controls', 'memory-list');

const status = h('p', 'mem-status', '');
status.id = 'memory-status';
status.setAttribute('role', 'status');
const error = h('p', 'mem-error', '');
error.id = 'memory-error';
error.setAttribute('role', 'alert');
error.hidden = true;
const undoBar = h('div', 'mem-undo');
undoBar.id = 'memory-undo';
undoBar.hidden = true;
const undoText = h('span', 'mem-undo-text', '');
const undoBtn = h('button', 'small', 'Undo');
undoBtn.type = 'button';
undoBtn.id = 'memory-undo-btn';
undoBtn.title = 'Save the forgotten text again (as a new item)';
undoBar.append(undoText, undoBtn);
const list = h('ul', 'mem-list');
list.id = 'memory-list';
const SHOW = 100; // items the list shows a page
let showing = SHOW;
const more = h('button', 'small mem-more', '');
more.type = 'button';
more.id = 'memory-more';
more.hidden = true;
more.addEventListener('click', () => { showing += SHOW; paint(); });
panel.append(head, addForm, filter, error, undoBar, status, list, more);
document.querySelector('header.top').after(panel);

let items = [];
let loadError = '';
let loaded = false;
let loading = null;
let again = false;
let undo = null;     // {text, timer}: the last item forgotten here
// The filter's answer from the search: {q, ids: Map id → how found,
// mode, semantic} for the words in the box (q), or null while none is in;
// filterError says why the search failed (the words are then matched
// here, as typed).
let found = null;
let filterError = '';
let filterTimer = null;
let filterSerial = 0;
const editing = new Map(); // id → {draft, base}: items open for editing (their text as it was when opened)

function showError(text) {
  error.textContent = text;
  error.hidden = !text;
}

async function refresh() {
  // A look asked for while one is under way may follow a change that one
  // missed: it is made once that one is done.
  if (loading) { again = true; return loading; }
  loading = loadAll().then((all) => {
    items = all;
    loadError = '';
    loaded = true;
  }, (e) => {
    loadError = 'Could not load the memory: ' + e.message + '.';
  }).finally(() => {
    loading = null;
    if (again) { again = false; refresh(); }
    paint();
  });
  return loading;
}

// loadAll reads GET /api/memory a page at a time (memory.max_items bounds
// how many pages): the filter and the order need every item here.
async function loadAll() {
  let all = [];
  let after = '';
  for (let n = 0; n < 1000; n++) {
    const b = await apiGet('/api/memory', { limit: PAGE, after });
    all = all.concat(Array.isArray(b.items) ? b.items : []);
    if (!b.next) break;
    after = b.next;
  }
  return all;
}
const PAGE = 1000;

const norm = (s) => String(s).toLocaleLowerCase().normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
function matches(it, words) {
  const t = norm(it.id + ' ' + it.text + ' ' + it.source);
  return words.every((w) => t.includes(w));
}

// runFilter asks the search for the items the words in the box find, as
// `type:memory` search does (the best 200).
async function runFilter() {
  clearTimeout(filterTimer);
  const q = filter.value.trim();
  const serial = ++filterSerial;
  if (!q) { found = null; filterError = ''; paint(); return; }
  try {
    const b = await apiGet('/api/history/search', { q: q + ' type:memory', limit: 200 });
    if (serial !== filterSerial) return;
    const ids = new Map();
    for (const hit of Array.isArray(b.hits) ? b.hits : []) if (hit.item) ids.set(hit.item, hit.found || 'words');
    found = { q, ids, mode: b.mode, semantic: b.semantic || '' };
    filterError = '';
  } catch (e) {
    if (serial !== filterSerial) return;
    found = null;
    filterError = e.message;
  }
  paint();
}

// shownItems is the items the filter lets through, in list order, and
// the status line for them.
function shownItems() {
  const q = filter.value.trim();
  if (!q) return { shown: items, note: '' };
  if (filterError) {
    // The search failed: the words as typed.
    const words = norm(q).split(/\s+/).filter(Boolean);
    const shown = items.filter((it) => matches(it, words));
    return { shown, note: ' (search failed: ' + filterError + '; matching the words as typed)' };
  }
  if (!found || found.q !== q) {
    // Its answer is on the way: what the last one found stays until then.
    return { shown: found ? items.filter((it) => found.ids.has(it.id)) : items, searching: true };
  }
  const shown = items.filter((it) => found.ids.has(it.id));
  let note = '';
  if (found.mode === 'or') note += ' (no item has every word: items with some of them)';
  if (found.semantic === 'unavailable') note += ' (search by meaning is unavailable now: matching words only)';
  return { shown, note };
}

function paint() {
  count.replaceChildren(...(items.length ? [h('span', 'mem-sep', ' · '), String(items.length)] : []));
  total.textContent = items.length ? ' · ' + items.length + (items.length === 1 ? ' item' : ' items') : '';
  // In id order, as the server lists them (and /memory in the terminal).
  const { shown, note, searching } = shownItems();
  if (loadError) status.textContent = loadError;
  else if (!loaded) status.textContent = 'Loading…';
  else if (!items.length) status.textContent = 'The assistant remembers nothing yet. Add something above, or tell it: “remember that …”.';
  else if (searching) status.textContent = 'Searching…';
  else if (filter.value.trim()) status.textContent = (shown.length ? shown.length + ' of ' + items.length + ' match.' : 'Nothing in memory matches “' + filter.value.trim() + '”.') + note;
  else status.textContent = '';
  for (const id of editing.keys()) {
    if (!items.some((it) => it.id === id)) dropEditor(id);
  }
  // The list shows a page at a time: thousands of rows would make every
  // repaint slow. More shows the next page.
  const page = shown.slice(0, showing);
  more.hidden = shown.length <= showing;
  more.textContent = 'Show ' + Math.min(SHOW, shown.length - showing) + ' more (' + (shown.length - showing) + ' not shown)';
  reconcile(page);
}

// An item forgotten elsewhere while open here: its draft is not lost, it
// goes into the Add box (Remember saves it as a new item).
function dropEditor(id) {
  const ed = editing.get(id);
  editing.delete(id);
  if (ed && ed.draft.trim() && ed.draft !== ed.base) {
    addInput.value = ed.draft;
    showError('The item you were editing was forgotten from another door; your text is in the box above — Remember saves it again.');
  }
}

// One element per item, kept across repaints so an open editor keeps its
// focus and its text while the list changes around it.
const nodes = new Map();
function reconcile(shown) {
  const seen = new Set();
  let prev = null;
  for (const it of shown) {
    seen.add(it.id);
    let li = nodes.get(it.id);
    if (!li) { li = build(it.id); nodes.set(it.id, li); }
    update(li, it);
    const want = prev ? prev.nextSibling : list.firstChild;
    if (want !== li) list.insertBefore(li, want);
    prev = li;
  }
  for (const [id, li] of nodes) if (!seen.has(id)) { li.remove(); nodes.delete(id); }
}

function build(id) {
  const li = h('li', 'mem-item');
  li.dataset.id = id;
  // The id /forget takes in the terminal, and the agent's memory tools.
  const idTag = h('span', 'mem-id', id);
  idTag.title = 'This item’s id: /forget ' + id + ' in the terminal forgets it';
  const by = h('span', 'mem-found', 'found by meaning');
  by.hidden = true;
  const text = h('p', 'mem-text');
  const box = h('textarea', 'mem-edit');
  box.rows = 2;
  box.setAttribute('aria-label', 'Edit this memory');
  box.hidden = true;
  const meta = h('p', 'mem-meta');
  const actions = h('div', 'mem-actions');
  for (const [action, label, cls] of [['edit', 'Edit', 'small'], ['save', 'Save', 'small'], ['discard', 'Cancel', 'small'], ['forget', 'Forget', 'small danger']]) {
    const b = h('button', cls, label);
    b.type = 'button';
    b.dataset.action = action;
    actions.append(b);
  }
  const head = h('div', 'mem-head');
  head.append(idTag, by);
  li.append(head, text, box, meta, actions);
  return li;
}

function update(li, it) {
  const ed = editing.get(it.id);
  li.classList.toggle('editing', !!ed);
  const how = found && filter.value.trim() === found.q ? found.ids.get(it.id) : '';
  li.querySelector('.mem-found').hidden = how !== 'meaning';
  li.querySelector('.mem-text').textContent = it.text;
  li.querySelector('.mem-text').hidden = !!ed;
  const box = li.querySelector('.mem-edit');
  box.hidden = !ed;
  if (ed && box.value !== ed.draft) box.value = ed.draft;
  const changed = it.updated && it.updated !== it.created;
  const when = changed ? it.updated : it.created;
  const meta = li.querySelector('.mem-meta');
  // Who made it and who edited it, named apart: "saved by the assistant,
  // asked by email (eve@example.com) · edited in the web page Today, 15:56".
  const edited = editedBy(it, state.memoryPeople[it.id]);
  meta.textContent = madeBy(it) + ' · ' + (edited ? edited + ' ' : '') + whenLabel(when);
  const d = timeOf(when);
  meta.title = d ? fullTime(d) + ' · ' + it.id : it.id;
  const short = it.text.length > 60 ? it.text.slice(0, 60) + '…' : it.text;
  for (const b of li.querySelectorAll('.mem-actions button')) {
    const a = b.dataset.action;
    b.hidden = ed ? a === 'edit' || a === 'forget' : a === 'save' || a === 'discard';
    b.setAttribute('aria-label', b.textContent + ': ' + short);
  }
}

function startEdit(id) {
  const it = items.find((x) => x.id === id);
  if (!it) return;
  editing.set(id, { draft: it.text, base: it.text });
  paint();
  const box = nodes.get(id) && nodes.get(id).querySelector('.mem-edit');
  if (box) { box.focus(); box.setSelectionRange(box.value.length, box.value.length); }
}

function stopEdit(id) {
  editing.delete(id);
  paint();
  const li = nodes.get(id);
  const b = li && li.querySelector('button[data-action="edit"]');
  if (b) b.focus();
}

async function saveEdit(id, btn) {
  const ed = editing.get(id);
  if (!ed) return;
  const text = ed.draft.trim();
  if (!text) { showError('A memory cannot be empty: use Forget to remove it.'); return; }
  if (text === ed.base.trim()) { stopEdit(id); return; }
  btn.disabled = true;
  try {
    const it = await apiCall('PUT', '/api/memory/' + encodeURIComponent(id), { text });
    showError('');
    editing.delete(id);
    if (it && it.id) items = items.map((x) => (x.id === it.id ? it : x));
    paint();
  } catch (e) {
    if (e.status === 404) { // forgotten elsewhere meanwhile: the draft goes to the Add box
      items = items.filter((x) => x.id !== id);
      paint();
    } else {
      showError('Could not save the change: ' + e.message + '. Your text is still in the box.');
    }
  } finally {
    btn.disabled = false;
  }
  refresh();
}

async function forget(id, btn) {
  const it = items.find((x) => x.id === id);
  if (!it) return;
  btn.disabled = true;
  try {
    await apiCall('DELETE', '/api/memory/' + encodeURIComponent(id));
  } catch (e) {
    btn.disabled = false;
    // Already gone (another door forgot it) is what was wanted.
    if (e.status !== 404) { showError('Could not forget it: ' + e.message + '.'); return; }
  }
  showError('');
  items = items.filter((x) => x.id !== id);
  editing.delete(id);
  offerUndo(it.text);
  paint();
  refresh();
}

function offerUndo(text) {
  if (undo) clearTimeout(undo.timer);
  undo = { text, timer: setTimeout(() => { undo = null; undoBar.hidden = true; }, 60000) };
  const short = text.length > 80 ? text.slice(0, 80) + '…' : text;
  undoText.textContent = 'Forgotten: “' + short + '”. Undo saves it again as a new item.';
  undoBar.hidden = false;
  undoBtn.disabled = false;
}

undoBtn.addEventListener('click', async () => {
  if (!undo) return;
  undoBtn.disabled = true;
  try {
    await add(undo.text);
  } catch (e) {
    undoBtn.disabled = false;
    showError('Could not save it again: ' + e.message + '.');
    return;
  }
  clearTimeout(undo.timer);
  undo = null;
  undoBar.hidden = true;
});

async function add(text) {
  const it = await apiCall('POST', '/api/memory', { text });
  showError('');
  if (it && it.id && !items.some((x) => x.id === it.id)) items = items.concat([it]);
  loaded = true;
  paint();
  refresh();
  return it;
}

addForm.addEventListener('submit', async (e) => {
  e.preventDefault();
  const text = addInput.value.trim();
  if (!text) { addInput.focus(); return; }
  addBtn.disabled = true;
  try {
    await add(text);
    addInput.value = '';
  } catch (err) {
    showError('Could not remember it: ' + err.message + '. Your text is still in the box.');
  } finally {
    addBtn.disabled = false;
  }
});

list.addEventListener('click', (e) => {
  const btn = e.target.closest('button[data-action]');
  const li = btn && btn.closest('li[data-id]');
  if (!li) return;
  const id = li.dataset.id;
  switch (btn.dataset.action) {
    case 'edit': startEdit(id); break;
    case 'save': saveEdit(id, btn); break;
    case 'discard': stopEdit(id); break;
    case 'forget': forget(id, btn); break;
  }
});
list.addEventListener('dblclick', (e) => {
  const li = e.target.closest('.mem-text') && e.target.closest('li[data-id]');
  if (li) startEdit(li.dataset.id);
});
list.addEventListener('input', (e) => {
  const li = e.target.classList.contains('mem-edit') && e.target.closest('li[data-id]');
  const ed = li && editing.get(li.dataset.id);
  if (ed) ed.draft = e.target.value;
});
// In the editor Enter saves (Shift+Enter: a new line), Esc cancels.
list.addEventListener('keydown', (e) => {
  const li = e.target.classList.contains('mem-edit') && e.target.closest('li[data-id]');
  if (!li || e.isComposing) return;
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    saveEdit(li.dataset.id, li.querySelector('button[data-action="save"]'));
  } else if (e.key === 'Escape') {
    e.preventDefault();
    e.stopPropagation();
    stopEdit(li.dataset.id);
  }
});
filter.addEventListener('input', () => {
  paint(); // "Searching…"; the search's answer in a moment
  clearTimeout(filterTimer);
  filterTimer = setTimeout(runFilter, 200);
});


// On each memory_changed (from any door) and after a reconnect (changes
// while the connection was down sent no frame), look again.
// A burst (a consolidation's items) is one look.
lookAgain(() => state.memoryRev, () => { refresh(); if (filter.value.trim()) runFilter(); });
refresh();
