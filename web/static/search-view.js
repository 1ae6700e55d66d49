// search-view.js — owns the search box (a combobox: type, up/down, Enter to
// open a hit, Esc to close), its results panel, and the jump target: the
// message a hit opened, scrolled to, outlined, the query marked inside.
// The search state itself is in history.js; this module only shows it.

import * as Core from './core.js';
import { state, dispatch } from './shell.js';
import { el, h, timeOf, whenLabel } from './dom.js';
import { itemCache } from './items-view.js';

let searchExpanded = false; // the results panel is open (the field has focus and something to show)
let activeIndex = -1;       // the result ↑/↓ chose
let renderedHits = null;
let renderedQuery = '';
let searchTimer = null;

function renderSearch() {
  const sr = state.search;
  el.search.hidden = !sr.open;
  el.searchOpen.setAttribute('aria-expanded', String(sr.open));
  el.searchOpen.classList.toggle('on', sr.open);
  if (!sr.open) return;

  let status = '';
  if (state.jumping) status = 'Opening the message…';
  else if (sr.status === 'loading') status = 'Searching…';
  else if (sr.status === 'error') status = 'Search failed: ' + sr.error;
  else if (sr.status === 'done' && !sr.hits.length) status = 'No matches for “' + sr.forQuery + '”.';
  else if (sr.status === 'done') {
    const n = sr.hits.length;
    status = (n >= 50 ? 'The best ' + n + ' matches' : n + (n === 1 ? ' match' : ' matches') + ', best first') +
      (sr.mode === 'or' ? ' (no message has every word: partial matches)' : '') +
      (sr.broad ? ' (very many matches: the newest ranked; add a word to narrow)' : '');
  }
  // Search by meaning configured but not answering: say the hits are by
  // words only (no hit can be "found by meaning" then).
  if (sr.status === 'done' && sr.semantic === 'unavailable') {
    status += (status.endsWith('.') ? ' ' : '. ') + 'Search by meaning is unavailable now: matching words only.';
  }
  const hint = sr.status === 'done' && sr.hits.length && !state.jumping ? ' — ↑ ↓ to choose, Enter to open' : '';
  if (el.searchStatus.textContent !== status + hint) {
    el.searchStatus.replaceChildren(status, ...(hint ? [h('span', 'kbd-hint', hint)] : []));
  }
  el.searchRetry.hidden = sr.status !== 'error';

  if (sr.hits !== renderedHits || sr.forQuery !== renderedQuery) {
    renderedHits = sr.hits;
    renderedQuery = sr.forQuery;
    activeIndex = -1;
    el.searchResults.replaceChildren(...sr.hits.map(resultNode));
  }
  // While a jump waits for its page the panel says so (without the list).
  const expanded = (searchExpanded && status !== '') || !!state.jumping;
  el.searchPanel.hidden = !expanded;
  el.searchResults.hidden = !!state.jumping;
  el.searchInput.setAttribute('aria-expanded', String(expanded && sr.hits.length > 0));
  const kids = el.searchResults.children;
  for (let i = 0; i < kids.length; i++) {
    const on = i === activeIndex;
    kids[i].classList.toggle('active', on);
    kids[i].setAttribute('aria-selected', String(on));
  }
  if (expanded && activeIndex >= 0 && kids[activeIndex]) {
    el.searchInput.setAttribute('aria-activedescendant', kids[activeIndex].id);
    kids[activeIndex].scrollIntoView({ block: 'nearest' });
  } else {
    el.searchInput.removeAttribute('aria-activedescendant');
  }
}

// One result: who (the channel badge, or "assistant"), when, and the
// snippet with the query marked — text nodes and <mark>, never markup.
function resultNode(hit, i) {
  const li = h('li', 'result');
  li.id = 'search-result-' + i;
  li.setAttribute('role', 'option');
  li.dataset.index = String(i);
  const meta = h('div', 'result-meta');
  if (hit.type === 'assistant' || hit.type === 'memory') meta.append(h('span', 'who', hit.type));
  else meta.append(h('span', 'badge ch-' + Core.channelKind(hit.channel), Core.channelLabel(hit)));
  const t = h('time', 'when', whenLabel(hit.ts));
  const d = timeOf(hit.ts);
  if (d) t.dateTime = d.toISOString();
  meta.append(t);
  // Found by what it means, not by its words: nothing in it is marked.
  if (hit.found === 'meaning') {
    const m = h('span', 'found-meaning', 'found by meaning');
    m.title = 'None of your words is in it; it is about the same thing';
    meta.append(m);
  }
  if (hit.item) meta.append(h('span', 'result-item', hit.item));
  const snip = h('div', 'result-snippet');
  for (const part of Core.marked(hit.snippet)) {
    snip.append(part.mark ? h('mark', null, part.text) : document.createTextNode(part.text));
  }
  li.append(meta, snip);
  return li;
}

function openSearch() {
  dispatch({ type: 'search-open' });
  el.search.hidden = false; // now, so it can take focus
  searchExpanded = true;
  el.searchInput.focus();
  el.searchInput.select();
  renderSearch();
}

