// Tests of the composer's tray (web/static/attachments.js via core.js):
// limits checked before a byte is sent, uploads and their outcomes, a
// failed upload that leaves the composer as it was, the files a message
// carries, and attachments on user events. Run by TestUIAttachmentsCore.
import assert from 'node:assert';
import * as Core from '../static/core.js';

const sha = (c) => c.repeat(64);
const frame = (s, f) => Core.reduce(s, { type: 'frame', frame: f });
const live = () => {
  const s = Core.initialState();
  Core.reduce(s, { type: 'socket-open' });
  frame(s, { type: 'connected', data: { session_id: 'S', generation: 1, busy: false, last_seq: 0, resumed: false } });
  frame(s, { type: 'synced', data: { last_seq: 0, gapless: true } });
  return s;
};
const file = (name, size, type = 'image/png') => ({ name, size, type });
const take = (s) => s.requests.splice(0);

// 1. limits: a file over 20 MiB is refused at once with a sentence, the
// others picked with it are attached; an 11th file refuses the selection whole
let s = live();
Core.reduce(s, { type: 'attach', files: [file('ok.png', 10), file('huge.mov', 21 << 20, 'video/quicktime')] });
assert.deepStrictEqual(s.tray.items.map((t) => t.name), ['ok.png'], 'the small file of the selection is attached');
assert.deepStrictEqual(take(s).map((r) => r.name), ['ok.png'], 'only the small one is uploaded');
assert.strictEqual(s.tray.error, '“huge.mov” is 21 MiB: files may be at most 20 MiB. The other file is attached.');
Core.reduce(s, { type: 'upload-remove', upload: s.tray.items[0].id });
take(s);
Core.reduce(s, { type: 'attach', files: [file('huge.mov', 21 << 20, 'video/quicktime'), file('empty.txt', 0, 'text/plain')] });
assert.strictEqual(s.tray.items.length, 0);
assert.strictEqual(take(s).length, 0, 'nothing is uploaded');
assert.strictEqual(s.tray.error, '“huge.mov” is 21 MiB: files may be at most 20 MiB. “empty.txt” is empty.');
Core.reduce(s, { type: 'attach', files: Array.from({ length: 11 }, (_, i) => file('p' + i + '.png', 5)) });
assert.strictEqual(s.tray.items.length, 0);
assert.strictEqual(s.tray.error, 'A message may carry at most 10 files.');
Core.reduce(s, { type: 'attach', files: [file('empty.txt', 0, 'text/plain')] });
assert.strictEqual(s.tray.error, '“empty.txt” is empty.');
// a server that announces other limits is held to those
s = Core.initialState();
Core.reduce(s, { type: 'socket-open' });
frame(s, { type: 'connected', data: { session_id: 'S', busy: false, last_seq: 0, attachments_max_bytes: 1000, attachments_max_per_message: 2 } });
frame(s, { type: 'synced', data: { last_seq: 0, gapless: true } });
Core.reduce(s, { type: 'attach', files: [file('a.png', 1001)] });
assert.match(s.tray.error, /at most 1000 B/);
Core.reduce(s, { type: 'attach', files: [file('a.png', 10), file('b.png', 10), file('c.png', 10)] });
assert.strictEqual(s.tray.error, 'A message may carry at most 2 files.');

// 2. uploads: requested, progress, done; Send waits for them
s = live();
Core.reduce(s, { type: 'attach', files: [file('cat.png', 1000), file('notes.pdf', 4000, 'application/pdf')] });
assert.strictEqual(s.tray.error, '');
let reqs = take(s);
assert.deepStrictEqual(reqs.map((r) => [r.kind, r.name]), [['upload', 'cat.png'], ['upload', 'notes.pdf']]);
assert.strictEqual(reqs[0].file.name, 'cat.png', 'the shell gets the file itself');
const [cat, pdf] = s.tray.items;
assert.deepStrictEqual([cat.state, pdf.state], ['uploading', 'uploading']);
assert.deepStrictEqual(Core.composer(s), { canSend: false, kind: 'busy', reason: 'Uploading — Send works when the files are up.' });
Core.reduce(s, { type: 'upload-progress', upload: cat.id, loaded: 400 });
assert.strictEqual(cat.loaded, 400);
Core.reduce(s, { type: 'upload-done', upload: cat.id, att: { sha256: sha('a'), name: 'cat.png', type: 'image/png', size: 1000 } });
assert.strictEqual(cat.state, 'done');

