// Tests of the Markdown renderer (web/static/markdown.js): what it renders,
// and that hostile input can never become markup, a handler or a bad link.
import assert from 'node:assert';
import * as Markdown from '../static/markdown.js';

// The tree as compact HTML-ish text, so expectations read like the output.
// Text is escaped, so a "<" that shows up unescaped would be a real element.
const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
function html(nodes) {
  return nodes.map((n) => {
    if (n.tag === undefined) return esc(n.text);
    const attrs = Object.entries(n.attrs || {}).map(([k, v]) => ' ' + k + '="' + esc(v) + '"').join('');
    if (n.tag === 'br' || n.tag === 'hr') return '<' + n.tag + attrs + '>';
    return '<' + n.tag + attrs + '>' + html(n.children || []) + '</' + n.tag + '>';
  }).join('');
}
const md = (src) => html(Markdown.render(src));
const A = (href, text) => '<a href="' + href + '" rel="noopener noreferrer" target="_blank">' + text + '</a>';

const cases = [
  // blocks
  ['paragraphs', 'one\n\ntwo', '<p>one</p><p>two</p>'],
  ['a newline is a line break', 'one\ntwo  \nthree', '<p>one<br>two<br>three</p>'],
  ['headings are h3–h6', '# One\n## Two #\n###### Six', '<h3>One</h3><h4>Two</h4><h6>Six</h6>'],
  ['#hashtag is text', '#hashtag', '<p>#hashtag</p>'],
  ['fenced code with language', '```js\nif (a < b) {}\n  x\n```', '<pre data-lang="js"><code>if (a &lt; b) {}\n  x</code></pre>'],
  ['tilde fence', '~~~\n**no** `md`\n~~~', '<pre><code>**no** `md`</code></pre>'],
  ['unclosed fence runs to the end', 'text\n```py\nprint(1)\n\nmore', '<p>text</p><pre data-lang="py"><code>print(1)\n\nmore</code></pre>'],
  ['shorter fence does not close', '````\n```\n````', '<pre><code>```</code></pre>'],
  ['bullet list (tight)', '- a\n- b', '<ul><li>a</li><li>b</li></ul>'],
  ['list interrupts a paragraph', 'Items:\n* a\n* b', '<p>Items:</p><ul><li>a</li><li>b</li></ul>'],
  ['loose list keeps paragraphs', '- a\n\n- b', '<ul><li><p>a</p></li><li><p>b</p></li></ul>'],
  ['ordered list with start', '3. c\n4. d', '<ol start="3"><li>c</li><li>d</li></ol>'],
  ['nested lists', '1. a\n   - b\n   - c\n2. d', '<ol><li>a<ul><li>b</li><li>c</li></ul></li><li>d</li></ol>'],
  ['nested list indented by two', '1. a\n  - b\n2. c', '<ol><li>a<ul><li>b</li></ul></li><li>c</li></ol>'],
  ['lazy list continuation', '- a\nb', '<ul><li>a<br>b</li></ul>'],
  ['list item with code block', '- run:\n\n  ```\n  make\n  ```', '<ul><li><p>run:</p><pre><code>make</code></pre></li></ul>'],
  ['*emphasis* at line start is not a list', '*a* b', '<p><em>a</em> b</p>'],
  ['blockquote with lazy line', '> quoted\nlazy\n\nafter', '<blockquote><p>quoted<br>lazy</p></blockquote><p>after</p>'],
  ['nested blockquote', '> a\n>> b', '<blockquote><p>a</p><blockquote><p>b</p></blockquote></blockquote>'],
  ['rule', 'a\n\n---\n\nb', '<p>a</p><hr><p>b</p>'],
  ['table (a | in a cell is written \\|, as in GFM)', '| a | b |\n|:--|--:|\n| 1 | `\\|` |\n| 2 |', '<table><thead><tr><th data-align="left">a</th><th data-align="right">b</th></tr></thead>' +
    '<tbody><tr><td data-align="left">1</td><td data-align="right"><code>|</code></td></tr><tr><td data-align="left">2</td><td data-align="right"></td></tr></tbody></table>'],
  ['CRLF and tabs', 'a\r\n\r\n-\tb', '<p>a</p><ul><li>b</li></ul>'],
  ['empty input', '', ''],

  // inline
  ['strong and em', '**b** *i* __b__ _i_', '<p><strong>b</strong> <em>i</em> <strong>b</strong> <em>i</em></p>'],
  ['nested emphasis', '**bold *and italic* bold**', '<p><strong>bold <em>and italic</em> bold</strong></p>'],
  ['triple emphasis', '***both***', '<p><em><strong>both</strong></em></p>'],
  ['em around strong', '*a **b** c*', '<p><em>a <strong>b</strong> c</em></p>'],
  ['unmatched delimiters stay text', '**open *and 2 * 3', '<p>**open *and 2 * 3</p>'],
  ['intraword underscore is text', 'snake_case_name and 2*3*4', '<p>snake_case_name and 2<em>3</em>4</p>'],
  ['code span', 'use `a <b> **c**` here', '<p>use <code>a &lt;b&gt; **c**</code> here</p>'],
  ['double backtick code span', '`` a ` b ``', '<p><code>a ` b</code></p>'],
  ['unclosed backtick', 'a `b', '<p>a `b</p>'],
  ['backslash escapes', '\\*not em\\* \\[x\\](y) \\\\', '<p>*not em* [x](y) \\</p>'],
  ['link', '[the docs](https://example.com/a?b=1&c=2 "Docs")', '<p><a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer" target="_blank" title="Docs">the docs</a></p>'],
  ['link with emphasis and parens', '[**x**](https://e.com/wiki/A_(b))', '<p>' + A('https://e.com/wiki/A_(b)', '<strong>x</strong>') + '</p>'],
  ['mailto link', '[mail](mailto:ana@example.com)', '<p>' + A('mailto:ana@example.com', 'mail') + '</p>'],
  ['angle autolink', '<https://example.com>', '<p>' + A('https://example.com', 'https://example.com') + '</p>'],
  ['bare URL, trailing punctuation outside', 'see https://example.com/x. and (https://e.com/y)', '<p>see ' + A('https://example.com/x', 'https://example.com/x') + '. and (' + A('https://e.com/y', 'https://e.com/y') + ')</p>'],
  ['bare URL keeps underscores', 'https://e.com/a_b_c_ done', '<p>' + A('https://e.com/a_b_c', 'https://e.com/a_b_c') + '_ done</p>'],
  ['bare URL inside emphasis', '*see https://e.com*', '<p><em>see ' + A('https://e.com', 'https://e.com') + '</em></p>'],
  ['image becomes a link', '![a cat](https://e.com/cat.png)', '<p>' + A('https://e.com/cat.png', 'a cat') + '</p>'],
  ['relative link is text', '[x](/etc/passwd)', '<p>[x](/etc/passwd)</p>'],
  ['reference-style brackets are text', '[not a link] and [x]', '<p>[not a link] and [x]</p>'],

  // hostile input
  ['script tag is text', '<script>alert(1)</script>', '<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>'],
  ['img onerror is text', '<img src=x onerror="alert(1)">', '<p>&lt;img src=x onerror="alert(1)"&gt;</p>'],
  ['html block is text', '<div>\n<b>x</b>\n</div>', '<p>&lt;div&gt;<br>&lt;b&gt;x&lt;/b&gt;<br>&lt;/div&gt;</p>'],
  ['javascript: link is text', '[click](javascript:alert(1))', '<p>[click](javascript:alert(1))</p>'],
  ['JaVaScRiPt: with spaces is text', '[click]( JaVaScRiPt:alert(1) )', '<p>[click]( JaVaScRiPt:alert(1) )</p>'],
  ['entity-encoded javascript is text', '[x](&#106;avascript:alert(1))', '<p>[x](&amp;#106;avascript:alert(1))</p>'],
  ['data: link is text', '[x](data:text/html;base64,PHNjcmlwdD4=)', '<p>[x](data:text/html;base64,PHNjcmlwdD4=)</p>'],
  ['vbscript autolink is text', '<vbscript:msgbox(1)>', '<p>&lt;vbscript:msgbox(1)&gt;</p>'],
  ['javascript image is text', '![x](javascript:alert(1))', '<p>![x](javascript:alert(1))</p>'],
  ['quote in href cannot break out', '[x](https://e.com/"onmouseover="alert(1))', '<p>[x](https://e.com/"onmouseover="alert(1))</p>'],
  ['link text cannot nest a link', '[a [b](https://b.com)](https://a.com)', '<p>' + A('https://a.com', 'a [b](https://b.com)') + '</p>'],
  ['markdown inside code stays code', '`[x](javascript:alert(1))`', '<p><code>[x](javascript:alert(1))</code></p>'],
  ['script inside a fence is code', '```html\n<script>alert(1)</script>\n```', '<pre data-lang="html"><code>&lt;script&gt;alert(1)&lt;/script&gt;</code></pre>'],
  ['fence language is sanitised', '```"><img onerror=x>\nx\n```', '<pre data-lang="img"><code>x</code></pre>'],
];