function closeSearch() {
  clearTimeout(searchTimer);
  const hadFocus = el.search.contains(document.activeElement) || (hitNode && hitNode.contains(document.activeElement));
  searchExpanded = false;
  clearHit();
  dispatch({ type: 'search-close' });
  el.search.hidden = true;
  if (hadFocus) el.input.focus();
}

function runSearch() {
  clearTimeout(searchTimer);
  searchExpanded = true;
  dispatch({ type: 'search', q: el.searchInput.value });
}

function openResult(i) {
  const hit = state.search.hits[i];
  if (!hit || !hit.seq) return; // a memory section is not in the conversation
  activeIndex = i;
  searchExpanded = false;
  dispatch({ type: 'jump', seq: hit.seq, moveFocus: true });
}

// ── the jump target: scrolled to, outlined, the query marked inside ──
let hitNode = null;

function clearHit() {
  if (!hitNode) return;
  hitNode.classList.remove('hit', 'flash');
  for (const m of hitNode.querySelectorAll('mark.find')) m.replaceWith(document.createTextNode(m.textContent));
  for (const box of hitNode.querySelectorAll('.text, .md')) box.normalize();
  hitNode = null;
}

function markMatches(root, query) {
  if (!query) return;
  for (const box of root.querySelectorAll('.text, .md')) {
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    const nodes = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
    for (const n of nodes) {
      const parts = Core.highlight(n.data, query);
      if (parts.length < 2 && !parts[0].mark) continue;
      n.replaceWith(...parts.map((p) => (p.mark ? h('mark', 'find', p.text) : document.createTextNode(p.text))));
    }
  }
}

function showTarget(v, focus) {
  const it = Core.itemForSeq(v.items, focus.seq);
  const rec = it && itemCache.get(it.key);
  clearHit();
  if (!rec) return;
  hitNode = rec.node;
  const hit = state.search.hits.find((x) => x.seq === focus.seq);
  markMatches(hitNode, hit ? Core.markedTerms(hit.snippet) : state.search.forQuery || state.search.query);
  hitNode.classList.add('hit');
  hitNode.classList.remove('flash');
  void hitNode.offsetWidth; // restart the animation
  hitNode.classList.add('flash');
  // Centre it; a message taller than the view shows its first match a third down.
  const view = el.main.getBoundingClientRect();
  const box = hitNode.getBoundingClientRect();
  const mark = hitNode.querySelector('mark.find');
  el.main.scrollTop += box.height <= view.height - 48 ? box.top - view.top - (view.height - box.height) / 2
    : (mark ? mark.getBoundingClientRect().top : box.top) - view.top - view.height / 3;
  if (focus.moveFocus) {
    hitNode.tabIndex = -1; // focusable by script only: screen readers read it, Tab order unchanged
    hitNode.focus({ preventScroll: true });
  }
}


// search: the header button, "/" (when not typing) and Ctrl+K / ⌘K open it
el.searchOpen.addEventListener('click', () => (state.search.open ? closeSearch() : openSearch()));
el.searchClose.addEventListener('click', closeSearch);
el.searchRetry.addEventListener('click', () => { runSearch(); el.searchInput.focus(); });
el.searchInput.addEventListener('input', () => {
  searchExpanded = true;
  clearTimeout(searchTimer);
  searchTimer = setTimeout(runSearch, 250);
});
el.searchInput.addEventListener('focus', () => { searchExpanded = true; renderSearch(); });
el.searchInput.addEventListener('keydown', (e) => {
  if (e.isComposing || e.keyCode === 229) return;
  const sr = state.search;
  const n = sr.hits.length;
  if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
    e.preventDefault();
    searchExpanded = true;
    if (n && sr.status === 'done') {
      activeIndex = e.key === 'ArrowDown' ? (activeIndex + 1) % n : activeIndex <= 0 ? n - 1 : activeIndex - 1;
    }
    renderSearch();
  } else if (e.key === 'Enter') {
    e.preventDefault();
    const q = el.searchInput.value.trim();
    if (!q) return;
    // Typed but not searched yet: search now. Searched: open the chosen (or first) result.
    if (q !== sr.query || sr.status === 'idle' || sr.status === 'error') runSearch();
    else if (sr.status === 'done' && n) openResult(Math.max(0, activeIndex));
  } else if (e.key === 'Escape') {
    e.preventDefault();
    e.stopPropagation();
    closeSearch();
  }
});
el.search.addEventListener('focusout', (e) => {
  if (!el.search.contains(e.relatedTarget)) { searchExpanded = false; renderSearch(); }
});
el.searchResults.addEventListener('mousedown', (e) => e.preventDefault()); // keep focus in the field
el.searchResults.addEventListener('click', (e) => {
  const li = e.target.closest('li[data-index]');
  if (li) openResult(Number(li.dataset.index));
});

export { renderSearch, openSearch, closeSearch, clearHit, showTarget };