// 3. a failed upload leaves everything as it was: no message goes, the tray says why
Core.reduce(s, { type: 'upload-failed', upload: pdf.id, error: 'the file is larger than 1.0 KiB (attachments.max_bytes)' });
assert.strictEqual(pdf.state, 'failed');
assert.strictEqual(Core.composer(s).canSend, false);
assert.strictEqual(Core.composer(s).reason, 'A file did not upload: retry or remove it to send.');
Core.reduce(s, { type: 'submit', id: 'm1', content: 'look' });
assert.strictEqual(s.pending.length, 0, 'no half-sent message');
assert.strictEqual(s.outbox.length, 0);
assert.strictEqual(s.tray.items.length, 2, 'the tray is kept');
Core.reduce(s, { type: 'upload-retry', upload: pdf.id });
assert.deepStrictEqual(take(s).map((r) => [r.kind, r.upload]), [['upload', pdf.id]]);
assert.strictEqual(pdf.state, 'uploading');
Core.reduce(s, { type: 'upload-remove', upload: pdf.id });
assert.deepStrictEqual(take(s).map((r) => [r.kind, r.upload]), [['upload-abort', pdf.id]], 'a running upload is aborted');
assert.strictEqual(s.tray.items.length, 1);
Core.reduce(s, { type: 'upload-done', upload: pdf.id, att: { sha256: sha('b'), name: 'x', type: 'x', size: 1 } });
assert.strictEqual(s.tray.items.length, 1, 'an answer for a removed upload is dropped');

// 4. the message carries the files; the tray empties; content may be empty
assert.strictEqual(Core.composer(s).canSend, true);
Core.reduce(s, { type: 'submit', id: 'm2', content: '' });
assert.deepStrictEqual(s.outbox, [{ type: 'message', content: '', client_msg_id: 'm2', attachments: [sha('a')] }]);
assert.deepStrictEqual(s.pending[0].attachments, [{ sha256: sha('a'), name: 'cat.png', type: 'image/png', size: 1000 }]);
assert.strictEqual(s.tray.items.length, 0);
s.outbox.length = 0;
Core.reduce(s, { type: 'submit', id: 'm3', content: '   ' });
assert.strictEqual(s.pending.length, 1, 'no text and no files: nothing to send');
// resent after a drop with the same files
Core.reduce(s, { type: 'socket-closed' });
Core.reduce(s, { type: 'socket-open' });
frame(s, { type: 'connected', data: { session_id: 'S', busy: false, last_seq: 0 } });
frame(s, { type: 'synced', data: { last_seq: 0, gapless: true } });
assert.deepStrictEqual(s.outbox.map((f) => f.attachments), [[sha('a')]]);

// 5. the echo: every client's view has the files; malformed entries are dropped
frame(s, { seq: 1, ts: 't', type: 'user', turn: 't1', data: { channel: 'web', content: '', client_msg_id: 'm2',
  attachments: [{ sha256: sha('a'), name: 'cat.png', type: 'image/png', size: 1000 }, { sha256: '../etc/passwd', name: 'x' }, null] } });
assert.strictEqual(s.pending.length, 0);
const u = s.items.find((i) => i.kind === 'user');
assert.deepStrictEqual(u.attachments, [{ sha256: sha('a'), name: 'cat.png', type: 'image/png', size: 1000 }]);
assert(Core.isImage(u.attachments[0]));
assert(!Core.isImage({ type: 'image/svg+xml' }), 'SVG is not shown inline');
frame(s, { seq: 2, ts: 't', type: 'user', turn: 't2', data: { channel: 'email', content: 'no files' } });
assert.deepStrictEqual(s.items.at(-1).attachments, []);

// 6. refused by the server (its own limit): the message is not sent, and Edit puts the files back
s = live();
Core.reduce(s, { type: 'attach', files: [file('a.png', 10)] });
Core.reduce(s, { type: 'upload-done', upload: s.tray.items[0].id, att: { sha256: sha('c'), name: 'a.png', type: 'image/png', size: 10 } });
Core.reduce(s, { type: 'submit', id: 'm4', content: 'with a file' });
frame(s, { type: 'error', data: { code: 'too_many_attachments', message: 'a message may carry at most 0 attachments', client_msg_id: 'm4' } });
assert.strictEqual(s.pending[0].state, 'failed');
Core.reduce(s, { type: 'tray-restore', attachments: s.pending[0].attachments });
Core.reduce(s, { type: 'discard', id: 'm4' });
assert.deepStrictEqual(s.tray.items.map((t) => [t.state, t.att.sha256]), [['done', sha('c')]]);

// 7. sizes as people read them
assert.deepStrictEqual([0, 1023, 1024, 1536, 20 << 20, 5.5 * 2 ** 30].map(Core.formatSize), ['0 B', '1023 B', '1.0 KiB', '1.5 KiB', '20 MiB', '5.5 GiB']);