for (const [name, src, want] of cases) {
  const got = md(src);
  assert.strictEqual(got, want, name + ':\n  src  ' + JSON.stringify(src) + '\n  got  ' + got + '\n  want ' + want);
}

// safeHref on its own.
for (const [url, ok] of [
  ['https://example.com', true], ['HTTP://EXAMPLE.COM/x', true], ['mailto:a@b.c', true],
  ['javascript:alert(1)', false], [' javascript:alert(1)', false], ['java\nscript:alert(1)', false],
  ['\u0001https://e.com', false], ['data:text/html,x', false], ['//evil.com', false], ['/relative', false],
  ['https://e.com/"><script>', false], ['https:', false], ['https:///x', false], ['mailto:', false],
]) assert.strictEqual(Markdown.safeHref(url) !== null, ok, 'safeHref(' + JSON.stringify(url) + ')');

// Invariants over generated input: any mix of Markdown-significant
// characters renders without throwing, quickly, to allowed tags and
// attributes only, with every href passing safeHref.
const TAGS = new Set(['p', 'br', 'strong', 'em', 'code', 'pre', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'li', 'blockquote', 'a', 'hr', 'table', 'thead', 'tbody', 'tr', 'th', 'td']);
const ATTRS = { a: ['href', 'rel', 'target', 'title'], ol: ['start'], pre: ['data-lang'], th: ['data-align'], td: ['data-align'] };
function check(nodes, src) {
  for (const n of nodes) {
    if (n.tag === undefined) { assert.strictEqual(typeof n.text, 'string'); continue; }
    assert(TAGS.has(n.tag), 'tag ' + n.tag + ' from ' + JSON.stringify(src));
    for (const k of Object.keys(n.attrs || {})) assert((ATTRS[n.tag] || []).includes(k), 'attr ' + k + ' on ' + n.tag);
    if (n.tag === 'a') {
      assert(Markdown.safeHref(n.attrs.href), 'unsafe href ' + n.attrs.href);
      assert.strictEqual(n.attrs.rel, 'noopener noreferrer');
      assert.strictEqual(n.attrs.target, '_blank');
    }
    check(n.children || [], src);
  }
}
const alphabet = ['*', '_', '`', '[', ']', '(', ')', '<', '>', '!', '\\', '#', '-', '+', '1.', '|', ':', ' ', ' ', '\n', '\n\n', '   ',
  'a', 'b', 'https://e.com', 'javascript:', 'mailto:x', '```', '~~~', '> ', '- ', '"', "'", 'onerror=', '<script>'];
