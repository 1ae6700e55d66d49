// frontdesk chat UI. Plain JS, no build step, no dependencies.
//
// The file has three parts, top to bottom:
//   1. Core      — the Markdown renderer (text → a tree of plain objects) and
//                  the protocol state machine: replay buffering, seq dedupe,
//                  busy tracking, pending ("sending…") messages. No DOM, no I/O;
//                  node can require() this file and test it (see the bottom).
//   2. Shell     — the WebSocket: connect, backoff, close codes, token auth.
//   3. View      — DOM rendering from the core state. Every piece of server or
//                  user text goes through textContent, never innerHTML.
'use strict';

// ─────────────────────────── 1a. Markdown ───────────────────────────
// A deliberately small Markdown renderer for assistant replies. It returns a
// tree of plain objects — {tag, attrs, children} for elements, {text} for
// text — that the view turns into DOM nodes with createElement and
// textContent. Raw HTML is never interpreted: "<script>" is just text.
//
// Why our own and not a vendored library: every popular renderer (marked,
// markdown-it, commonmark.js) produces an HTML string, so using one safely
// means adding a sanitizer as well and trusting that pair with innerHTML;
// this one cannot produce markup at all, is ~300 lines, and is tested with
// the hostile cases in web/uitest. It covers what chat replies use:
//   blocks:  paragraphs (a single newline is a line break, as in chat),
//            ``` / ~~~ fenced code (unclosed: runs to the end, which is what
//            a streaming reply needs), # headings (rendered h3–h6, below the
//            page's own h1), - * + and 1. 1) lists (nested by indentation;
//            tight lists without <p>), > blockquotes, --- rules, | tables.
//   inline:  **strong** __strong__ *em* _em_ (CommonMark delimiter rules,
//            so nesting like ***both*** works), `code`, \ escapes,
//            [text](url "title"), <url>, bare http(s):// URLs, ![alt](url)
//            shown as a link (no remote images).
// Links only for http:, https: and mailto: URLs; anything else (javascript:,
// data:, relative paths) is shown as the literal source text. Every link gets
// rel="noopener noreferrer" and target="_blank". Entities (&amp;) stay literal.
const Markdown = (() => {
  const MAX_NEST = 16;           // block nesting (quotes in lists in quotes …)
  const MAX_TREE_DEPTH = 40;     // deeper inline trees are flattened to text
  const MAX_DELIMS = 4000;       // more * and _ runs than this: no emphasis
  // Link labels and destinations are looked for this far only, so a reply
  // full of unclosed "[" or "(" costs linear time, not quadratic.
  const MAX_LABEL = 1000;
  const MAX_DEST = 2048;

  const el = (tag, children, attrs) => (attrs ? { tag, attrs, children: children || [] } : { tag, children: children || [] });
  const txt = (text) => ({ text });

  // safeHref returns the URL if it may be a link target, else null. Only an
  // explicit http:, https: or mailto: scheme passes: the check is on the
  // literal string, so tricks browsers undo ("java\tscript:", "&#106;…",
  // leading control characters) never start with an allowed scheme.
  function safeHref(url) {
    if (typeof url !== 'string') return null;
    const u = url.trim();
    if (!/^(?:https?:\/\/[^\s/?#]|mailto:[^\s])/i.test(u)) return null;
    if (/[\s\u0000-\u001f\u007f<>"`]/.test(u)) return null;
    return u;
  }

  function linkNode(href, children, title) {
    const attrs = { href, rel: 'noopener noreferrer', target: '_blank' };
    if (title) attrs.title = title;
    return el('a', children.length ? children : [txt(href)], attrs);
  }

  // ── blocks ──
  const isBlank = (l) => /^[ \t]*$/.test(l);
  const indentOf = (l) => l.length - l.replace(/^ +/, '').length;
  const FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
  const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;
  const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  const QUOTE = /^ {0,3}>/;
  const BULLET = /^( {0,3})([-+*])(?:([ \t]+)(.*))?$/;
  const ORDERED = /^( {0,3})(\d{1,9})([.)])(?:([ \t]+)(.*))?$/;
  const TABLE_SEP = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;

  function fenceOpen(line) {
    const m = FENCE.exec(line);
    if (!m || (m[2][0] === '`' && m[3].includes('`'))) return null;
    return { indent: m[1].length, fence: m[2], info: m[3].trim() };
  }

  function listMarker(line) {
    let m = BULLET.exec(line);
    let ordered = false;
    if (!m) { m = ORDERED.exec(line); ordered = true; }
    if (!m) return null;
    const indent = m[1].length;
    const marker = ordered ? m[3] : m[2];
    const markerLen = ordered ? m[2].length + 1 : 1;
    const gap = m[ordered ? 4 : 3];
    const content = m[ordered ? 5 : 4] ?? '';
    // Four or more spaces after the marker would be indented code; we keep one.
    const spaces = gap === undefined || content === '' || gap.length > 4 ? 1 : gap.length;
    return { ordered, marker, indent, start: ordered ? parseInt(m[2], 10) : 1, width: indent + markerLen + spaces,
      content: gap !== undefined && gap.length > 4 ? gap.slice(1) + content : content, empty: content === '' };
  }

  function tableCells(line) {
    let s = line.trim();
    if (s.startsWith('|')) s = s.slice(1);
    if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
    const cells = [];
    let cur = '';
    for (let i = 0; i < s.length; i++) {
      if (s[i] === '\\' && s[i + 1] === '|') { cur += '|'; i++; continue; }
      if (s[i] === '|') { cells.push(cur.trim()); cur = ''; continue; }
      cur += s[i];
    }
    cells.push(cur.trim());
    return cells;
  }

  function tableStart(lines, i) {
    if (i + 1 >= lines.length || !lines[i].includes('|') || !TABLE_SEP.test(lines[i + 1]) || !lines[i + 1].includes('-')) return null;
    const head = tableCells(lines[i]);
    const aligns = tableCells(lines[i + 1]).map((c) => (c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : c.startsWith(':') ? 'left' : ''));
    if (head.length !== aligns.length) return null;
    return { head, aligns };
  }

  // Does this line start a block that ends a paragraph?
  function interrupts(lines, i) {
    const l = lines[i];
    if (fenceOpen(l) || HEADING.test(l) || RULE.test(l) || QUOTE.test(l) || tableStart(lines, i)) return true;
    const m = listMarker(l);
    return !!m && !m.empty && (!m.ordered || m.start === 1);
  }

  function parseBlocks(lines, depth) {
    if (depth > MAX_NEST) return lines.some((l) => !isBlank(l)) ? [el('p', parseInline(lines.join('\n').trim(), true))] : [];
    const out = [];
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (isBlank(line)) { i++; continue; }

      const f = fenceOpen(line);
      if (f) {
        const body = [];
        i++;
        while (i < lines.length) {
          const c = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(lines[i]);
          if (c && c[1][0] === f.fence[0] && c[1].length >= f.fence.length) { i++; break; }
          const l = lines[i];
          body.push(l.slice(Math.min(f.indent, indentOf(l))));
          i++;
        }
        const lang = (f.info.split(/\s+/)[0] || '').replace(/[^\w+#.-]/g, '').slice(0, 24);
        out.push(el('pre', [el('code', [txt(body.join('\n'))])], lang ? { 'data-lang': lang } : undefined));
        continue;
      }

      let m = HEADING.exec(line);
      if (m) {
        const text = (m[2] || '').replace(/(?:^|[ \t]+)#+$/, '');
        out.push(el('h' + Math.min(6, m[1].length + 2), parseInline(text, true)));
        i++;
        continue;
      }

      if (RULE.test(line)) { out.push(el('hr')); i++; continue; }

      if (QUOTE.test(line)) {
        const inner = [];
        while (i < lines.length) {
          const l = lines[i];
          if (QUOTE.test(l)) inner.push(l.replace(/^ {0,3}> ?/, ''));
          // Lazy continuation: "> a\nb" quotes b as well, unless b starts a block.
          else if (!isBlank(l) && inner.length && !isBlank(inner[inner.length - 1]) && !interrupts(lines, i)) inner.push(l);
          else break;
          i++;
        }
        out.push(el('blockquote', parseBlocks(inner, depth + 1)));
        continue;
      }

      const lm = listMarker(line);
      if (lm) { i = parseList(lines, i, lm, depth, out); continue; }

      const t = tableStart(lines, i);
      if (t) {
        const cell = (tag, c, k) => el(tag, parseInline(c, true), t.aligns[k] ? { 'data-align': t.aligns[k] } : undefined);
        const head = el('thead', [el('tr', t.head.map((c, k) => cell('th', c, k)))]);
        const rows = [];
        i += 2;
        while (i < lines.length && !isBlank(lines[i]) && lines[i].includes('|') && !interrupts(lines, i)) {
          const cells = tableCells(lines[i]);
          rows.push(el('tr', t.head.map((_, k) => cell('td', cells[k] ?? '', k))));
          i++;
        }
        out.push(el('table', rows.length ? [head, el('tbody', rows)] : [head]));
        continue;
      }

      // Paragraph: until a blank line or the start of another block.
      const para = [line];
      i++;
      while (i < lines.length && !isBlank(lines[i]) && !interrupts(lines, i)) { para.push(lines[i]); i++; }
      out.push(el('p', parseInline(para.map((l) => l.trim()).join('\n'), true)));
    }
    return out;
  }

  function parseList(lines, i, first, depth, out) {
    const items = [];
    let loose = false;
    while (i < lines.length) {
      const m = !RULE.test(lines[i]) && listMarker(lines[i]);
      if (!m || m.ordered !== first.ordered || m.marker !== first.marker) break;
      const body = [m.content];
      i++;
      let blankBefore = false;
      while (i < lines.length) {
        const l = lines[i];
        if (isBlank(l)) { body.push(''); blankBefore = true; i++; continue; }
        const ind = indentOf(l);
        // Nested content is indented to the item's text; a nested list marker
        // indented by 2 is accepted too ("1. a\n  - b", common in replies).
        if (ind >= m.width || (ind >= m.indent + 2 && listMarker(l))) {
          body.push(l.slice(Math.min(ind, m.width))); blankBefore = false; i++; continue;
        }
        if (blankBefore || listMarker(l) || interrupts(lines, i)) break;
        body.push(l.trim()); // lazy continuation of the item's paragraph
        i++;
      }
      // Trailing blank lines belong between items, not inside the last one.
      let trailing = 0;
      while (body.length && isBlank(body[body.length - 1])) { body.pop(); trailing++; }
      if (body.some(isBlank)) loose = true;
      items.push({ body, trailing });
      if (trailing && i < lines.length) {
        const next = listMarker(lines[i]);
        if (next && next.ordered === first.ordered && next.marker === first.marker) loose = true;
      }
    }
    const lis = items.map(({ body }) => {
      let kids = parseBlocks(body, depth + 1);
      if (!loose) kids = kids.flatMap((k) => (k.tag === 'p' ? k.children : [k]));
      return el('li', kids);
    });
    const attrs = first.ordered && first.start !== 1 ? { start: String(first.start) } : undefined;
    out.push(el(first.ordered ? 'ol' : 'ul', lis, attrs));
    return i;
  }

  // ── inline ──
  const PUNCT = /[!-/:-@[-`{-~\p{P}\p{S}]/u;
  const ESCAPABLE = /[!-/:-@[-`{-~]/;
  const isSpace = (c) => c === undefined || /\s/u.test(c);
  const isPunct = (c) => c !== undefined && PUNCT.test(c);

  // A link's [label](destination "title"), starting at src[i] === '['.
  // Returns {node, end} or null when this is no link.
  function parseLink(src, i) {
    let depth = 0;
    let j = i;
    const labelEnd = Math.min(src.length, i + MAX_LABEL);
    for (; j < labelEnd; j++) {
      const c = src[j];
      if (c === '\\') { j++; continue; }
      if (c === '[') depth++;
      else if (c === ']' && --depth === 0) break;
    }
    if (j >= labelEnd || src[j + 1] !== '(') return null;
    const label = src.slice(i + 1, j);
    let k = j + 2;
    const destEnd = Math.min(src.length, k + MAX_DEST);
    while (k < destEnd && /[ \t\n]/.test(src[k])) k++;
    let dest;
    if (src[k] === '<') {
      const e = src.indexOf('>', k);
      if (e < 0 || e > destEnd || /[\n<]/.test(src.slice(k + 1, e))) return null;
      dest = src.slice(k + 1, e);
      k = e + 1;
    } else {
      const s = k;
      let parens = 0;
      for (; k < destEnd; k++) {
        const c = src.charCodeAt(k);
        if (c === 92 /* backslash */ && k + 1 < src.length) { k++; continue; }
        if (c <= 32 || c === 0x7f || c === 0xa0 || (c >= 0x2000 && /\s/.test(src[k]))) break;
        if (c === 40 /* ( */) parens++;
        else if (c === 41 /* ) */) { if (parens === 0) break; parens--; }
      }
      dest = src.slice(s, k).replace(/\\([!-/:-@[-`{-~])/g, '$1');
    }
    while (k < src.length && /[ \t\n]/.test(src[k])) k++;
    let title = '';
    const close = { '"': '"', "'": "'", '(': ')' }[src[k]];
    if (close) {
      const e = src.indexOf(close, k + 1);
      if (e < 0 || e > destEnd) return null;
      title = src.slice(k + 1, e);
      k = e + 1;
      while (k < src.length && /[ \t\n]/.test(src[k])) k++;
    }
    if (src[k] !== ')') return null;
    const end = k + 1;
    const href = safeHref(dest);
    if (!href) return { node: txt(src.slice(i, end)), end };
    return { node: linkNode(href, parseInline(label, false), title), end };
  }

  // Bare URL at src[i]; trailing punctuation and unbalanced ')' stay outside.
  function bareURL(src, i) {
    const m = /^https?:\/\/[^\s<>"`]+/i.exec(src.slice(i, i + 2048));
    if (!m) return null;
    let u = m[0];
    for (;;) {
      const last = u[u.length - 1];
      if (/[.,:;!?'*_~]/.test(last)) u = u.slice(0, -1);
      else if (last === ')' && (u.match(/\(/g) || []).length < (u.match(/\)/g) || []).length) u = u.slice(0, -1);
      else break;
    }
    const href = safeHref(u);
    return href ? { node: linkNode(href, [txt(u)]), end: i + u.length } : null;
  }

  function parseInline(src, links) {
    const nodes = [];
    let buf = '';
    const flush = () => { if (buf) { nodes.push(txt(buf)); buf = ''; } };
    let delims = 0;
    for (let i = 0; i < src.length;) {
      const c = src[i];
      if (c === '\\' && src[i + 1] === '\n') { flush(); nodes.push(el('br')); i += 2; continue; }
      if (c === '\\' && i + 1 < src.length && ESCAPABLE.test(src[i + 1])) { buf += src[i + 1]; i += 2; continue; }
      if (c === '\n') { flush(); nodes.push(el('br')); i++; continue; }
      if (c === '`') {
        let n = 1;
        while (src[i + n] === '`') n++;
        let j = i + n;
        let end = -1;
        while ((j = src.indexOf('`', j)) >= 0) {
          let r = 1;
          while (src[j + r] === '`') r++;
          if (r === n) { end = j; break; }
          j += r;
        }
        if (end < 0) { buf += '`'.repeat(n); i += n; continue; }
        let code = src.slice(i + n, end).replace(/\n/g, ' ');
        if (code.length > 2 && code[0] === ' ' && code[code.length - 1] === ' ' && code.trim()) code = code.slice(1, -1);
        flush();
        nodes.push(el('code', [txt(code)]));
        i = end + n;
        continue;
      }
      if (c === '*' || c === '_') {
        let n = 1;
        while (src[i + n] === c) n++;
        const before = src[i - 1];
        const after = src[i + n];
        const left = !isSpace(after) && (!isPunct(after) || isSpace(before) || isPunct(before));
        const right = !isSpace(before) && (!isPunct(before) || isSpace(after) || isPunct(after));
        const open = c === '*' ? left : left && (!right || isPunct(before));
        const shut = c === '*' ? right : right && (!left || isPunct(after));
        flush();
        nodes.push({ delim: c, count: n, orig: n, open, close: shut });
        delims++;
        i += n;
        continue;
      }
      if (links && (c === '[' || (c === '!' && src[i + 1] === '['))) {
        const r = parseLink(src, c === '!' ? i + 1 : i);
        if (r) {
          if (c === '!' && r.node.tag === undefined) r.node.text = '!' + r.node.text;
          flush(); nodes.push(r.node); i = r.end; continue;
        }
      }
      if (links && c === '<') {
        const m = /^<([a-z][a-z0-9+.-]{1,31}:[^\s<>]*)>/i.exec(src.slice(i, i + 2048));
        const href = m && safeHref(m[1]);
        if (href) { flush(); nodes.push(linkNode(href, [txt(m[1])])); i += m[0].length; continue; }
      }
      if (links && (c === 'h' || c === 'H') && !/[\p{L}\p{N}]/u.test(src[i - 1] || '')) {
        const r = bareURL(src, i);
        if (r) { flush(); nodes.push(r.node); i = r.end; continue; }
      }
      buf += c;
      i++;
    }
    flush();
    if (delims && delims <= MAX_DELIMS) emphasis(nodes);
    return mergeText(nodes.map((n) => (n.delim ? txt(n.delim.repeat(n.count)) : n)));
  }

  // CommonMark's "process emphasis": each closer takes the nearest opener of
  // the same character; both give up 2 characters (strong) if they can, else 1.
  function emphasis(nodes) {
    const bottom = new Map(); // no opener below this node for closers of that kind
    for (let ci = 0; ci < nodes.length; ci++) {
      const closer = nodes[ci];
      if (!closer.delim || !closer.close || closer.count === 0) continue;
      const kind = closer.delim + (closer.open ? 1 : 0) + (closer.orig % 3);
      const stop = bottom.get(kind);
      let oi = -1;
      for (let k = ci - 1; k >= 0 && nodes[k] !== stop; k--) {
        const o = nodes[k];
        if (o.delim !== closer.delim || !o.open || o.count === 0) continue;
        // The "rule of 3": **a*b***-style runs that could both open and close.
        if ((o.close || closer.open) && (o.orig + closer.orig) % 3 === 0 && !(o.orig % 3 === 0 && closer.orig % 3 === 0)) continue;
        oi = k;
        break;
      }
      if (oi < 0) {
        bottom.set(kind, ci > 0 ? nodes[ci - 1] : undefined);
        continue;
      }
      const opener = nodes[oi];
      const use = opener.count >= 2 && closer.count >= 2 ? 2 : 1;
      opener.count -= use;
      closer.count -= use;
      const inner = nodes.slice(oi + 1, ci).map((n) => (n.delim ? txt(n.delim.repeat(n.count)) : n));
      nodes.splice(oi + 1, ci - oi - 1, el(use === 2 ? 'strong' : 'em', mergeText(inner)));
      let at = oi + 2; // the closer
      if (opener.count === 0) { nodes.splice(oi, 1); at--; }
      if (closer.count === 0) { nodes.splice(at, 1); ci = at - 1; } else ci = at - 1; // look at the closer again
    }
  }

  function mergeText(nodes) {
    const out = [];
    for (const n of nodes) {
      if (n.tag === undefined && n.text === '') continue;
      const last = out[out.length - 1];
      if (n.tag === undefined && last && last.tag === undefined) last.text += n.text;
      else out.push(n);
    }
    return out;
  }

  // Trees deeper than MAX_TREE_DEPTH (pathological nesting) become text, so
  // neither the view's recursion nor the browser's layout can be made to choke.
  function textOf(n) {
    let s = '';
    const stack = [n];
    while (stack.length) {
      const x = stack.pop();
      if (x.tag === undefined) s += x.text;
      else for (let k = (x.children || []).length - 1; k >= 0; k--) stack.push(x.children[k]);
    }
    return s;
  }
  function limitDepth(nodes, d) {
    return nodes.map((n) => {
      if (n.tag === undefined) return n;
      if (d >= MAX_TREE_DEPTH) return txt(textOf(n));
      return Object.assign({}, n, { children: limitDepth(n.children, d + 1) });
    });
  }

  // render turns Markdown source into the node tree (an array of blocks).
  function render(src) {
    const lines = String(src ?? '').replace(/\r\n?/g, '\n').split('\n')
      .map((l) => l.replace(/^\t+/, (t) => '    '.repeat(t.length)));
    return limitDepth(parseBlocks(lines, 0), 0);
  }

  // plainText is what a screen reader should hear: the rendered text, one
  // line per block, without the Markdown punctuation.
  function plainText(src) {
    return render(src).map(textOf).join('\n');
  }

  return { render, safeHref, textOf, plainText };
})();

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
      resetRequested: false,
      busyPolicy: '',      // reject | queue | interrupt: connected.busy_policy, or learned from a queued busy reply
      pending: [],         // {id, content, state: waiting|held|sent|queued|failed, note, sends, rev}
      replay: null,        // {info: connected data, events: []} between connected and synced
      lastFrameKind: null, // kind of the last frame we sent ('message' | 'command')
      note: null,          // {kind: 'busy'|'error'|'info', text, serial} shown by the composer
      noteSerial: 0,
      outbox: [],          // frames for the shell to send (drained after each dispatch)
      announce: [],        // texts for the screen-reader live region (drained by the view)

      // History (scroll-back, search, jump). The live view above is a "view":
      // items + byKey + firstSeq + older. It holds every persisted event with
      // seq ≥ firstSeq, so an older page is deduplicated by seq < firstSeq.
      firstSeq: null,      // null: nothing shown yet
      epoch: 1,            // bumps whenever the live view is cleared: answers for the old one are dropped
      epochs: 1,           // counter behind every view's epoch
      older: idleLoad(),   // the live view's scroll-back: {loading, error, acc, start}
      density: 0.05,       // persisted events per seq number (deltas take seqs too), sizes the next page
      archive: null,       // a detached window of older history after a far jump (see newArchive)
      focus: null,         // {seq, serial, moveFocus} | {bottom: true, serial}: the view scrolls there once
      focusSerial: 0,
      jumping: null,       // {seq, serial} while a jump waits for its page
      search: { open: false, query: '', status: 'idle', hits: [], mode: 'and', broad: false, error: '', serial: 0, forQuery: '' },
      requests: [],        // HTTP requests for the shell (drained after each dispatch, like outbox)
      reqSerial: 0,
    };
  }

  const idleLoad = () => ({ loading: false, error: '', acc: null, start: 0 });

  const isBusy = (s) => s.openTurns.length > 0;

  // ── helpers ──
  // newItem adds an item to view v (the live state itself, an archive, or a
  // page being built); keys come from s so they never collide across views.
  function newItem(s, v, kind, key, fields) {
    const it = Object.assign({ kind, key: key || kind + ':' + s.nextKey++, rev: 1 }, fields);
    v.items.push(it);
    v.byKey.set(it.key, it);
    return it;
  }
  const touch = (it) => { it.rev++; return it; };

  function clearView(s) {
    s.items = [];
    s.byKey = new Map();
    s.firstSeq = null;
    s.epoch = ++s.epochs;
    s.older = idleLoad();
  }

  function setNote(s, kind, text) {
    s.note = { kind, text, serial: ++s.noteSerial };
  }

  function assistantBubble(s, v, ev) {
    const key = 'a:' + (ev.turn || 'none:' + s.nextKey++);
    return v.byKey.get(key) ||
      newItem(s, v, 'assistant', key, { turn: ev.turn, ts: ev.ts, text: '', streaming: false,
        final: false, partial: false, ended: false });
  }

  function closeTurn(s, turn) {
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

  function channelLabel(d) {
    const ch = (d && d.channel) || 'unknown';
    return d && d.from ? ch + ' · ' + d.from : ch;
  }

  // The badge style: the built-in channels have their own; any other name a
  // webhook caller chose ("cron", "ci") is "custom".
  function channelKind(ch) {
    return ['web', 'console', 'email', 'webhook'].includes(ch) ? ch : 'custom';
  }

  function turnEndText(d) {
    const secs = typeof d.duration_ms === 'number' && d.duration_ms >= 100 ? ' after ' + (d.duration_ms / 1000).toFixed(1) + ' s' : '';
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

  // ── history events (they may carry seq) ──

  // addItem renders one event into view v: creates or updates its item and
  // returns it (or null). It has no other effect, so the same code builds the
  // live view and pages of older history (historic: never streaming, a tool
  // without a result is not "running"), and both look alike.
  function addItem(s, v, ev, historic) {
    const d = ev.data || {};
    const seq = typeof ev.seq === 'number' ? ev.seq : undefined;
    switch (ev.type) {
      case 'user':
        return newItem(s, v, 'user', seq ? 'u:' + seq : null, {
          seq, turn: ev.turn, ts: ev.ts, channel: d.channel, channelKind: channelKind(d.channel), from: d.from || '',
          label: channelLabel(d), content: String(d.content ?? ''),
        });
      case 'delta': {
        if (historic) return null;
        const b = assistantBubble(s, v, ev);
        if (b.final || b.ended) return null; // a late or repeated chunk; the final text is in
        b.text += String(d.text ?? '');
        b.streaming = true;
        return touch(b);
      }
      case 'tool_call': {
        const key = 't:' + ev.turn + ':' + d.id;
        const t = v.byKey.get(key) || newItem(s, v, 'tool', key, { seq, turn: ev.turn, ts: ev.ts, output: null, error: '', historic });
        Object.assign(t, { name: String(d.name ?? 'tool'), args: d.args });
        return touch(t);
      }
      case 'tool_result': {
        const key = 't:' + ev.turn + ':' + d.id;
        const t = v.byKey.get(key) || newItem(s, v, 'tool', key, { seq, turn: ev.turn, ts: ev.ts, name: String(d.name ?? 'tool'), args: null, historic });
        t.output = String(d.output ?? '');
        t.error = String(d.error ?? '');
        return touch(t);
      }
      case 'assistant': {
        const b = assistantBubble(s, v, ev);
        Object.assign(b, { seq, text: String(d.content ?? ''), final: true, streaming: false,
          partial: !!d.partial, ts: ev.ts });
        return touch(b);
      }
      case 'turn_end': {
        const b = v.byKey.get('a:' + ev.turn);
        if (b) { b.streaming = false; b.ended = true; touch(b); }
        // Tool calls of an ended turn that never got a result are not running any more.
        for (let i = v.items.length - 1; i >= 0 && i >= v.items.length - 200; i--) {
          const t = v.items[i];
          if (t.kind === 'tool' && t.turn === ev.turn && t.output === null && !t.ended) { t.ended = true; touch(t); }
        }
        if (d.status && d.status !== 'completed') {
          return newItem(s, v, 'turn_end', 'e:' + ev.turn + ':' + (seq || s.nextKey++), { seq, turn: ev.turn, ts: ev.ts, status: d.status, text: turnEndText(d) });
        }
        return null;
      }
      case 'approval_request': {
        // A tool call waits for a yes or no; any client may answer.
        const key = 'ap:' + d.id;
        const a = v.byKey.get(key) || newItem(s, v, 'approval', key, { seq, turn: ev.turn, ts: ev.ts, decision: '', by: '', sent: '' });
        Object.assign(a, { id: String(d.id ?? ''), tool: String(d.tool ?? 'tool'), server: String(d.server ?? ''), args: d.args });
        return touch(a);
      }
      case 'approval_result': {
        const a = v.byKey.get('ap:' + d.id);
        if (!a) return null; // its request is in an older page
        Object.assign(a, { decision: String(d.decision ?? ''), by: String(d.by ?? '') });
        return touch(a);
      }
      case 'notice':
        return newItem(s, v, 'notice', seq ? 'n:' + seq : null, { seq, ts: ev.ts, text: String(d.text ?? '') });
      case 'reset':
        // Live, the view was cleared first and this is its first item; in a
        // page of history it divides what came before the reset from after.
        return newItem(s, v, 'reset', seq ? 'r:' + seq : null, { seq, ts: ev.ts, text: resetText(d) });
      default:
        return null; // status, and unknown types (a newer server must not break us)
    }
  }

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
    if (ev.type === 'reset') {
      clearView(s);
      s.resetRequested = false;
    }
    if (hasSeq(ev) && s.firstSeq === null) s.firstSeq = ev.seq;

    const it = addItem(s, s, ev, false);
    switch (ev.type) {
      case 'user':
        if (ev.turn && !s.openTurns.includes(ev.turn)) s.openTurns.push(ev.turn);
        if (live) s.announce.push(channelLabel(d) + ' message: ' + (d.content ?? ''));
        break;
      case 'status':
        s.status = String(d.text ?? '');
        break;
      case 'assistant':
        if (live) s.announce.push('Assistant: ' + Markdown.plainText(it.text));
        break;
      case 'turn_end':
        if (it && live) s.announce.push(it.text);
        closeTurn(s, ev.turn);
        break;
      case 'notice':
      case 'reset':
        if (live) s.announce.push(it.text);
        break;
    }
    // Someone reading older history is told that the live conversation moved on.
    if (live && s.archive && (ev.type === 'user' || ev.type === 'assistant')) s.archive.unseen++;
  }

  // ── older history: pages, merging, the archive window ──

  // A page's items are built on their own, then merged into a view: an item
  // whose key the view already has (a turn cut by the page boundary: its
  // tool_call in the page, its tool_result shown) gets the missing fields
  // instead of a second copy.
  function buildItems(s, events) {
    const v = { items: [], byKey: new Map() };
    for (const ev of events) addItem(s, v, ev, true);
    return v;
  }

  function mergeInto(v, built, front) {
    const add = [];
    for (const it of built.items) {
      const cur = v.byKey.get(it.key);
      if (!cur) { add.push(it); v.byKey.set(it.key, it); continue; }
      for (const k of Object.keys(it)) {
        if (k !== 'key' && k !== 'kind' && k !== 'rev' && (cur[k] === undefined || cur[k] === null || cur[k] === '')) cur[k] = it[k];
      }
      touch(cur);
    }
    v.items = front ? add.concat(v.items) : v.items.concat(add);
    return add.length;
  }

  const hasSeq = (e) => e && typeof e.seq === 'number' && e.seq > 0;
  const PERSISTED = new Set(['user', 'assistant', 'tool_call', 'tool_result', 'turn_end', 'notice', 'reset', 'approval_request', 'approval_result']);
  const bySeq = (a, b) => a.seq - b.seq;

  // prependEvents adds a page covering [from, v.firstSeq-1] above view v.
  function prependEvents(s, v, events, from) {
    const fresh = events.filter((e) => hasSeq(e) && (v.firstSeq === null || e.seq < v.firstSeq)).sort(bySeq);
    const n = mergeInto(v, buildItems(s, fresh), true);
    v.firstSeq = v.firstSeq === null ? from : Math.min(v.firstSeq, from);
    return n;
  }

  // The page size adapts: a window of seq numbers expected to hold about
  // PAGE_EVENTS persisted events (a streamed reply spends a seq per delta).
  const PAGE_EVENTS = 120;
  const RANGE_LIMIT = 1000; // the server's cap for one /api/history/range answer
  const pageWindow = (s) => Math.max(100, Math.min(20000, Math.round(PAGE_EVENTS / s.density)));
  function learnDensity(s, count, span) {
    if (span >= 20) s.density = Math.max(0.0005, Math.min(1, Math.max(count, 1) / span));
  }

  function request(s, req) {
    req.id = ++s.reqSerial;
    s.requests.push(req);
    return req;
  }

  // The view shown: the archive while one is open, else the live view.
  const shown = (s) => s.archive || s;
  const atStart = (v) => v.firstSeq !== null && v.firstSeq <= 1;
  const canLoadOlder = (v) => !!v && v.firstSeq !== null && v.firstSeq > 1 && !v.older.loading;

  function loadOlder(s) {
    const v = shown(s);
    if (!canLoadOlder(v)) return;
    const to = v.firstSeq - 1;
    const from = Math.max(1, to - pageWindow(s) + 1);
    v.older = { loading: true, error: '', acc: [], start: from };
    request(s, { kind: 'older', where: v === s ? 'live' : 'archive', epoch: v.epoch, from, to, limit: RANGE_LIMIT });
  }

  function loadNewer(s) {
    const ar = s.archive;
    if (!ar || ar.atEnd || ar.newer.loading) return;
    const from = ar.lastSeq + 1;
    const to = s.firstSeq !== null ? s.firstSeq - 1 : null;
    if (to !== null && from > to) { join(s); return; }
    ar.newer = { loading: true, error: '', acc: null, start: from };
    request(s, { kind: 'newer', where: 'archive', epoch: ar.epoch, liveEpoch: s.epoch, from, to, limit: 300 });
  }

  function newArchive(s, events, from, lastSeq) {
    const ar = buildItems(s, events.filter(hasSeq).sort(bySeq));
    return Object.assign(ar, { firstSeq: from, lastSeq, epoch: ++s.epochs, older: idleLoad(), newer: idleLoad(), atEnd: false, unseen: 0 });
  }

  // join: the archive reached the live view; they become one.
  function join(s) {
    const ar = s.archive;
    s.archive = null;
    mergeInto(s, ar, true);
    s.firstSeq = s.firstSeq === null ? ar.firstSeq : Math.min(s.firstSeq, ar.firstSeq);
  }

  function setFocus(s, f) {
    s.focus = Object.assign({ serial: ++s.focusSerial }, f);
  }

  // jump shows the event seq (a search hit): at once when a view holds it,
  // else after one page. A page from a little before it up to the live view
  // that fits in one answer is prepended to the live view (one conversation,
  // scroll down to the present); a larger gap opens the archive window.
  function jump(s, seq, moveFocus) {
    s.jumping = null;
    if (s.firstSeq !== null && seq >= s.firstSeq) {
      s.archive = null;
      setFocus(s, { seq, moveFocus });
      return;
    }
    const ar = s.archive;
    if (ar && seq >= ar.firstSeq && seq <= ar.lastSeq) {
      setFocus(s, { seq, moveFocus });
      return;
    }
    const before = Math.max(40, Math.min(900, Math.round(30 / s.density)));
    const from = Math.max(1, seq - before);
    const to = s.firstSeq !== null ? s.firstSeq - 1 : null;
    s.jumping = { seq, serial: ++s.focusSerial, moveFocus };
    request(s, { kind: 'jump', seq, serial: s.jumping.serial, epoch: s.epoch, from, to, limit: RANGE_LIMIT });
  }

  function viewFor(s, req) {
    if (req.where === 'live') return req.epoch === s.epoch ? s : null;
    return s.archive && s.archive.epoch === req.epoch ? s.archive : null;
  }

  function historyLoaded(s, req, events, truncated) {
    events = Array.isArray(events) ? events : [];
    const last = events.length ? events[events.length - 1] : null;
    if (req.kind === 'older') {
      const v = viewFor(s, req);
      if (!v || !v.older.loading) return; // the view was cleared or replaced meanwhile
      v.older.acc.push(...events);
      if (truncated && last && hasSeq(last) && last.seq < req.to) {
        // More than one answer's worth: fetch the rest up to the view, so no gap opens.
        request(s, Object.assign({}, req, { from: last.seq + 1 }));
        return;
      }
      const all = v.older.acc;
      const from = v.older.start;
      v.older = idleLoad();
      const n = prependEvents(s, v, all, from);
      learnDensity(s, all.length, req.to - from + 1);
      if (n > 0) s.announce.push('Loaded ' + n + ' earlier item' + (n === 1 ? '' : 's') + '.');
      if (atStart(v)) s.announce.push('Beginning of the conversation.');
      return;
    }
    if (req.kind === 'newer') {
      const ar = viewFor(s, req);
      if (!ar || !ar.newer.loading) return;
      ar.newer = idleLoad();
      const fresh = events.filter((e) => hasSeq(e) && e.seq > ar.lastSeq).sort(bySeq);
      mergeInto(ar, buildItems(s, fresh), false);
      if (truncated && last) { ar.lastSeq = Math.max(ar.lastSeq, last.seq); return; }
      if (req.to === null) { ar.lastSeq = last ? Math.max(ar.lastSeq, last.seq) : ar.lastSeq; ar.atEnd = true; return; }
      ar.lastSeq = req.to;
      // The live view was cleared meanwhile (a reset): its top moved; ask again.
      if (req.liveEpoch !== s.epoch || s.firstSeq === null) { loadNewer(s); return; }
      join(s);
      return;
    }
    if (req.kind === 'jump') {
      if (!s.jumping || s.jumping.serial !== req.serial) return; // a newer jump replaced it
      const { moveFocus } = s.jumping;
      s.jumping = null;
      if (req.epoch !== s.epoch) { jump(s, req.seq, moveFocus); return; } // the live view changed: plan again
      if (!truncated && s.firstSeq !== null && req.to !== null) {
        prependEvents(s, s, events, req.from);
        s.archive = null;
      } else {
        const lastSeq = truncated && last ? last.seq : req.to !== null ? req.to : last ? last.seq : req.from;
        s.archive = newArchive(s, events, req.from, lastSeq);
        if (!truncated && req.to === null) s.archive.atEnd = true;
      }
      setFocus(s, { seq: req.seq, moveFocus });
    }
  }

  function historyFailed(s, req, error) {
    const text = String(error || 'failed');
    if (req.kind === 'older' || req.kind === 'newer') {
      const v = viewFor(s, req);
      if (!v) return;
      if (req.kind === 'older') v.older = Object.assign(idleLoad(), { error: text });
      else v.newer = Object.assign(idleLoad(), { error: text });
      s.announce.push('Could not load ' + (req.kind === 'older' ? 'earlier' : 'newer') + ' messages: ' + text);
    } else if (req.kind === 'jump') {
      if (!s.jumping || s.jumping.serial !== req.serial) return;
      s.jumping = null;
      setNote(s, 'error', 'Could not open that message: ' + text);
    } else if (req.kind === 'search') {
      if (req.serial !== s.search.serial) return;
      Object.assign(s.search, { status: 'error', error: text, hits: [] });
    }
  }

  function search(s, q) {
    const sr = s.search;
    sr.query = String(q ?? '').trim();
    if (!sr.query) {
      Object.assign(sr, { status: 'idle', hits: [], error: '', forQuery: '' });
      sr.serial++; // drops an answer still on its way
      return;
    }
    Object.assign(sr, { status: 'loading', error: '' });
    request(s, { kind: 'search', q: sr.query, serial: ++sr.serial, limit: 50 });
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
    if (['reject', 'queue', 'interrupt'].includes(info.busy_policy)) s.busyPolicy = info.busy_policy;

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
    const p = (d.client_msg_id && s.pending.find((x) => x.id === d.client_msg_id)) ||
      (!d.queued && s.pending.find((x) => x.state === 'queued')) || oldestInFlight(s);
    if (d.queued && !s.busyPolicy) s.busyPolicy = 'queue';
    const text = String(d.message || (d.queued ? 'Queued: it will run after the current reply.' : 'The assistant is busy; try again when it is done.'));
    if (p) {
      p.state = d.queued ? 'queued' : 'failed';
      p.note = text;
      p.rev++;
    }
    setNote(s, 'busy', text);
  }

  function onError(s, d) {
    if (s.lastFrameKind === 'command') s.resetRequested = false;
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
        s.resetRequested = false;
        for (const p of s.pending) if (p.state === 'sent' || p.state === 'held') { p.state = 'waiting'; p.rev++; }
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

      // ── history ──
      case 'load-older':      // scrolled to the top, or "Load earlier messages"
        loadOlder(s);
        break;
      case 'load-newer':      // the archive: scrolled to its bottom, or "Load newer messages"
        loadNewer(s);
        break;
      case 'history-loaded':  // {req, events, truncated}: an answer of /api/history/range
        historyLoaded(s, a.req, a.events, !!a.truncated);
        break;
      case 'history-failed':  // {req, error}: any history request failed
        historyFailed(s, a.req, a.error);
        break;
      case 'jump':            // {seq, moveFocus}: show that event (a search hit)
        if (typeof a.seq === 'number' && a.seq > 0) jump(s, a.seq, !!a.moveFocus);
        break;
      case 'back-to-live':    // leave the archive, show the present
        s.archive = null;
        s.jumping = null;
        setFocus(s, { bottom: true });
        break;
      case 'search-open':
        s.search.open = true;
        break;
      case 'search-close':
        s.search.open = false;
        s.jumping = null;
        break;
      case 'search':          // {q}: run a search (the shell debounces typing)
        search(s, a.q);
        break;
      case 'search-results':  // {req, hits, mode}: an answer of /api/history/search
        if (a.req && a.req.serial === s.search.serial) {
          Object.assign(s.search, { status: 'done', hits: Array.isArray(a.hits) ? a.hits : [], mode: a.mode === 'or' ? 'or' : 'and',
            broad: a.broad === true, error: '', forQuery: a.req.q });
        }
        break;
      default:
        break;
    }
    return s;
  }

  // What the composer offers now: whether Send works and, if it does not or
  // does something special, the sentence that says why.
  function composer(s) {
    if (s.phase !== 'live') {
      return { canSend: true, kind: 'offline', reason: 'Not connected: what you send now is kept and delivered when the connection is back.' };
    }
    if (!isBusy(s)) return { canSend: true, kind: '', reason: '' };
    if (s.cancelRequested) return { canSend: false, kind: 'busy', reason: 'Cancelling the reply…' };
    if (s.busyPolicy === 'queue') {
      return { canSend: true, kind: 'queue', reason: 'The assistant is replying. A message sent now waits in the queue and runs next (a newer one replaces it).' };
    }
    if (s.busyPolicy === 'interrupt') {
      return { canSend: true, kind: 'interrupt', reason: 'The assistant is replying. Sending now stops that reply and starts on yours.' };
    }
    return { canSend: false, kind: 'busy', reason: 'The assistant is replying. You can send when it is done, or cancel it.' };
  }

  // `since` for the next connection; omitted while we have seen nothing.
  const sinceParam = (s) => (s.lastSeq > 0 ? s.lastSeq : null);

  // What the top of the shown view offers: 'none' (nothing shown), 'start'
  // (seq 1 is shown), 'loading', 'error' or 'more'.
  function olderState(s) {
    const v = shown(s);
    if (v.firstSeq === null) return 'none';
    if (v.older.loading) return 'loading';
    if (v.older.error) return 'error';
    return atStart(v) ? 'start' : 'more';
  }

  // The item that shows event seq: the one made by it, else (an event that
  // has no item of its own) the next one after it.
  function itemForSeq(items, seq) {
    let best = null;
    for (const it of items) {
      if (typeof it.seq !== 'number') continue;
      if (it.seq === seq) return it;
      if (it.seq > seq && (!best || it.seq < best.seq)) best = it;
    }
    return best;
  }

  // findMatches returns the [start, end) ranges of query in text, compared as
  // the server's search does: case-insensitively, any whitespace matching any
  // (snippets have their line breaks flattened to spaces).
  function findMatches(text, query) {
    const fold = (str) => Array.from(String(str ?? ''), (c) => {
      if (/\s/.test(c)) return ' ';
      const l = c.toLowerCase();
      return l.length === c.length ? l : c;
    }).join('');
    const t = fold(text);
    const q = fold(query).trim();
    const out = [];
    if (!q || t.length !== String(text ?? '').length) return out; // folding must keep offsets
    for (let i = t.indexOf(q); i >= 0; i = t.indexOf(q, i + q.length)) out.push([i, i + q.length]);
    return out;
  }

  // highlight splits text into [{text, mark}] runs for a snippet with the
  // query marked; the view makes text nodes and <mark>s of them. query may
  // be a list of terms (the words the server marked in a hit): each is marked.
  function highlight(text, query) {
    text = String(text ?? '');
    const terms = Array.isArray(query) ? query : [query];
    const ranges = terms.flatMap((q) => findMatches(text, q)).sort((x, y) => x[0] - y[0] || y[1] - x[1]);
    const out = [];
    let at = 0;
    for (const [a, b] of ranges) {
      if (a < at) continue; // inside the previous mark
      if (a > at) out.push({ text: text.slice(at, a), mark: false });
      out.push({ text: text.slice(a, b), mark: true });
      at = b;
    }
    if (at < text.length || !out.length) out.push({ text: text.slice(at), mark: false });
    return out;
  }

  // marked splits a search hit's snippet into [{text, mark}] runs: the
  // server marks each matched word «like this» (stemmed matches included,
  // which the query's own letters would miss).
  function marked(snippet) {
    const out = [];
    for (const [i, part] of String(snippet ?? '').split(/[«»]/).entries()) {
      if (part) out.push({ text: part, mark: i % 2 === 1 });
    }
    return out.length ? out : [{ text: '', mark: false }];
  }

  // markedTerms lists the distinct words a snippet marks, to find them again
  // in the full message.
  function markedTerms(snippet) {
    return [...new Set(marked(snippet).filter((p) => p.mark).map((p) => p.text.toLowerCase()))];
  }

  // withDays puts a day divider before the first item of each day, given
  // dayOf(ts) → a key for its local day, or null. The first item gets none when it is of
  // today (the usual case: no clutter until history reaches another day).
  function withDays(items, dayOf, todayKey) {
    const out = [];
    const used = new Set();
    let prev = null;
    for (const it of items) {
      const d = it.ts ? dayOf(it.ts) : null;
      if (d !== null && d !== prev && !(prev === null && d === todayKey) && !used.has(d)) {
        // rev is today's key: the label ("Today", "Yesterday") is redrawn after midnight.
        out.push({ kind: 'day', key: 'd:' + d, ts: it.ts, rev: todayKey });
        used.add(d);
      }
      if (d !== null) prev = d;
      out.push(it);
    }
    return out;
  }

  return { initialState, reduce, isBusy, sinceParam, channelLabel, channelKind, resetText, turnEndText, composer,
    olderState, itemForSeq, findMatches, highlight, marked, markedTerms, withDays, shown, pageWindow,
    markdown: Markdown.render, safeHref: Markdown.safeHref, textOf: Markdown.textOf, MAX_SENDS };
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
    drainRequests();
    updateTitle(); // synchronously: background tabs get no animation frames, and the title matters most there
    scheduleRender();
  }

  // ── history over HTTP: the core asks (state.requests), we fetch and report back ──
  function drainRequests() {
    while (state.requests.length) runRequest(state.requests.shift());
  }

  function runRequest(req) {
    const failed = (e) => dispatch({ type: 'history-failed', req, error: e.message });
    if (req.kind === 'search') {
      apiGet('/api/history/search', { q: req.q, limit: req.limit })
        .then((b) => dispatch({ type: 'search-results', req, hits: b.hits, mode: b.mode, broad: b.broad }), failed);
      return;
    }
    apiGet('/api/history/range', { from: req.from, to: req.to, limit: req.limit })
      .then((b) => dispatch({ type: 'history-loaded', req, events: b.events, truncated: b.truncated }), failed);
  }

  // apiGet fetches a JSON endpoint with the token; errors become one sentence.
  async function apiGet(path, params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== '') q.set(k, String(v));
    const token = getToken();
    let res;
    try {
      res = await fetch(path + '?' + q, { headers: token ? { Authorization: 'Bearer ' + token } : {}, cache: 'no-store',
        signal: AbortSignal.timeout ? AbortSignal.timeout(30000) : undefined });
    } catch {
      throw new Error(navigator.onLine ? 'the server did not answer' : 'no network');
    }
    if (res.status === 401) {
      askForToken();
      throw new Error('an access token is needed');
    }
    let body = null;
    try { body = await res.json(); } catch { /* not JSON */ }
    if (!res.ok) throw new Error((body && body.message) || 'the server answered ' + res.status);
    return body || {};
  }

  // The server refused our token on the API: the same prompt as for /ws.
  function askForToken() {
    if (net.authNeeded) return;
    const had = !!getToken();
    net.authNeeded = true;
    net.tokenRejected = had;
    if (had) setToken('');
    showTokenForm();
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
    cancel: $('cancel'), note: $('composer-note'), reason: $('composer-reason'),
    auth: $('auth'), authForm: $('auth-form'), authInput: $('auth-token'), authError: $('auth-error'),
    reset: $('reset'), resetDialog: $('reset-dialog'), resetConfirm: $('reset-confirm'), resetKeep: $('reset-keep'),
    older: $('older'), olderText: $('older-text'), olderLoad: $('older-load'),
    newer: $('newer'), newerText: $('newer-text'), newerLoad: $('newer-load'),
    archiveBar: $('archive-bar'), archiveText: $('archive-text'), archiveBack: $('archive-back'),
    searchOpen: $('search-open'), search: $('search'), searchInput: $('search-input'), searchClose: $('search-close'),
    searchPanel: $('search-panel'), searchStatus: $('search-status'), searchRetry: $('search-retry'), searchResults: $('search-results'),
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

  // Days in local time: a key to compare, and the words for a divider or a search hit.
  const dayKeyOf = (d) => d.getFullYear() + '-' + (d.getMonth() + 1) + '-' + d.getDate();
  const dayKeys = new Map(); // ts → day key: withDays asks for every item on every render
  function dayKey(ts) {
    let k = dayKeys.get(ts);
    if (k === undefined) {
      const d = timeOf(ts);
      k = d ? dayKeyOf(d) : null;
      if (dayKeys.size > 50000) dayKeys.clear();
      dayKeys.set(ts, k);
    }
    return k;
  }
  function relDay(d, short) {
    const now = new Date();
    if (dayKeyOf(d) === dayKeyOf(now)) return 'Today';
    const y = new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1);
    if (dayKeyOf(d) === dayKeyOf(y)) return 'Yesterday';
    const opts = short ? { weekday: 'short', day: 'numeric', month: 'short' } : { weekday: 'long', day: 'numeric', month: 'long' };
    if (d.getFullYear() !== now.getFullYear()) opts.year = 'numeric';
    return d.toLocaleDateString([], opts);
  }
  function whenLabel(ts) {
    const d = timeOf(ts);
    return d ? relDay(d, true) + ', ' + d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : '';
  }

  function clip(s, n) {
    return s.length > n ? s.slice(0, n) + '\n… (' + (s.length - n) + ' more characters)' : s;
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
        meta.append(badge, timeEl(it.ts));
        b.append(meta, h('div', 'text', it.content)); // the user's words as typed: plain text
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
        b.append(meta, h('div', 'md'), h('div', 'flag'));
        li.append(b);
        return li;
      },
      update(li, it) {
        li.classList.toggle('streaming', it.streaming);
        li.classList.toggle('partial', it.partial);
        // aria-busy keeps screen readers from reading every streamed chunk.
        li.setAttribute('aria-busy', it.streaming ? 'true' : 'false');
        renderMarkdown(li.querySelector('.md'), it.text, it.streaming);
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
        const over = it.ended || it.historic; // its turn is over: a missing result will not come
        const st = it.error ? 'failed' : it.output === null ? (over ? 'no result' : 'running…') : 'done';
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
        li.querySelector('.tool-args').textContent = clip(String(args ?? ''), 4000);
        const decided = !!it.decision;
        li.querySelector('.approval-state').textContent = decided
          ? (it.decision === 'approve' ? 'approved' : 'denied') + ' by ' + it.by
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
        if (d) li.title = 'Reset on ' + d.toLocaleString();
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

  const PENDING_LABEL = {
    waiting: 'waiting for the connection…',
    held: 'waiting for the assistant to finish…',
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
      meta.append(h('span', 'badge ch-web', 'web'), h('span', 'pending-state'));
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

  // The item nearest the top of the viewport, and where it is: after the
  // list changes above it (an older page prepended, a day divider added) it
  // is put back there, so reading is never yanked. Binary search: items are
  // in order, and there may be thousands.
  function topAnchor() {
    const kids = el.log.children;
    if (!kids.length) return null;
    const top = el.main.getBoundingClientRect().top;
    let lo = 0;
    let hi = kids.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (kids[mid].getBoundingClientRect().bottom <= top) lo = mid + 1; else hi = mid;
    }
    const key = keyOfNode.get(kids[lo]);
    return key ? { key, top: kids[lo].getBoundingClientRect().top } : null;
  }

  function bottomSig(list) {
    const last = list[list.length - 1];
    return (last ? last.key + ':' + last.rev : '') + '|' + state.pending.length;
  }

  let lastView = null;
  let lastEpoch = 0;
  let lastBottom = '';
  let shownFocusSerial = 0;
  let lastScrollTop = 0;

  function render() {
    const v = Core.shown(state);
    const inArchive = !!state.archive;
    const switched = v !== lastView;
    lastView = v;
    if (switched || state.epoch !== lastEpoch) {
      // Another view (a reset cleared it, a jump opened the archive): the
      // reader has not scrolled in it yet.
      wantOlder = wantNewer = false;
      lastEpoch = state.epoch;
    }
    const focus = state.focus && state.focus.serial !== shownFocusSerial ? state.focus : null;
    // Follow the conversation when at its bottom; in the archive, or while a
    // jump or a join (the archive becoming live) places the view, do not.
    const stick = !inArchive && !switched && !focus && nearBottom();
    const anchor = stick || focus ? null : topAnchor();

    // header: connection indicator (text, not colour alone)
    const [connState, connText] = connectionView();
    el.conn.dataset.state = connState;
    if (el.connText.textContent !== connText) el.connText.textContent = connText;
    el.retry.hidden = !(state.phase === 'down' && !net.authNeeded && connState === 'offline');

    // conversation: the live view or the archive, with day dividers
    const list = Core.withDays(v.items, dayKey, dayKeyOf(new Date()));
    reconcile(el.log, list, itemCache, (it) => views[it.kind] || views.notice);
    reconcile(el.pending, state.pending, pendingCache, () => pendingView);
    el.pending.hidden = inArchive;
    el.empty.hidden = v.items.length > 0 || (!inArchive && state.pending.length > 0);
    el.empty.textContent = state.phase === 'live' ? 'No messages yet.'
      : net.authNeeded ? 'Enter the access token to see the conversation.'
      : connState === 'offline' ? 'Not connected: the conversation appears once the server is reachable.' : 'Connecting…';
    renderEdges(v);
    renderArchiveBar();
    renderSearch();

    // status line: only while a turn runs
    const busy = Core.isBusy(state);
    el.status.hidden = !busy;
    const statusText = state.cancelRequested ? 'cancelling…' : state.status || 'working…';
    if (busy && el.statusText.textContent !== statusText) el.statusText.textContent = statusText;

    // composer: Send says why it is off (or what it will do) in words
    el.cancel.hidden = !busy;
    el.cancel.disabled = !busy || state.phase !== 'live' || state.cancelRequested;
    el.cancel.textContent = state.cancelRequested ? 'Cancelling…' : 'Cancel';
    const comp = net.authNeeded ? { canSend: true, kind: 'offline', reason: 'Enter the access token above to connect; what you send meanwhile is kept.' }
      : Core.composer(state);
    el.send.disabled = !comp.canSend || el.input.value.trim() === '';
    el.send.textContent = comp.kind === 'queue' ? 'Queue' : 'Send';
    el.reason.hidden = !comp.reason;
    el.reason.dataset.kind = comp.kind;
    if (el.reason.textContent !== comp.reason) el.reason.textContent = comp.reason;
    el.reset.disabled = state.phase !== 'live' || state.resetRequested;

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

    // scrolling: follow the bottom, keep the reading place, or go where asked
    const sig = bottomSig(list);
    if (focus) {
      shownFocusSerial = focus.serial;
      if (focus.bottom) {
        clearHit();
        el.main.scrollTop = el.main.scrollHeight;
      } else {
        showTarget(v, focus);
      }
    } else if (stick) {
      el.main.scrollTop = el.main.scrollHeight;
    } else if (anchor) {
      const rec = itemCache.get(anchor.key);
      if (rec && rec.node.isConnected) {
        const dy = rec.node.getBoundingClientRect().top - anchor.top;
        if (Math.abs(dy) >= 1) el.main.scrollTop += dy;
      }
    }
    if (inArchive || nearBottom()) el.jump.hidden = true;
    else if (sig !== lastBottom && !switched && !focus) el.jump.hidden = false; // something new below
    lastBottom = sig;
    // What we scrolled (or the browser clamped) is not the reader scrolling:
    // only moves from here on say "they want older messages".
    lastScrollTop = el.main.scrollTop;
    autoLoad();
  }

  // The top of the shown view: a button to load older messages (also for
  // keyboards; it keeps focus while it loads), the error with "Try again", or
  // "Beginning of the conversation". In the archive the bottom has the same
  // for newer messages.
  function renderEdges(v) {
    const os = Core.olderState(state);
    el.older.hidden = os === 'none';
    el.older.dataset.state = os;
    const olderText = os === 'start' ? 'Beginning of the conversation'
      : os === 'error' ? 'Could not load earlier messages: ' + v.older.error : '';
    if (el.olderText.textContent !== olderText) el.olderText.textContent = olderText;
    el.olderText.hidden = !olderText;
    if (os === 'start' && document.activeElement === el.olderLoad) el.main.focus({ preventScroll: true });
    el.olderLoad.hidden = os === 'start' || os === 'none';
    el.olderLoad.textContent = os === 'loading' ? 'Loading earlier messages…' : os === 'error' ? 'Try again' : 'Load earlier messages';
    el.olderLoad.setAttribute('aria-disabled', String(os === 'loading'));

    const ar = state.archive;
    const ns = !ar || ar.atEnd ? 'none' : ar.newer.loading ? 'loading' : ar.newer.error ? 'error' : 'more';
    el.newer.hidden = ns === 'none';
    el.newer.dataset.state = ns;
    const newerText = ns === 'error' ? 'Could not load newer messages: ' + ar.newer.error : '';
    if (el.newerText.textContent !== newerText) el.newerText.textContent = newerText;
    el.newerText.hidden = !newerText;
    el.newerLoad.textContent = ns === 'loading' ? 'Loading newer messages…' : ns === 'error' ? 'Try again' : 'Load newer messages';
    el.newerLoad.setAttribute('aria-disabled', String(ns === 'loading'));
  }

  function renderArchiveBar() {
    const ar = state.archive;
    el.archiveBar.hidden = !ar;
    if (!ar) return;
    const text = 'Viewing earlier messages' + (ar.unseen ? ' · ' + ar.unseen + ' new' : '');
    if (el.archiveText.textContent !== text) el.archiveText.textContent = text;
  }

  // ── search ──
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

  // ── scroll-back: load older (or, in the archive, newer) messages when the
  // reader scrolls near an edge. Only the reader's own moves count: a page
  // that merely fits the screen (right after a reset, say) is not filled
  // with old history unasked — the button is there for that.
  const EDGE_MARGIN = 800; // px beyond the viewport: load before the edge shows
  let wantOlder = false;
  let wantNewer = false;
  let nearOlder = false;
  let nearNewer = false;

  function autoLoad() {
    // IntersectionObserver says when an edge comes near; its answer may be a
    // frame old (a page was just prepended), so the geometry is checked too.
    if (wantOlder && nearOlder && Core.olderState(state) === 'more' &&
        el.older.getBoundingClientRect().bottom > el.main.getBoundingClientRect().top - EDGE_MARGIN) {
      dispatch({ type: 'load-older' });
    }
    const ar = state.archive;
    if (wantNewer && nearNewer && ar && !ar.atEnd && !ar.newer.loading && !ar.newer.error &&
        el.newer.getBoundingClientRect().top < el.main.getBoundingClientRect().bottom + EDGE_MARGIN) {
      dispatch({ type: 'load-newer' });
    }
  }

  if ('IntersectionObserver' in window) {
    const io = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (e.target === el.older) nearOlder = e.isIntersecting;
        if (e.target === el.newer) nearNewer = e.isIntersecting;
      }
      autoLoad();
    }, { root: el.main, rootMargin: EDGE_MARGIN + 'px 0px ' + EDGE_MARGIN + 'px 0px' });
    io.observe(el.older);
    io.observe(el.newer);
  } else {
    nearOlder = nearNewer = true; // the geometry check in autoLoad decides
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
    el.authError.textContent = net.tokenRejected ? 'Wrong token: the server refused it. Check it and try again.' : '';
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
    if (!content.trim() || !Core.composer(state).canSend) return; // the reason is on screen
    const id = newMsgID();
    const bytes = new TextEncoder().encode(JSON.stringify({ type: 'message', content, client_msg_id: id })).length;
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
    el.send.disabled = !Core.composer(state).canSend || el.input.value.trim() === '';
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
      else if (p) el.input.value = el.input.value.replace(/\s+$/, '') + '\n' + p.content;
      dispatch({ type: 'discard', id });
      autosize();
      el.input.focus();
    }
  });

  el.main.addEventListener('scroll', () => {
    const t = el.main.scrollTop;
    if (t < lastScrollTop - 1) wantOlder = true;
    else if (t > lastScrollTop + 1) wantNewer = true;
    lastScrollTop = t;
    if (nearBottom()) el.jump.hidden = true;
    autoLoad();
  }, { passive: true });
  // A wheel or keys towards an edge also count when the view cannot scroll.
  el.main.addEventListener('wheel', (e) => {
    if (e.deltaY < 0) wantOlder = true; else if (e.deltaY > 0) wantNewer = true;
    autoLoad();
  }, { passive: true });
  el.main.addEventListener('keydown', (e) => {
    if (['PageUp', 'Home', 'ArrowUp'].includes(e.key)) wantOlder = true;
    if (['PageDown', 'End', 'ArrowDown'].includes(e.key)) wantNewer = true;
  });
  el.jump.addEventListener('click', () => { el.main.scrollTop = el.main.scrollHeight; el.jump.hidden = true; });

  el.olderLoad.addEventListener('click', () => {
    if (el.olderLoad.getAttribute('aria-disabled') === 'true') return;
    wantOlder = true;
    dispatch({ type: 'load-older' });
  });
  el.newerLoad.addEventListener('click', () => {
    if (el.newerLoad.getAttribute('aria-disabled') === 'true') return;
    wantNewer = true;
    dispatch({ type: 'load-newer' });
  });
  el.archiveBack.addEventListener('click', () => {
    dispatch({ type: 'back-to-live' });
    el.input.focus({ preventScroll: true });
  });

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

  const typing = (t) => t instanceof Element && (t.closest('input, textarea, select, [contenteditable=""], [contenteditable="true"]') !== null);
  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.isComposing || el.resetDialog.open) return;
    if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && (e.key === 'k' || e.key === 'K')) {
      e.preventDefault();
      openSearch();
    } else if (e.key === '/' && !e.ctrlKey && !e.metaKey && !e.altKey && !typing(e.target)) {
      e.preventDefault();
      openSearch();
    } else if (e.key === 'Escape' && state.search.open && !el.search.contains(e.target)) {
      closeSearch();
    }
  });

  // Repaint the indicator now and then so "offline" shows up while the backoff waits.
  setInterval(() => { if (state.phase !== 'live') scheduleRender(); }, 1000);

  autosize();
  render();
  connect();
  el.input.focus();
}
