// markdown.js — owns Markdown source → a tree of plain objects. Pure: no DOM,
// no I/O, no state; imported by core.js (screen-reader text), the view (which
// turns the tree into DOM) and web/uitest/markdown.test.mjs.
//
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

export { render, safeHref, textOf, plainText };