let seed = 42;
const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
for (let round = 0; round < 3000; round++) {
  let src = '';
  const len = 1 + rand(40);
  for (let i = 0; i < len; i++) src += alphabet[rand(alphabet.length)];
  check(Markdown.render(src), src);
}

// Pathological input stays fast and shallow.
for (const src of ['*'.repeat(50000), '*a '.repeat(20000), '>'.repeat(5000) + ' deep', '- '.repeat(3000) + 'x',
  '['.repeat(20000), '`'.repeat(20000), 'https://e.com/' + '('.repeat(3000), '_a '.repeat(10000) + 'b_'.repeat(10000)]) {
  const t0 = Date.now();
  const tree = Markdown.render(src);
  const ms = Date.now() - t0;
  assert(ms < 2000, 'took ' + ms + ' ms for ' + JSON.stringify(src.slice(0, 20)) + '…');
  check(tree, src.slice(0, 20));
  let depth = 0;
  const walk = (ns, d) => { for (const n of ns) { depth = Math.max(depth, d); if (n.children) walk(n.children, d + 1); } };
  walk(tree, 1);
  assert(depth <= 60, 'tree depth ' + depth + ' for ' + JSON.stringify(src.slice(0, 20)));
}

console.log('all markdown tests passed (' + cases.length + ' cases)');
