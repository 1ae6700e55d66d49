// attachments.js — owns the composer's tray of files: what was picked,
// dropped or pasted, each upload's progress and outcome, the limits they
// are checked against, and which stored files (sha256 ids) the next
// message carries. Pure: an upload is asked for on s.requests ({kind:
// 'upload', id, file}); uploads.js runs it with XMLHttpRequest and
// dispatches upload-progress / upload-done / upload-failed back.
// reduceAttachments handles those actions; core.js hands them over.
//
// The server is the authority on limits (attachments.max_bytes, 20 MiB;
// attachments.max_per_message, 10): the defaults are checked here first so
// a file that cannot go is refused at once, with a sentence, before any
// byte is sent; a server with other limits says so in its answer (413
// too_large, error too_many_attachments), and that is shown the same way.

export const DEFAULT_MAX_BYTES = 20 << 20;
export const DEFAULT_MAX_PER_MESSAGE = 10;

// A stored file as events carry it: {sha256, name, type, size}; anything
// else in data.attachments is dropped (it cannot be shown or opened).
export function cleanAttachments(list) {
  if (!Array.isArray(list)) return [];
  return list.filter((a) => a && typeof a.sha256 === 'string' && /^[0-9a-f]{64}$/.test(a.sha256))
    .map((a) => ({ sha256: a.sha256, name: String(a.name ?? '') || 'file', type: String(a.type ?? ''),
      size: Number(a.size) >= 0 ? Number(a.size) : 0 }));
}

// isImage: shown as a thumbnail (the server serves these inline).
export const isImage = (a) => /^image\/(png|jpeg|gif|webp)$/.test(a.type);

// formatSize writes a byte count the way people read it.
export function formatSize(n) {
  if (n < 1024) return n + ' B';
  const units = ['KiB', 'MiB', 'GiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return (v < 10 ? v.toFixed(1) : Math.round(v)) + ' ' + units[u];
}

export function initialTray() {
  return {
    items: [],    // {id, name, size, type, file, state: uploading|done|failed, loaded, error, att, rev}
    serial: 0,
    maxBytes: DEFAULT_MAX_BYTES,
    maxPerMessage: DEFAULT_MAX_PER_MESSAGE,
    error: '',    // the last refusal (too large, too many), shown by the tray until the next change
  };
}

// limitsFrom takes the limits a server announces in `connected`, if it does.
export function limitsFrom(tray, info) {
  if (Number(info.attachments_max_bytes) > 0) tray.maxBytes = Number(info.attachments_max_bytes);
  if (Number(info.attachments_max_per_message) > 0) tray.maxPerMessage = Number(info.attachments_max_per_message);
}

// trayState sums the tray up for the composer: whether a message may go
// now and, if not, why.
export function trayState(tray) {
  const items = tray.items;
  if (items.some((t) => t.state === 'uploading')) return { ready: false, reason: 'Uploading — Send works when the files are up.' };
  if (items.some((t) => t.state === 'failed')) return { ready: false, reason: 'A file did not upload: retry or remove it to send.' };
  return { ready: true, reason: '', count: items.length };
}

// take empties the tray into a message: the stored files, in order.
export function takeTray(tray) {
  const atts = tray.items.map((t) => t.att);
  tray.items = [];
  tray.error = '';
  return atts;
}

function request(s, req) {
  req.id = ++s.reqSerial;
  s.requests.push(req);
}

// add puts the picked files in the tray and asks for their uploads. A file
// that cannot go (over attachments.max_bytes, or empty) is refused with a
// sentence that names it and why; the others of the same selection are
// attached. A selection that would take the tray over the count limit is
// refused whole: which of them to leave out is the person's choice.
function add(s, files) {
  const tray = s.tray;
  const list = Array.from(files || []);
  if (!list.length) return;
  const refused = [];
  const ok = [];
  for (const f of list) {
    const name = '“' + (f.name || 'file') + '”';
    if (f.size > tray.maxBytes) refused.push(name + ' is ' + formatSize(f.size) + ': files may be at most ' + formatSize(tray.maxBytes) + '.');
    else if (f.size === 0) refused.push(name + ' is empty.');
    else ok.push(f);
  }
  if (tray.items.length + ok.length > tray.maxPerMessage) {
    tray.error = 'A message may carry at most ' + tray.maxPerMessage + ' files' +
      (tray.items.length ? ' (' + tray.items.length + ' already attached).' : '.');
    return;
  }
  tray.error = refused.length ? refused.join(' ') + (ok.length ? ' ' + (ok.length === 1 ? 'The other file is' : 'The other files are') + ' attached.' : '') : '';
  for (const f of ok) {
    const t = { id: 'f' + ++tray.serial, name: String(f.name || 'pasted'), size: f.size, type: String(f.type || ''), file: f,
      state: 'uploading', loaded: 0, error: '', att: null, rev: 1 };
    tray.items.push(t);
    request(s, { kind: 'upload', upload: t.id, file: f, name: t.name });
  }
}

// reduceAttachments applies the tray's actions; others are ignored.
export function reduceAttachments(s, a) {
  const tray = s.tray;
  const t = a.upload ? tray.items.find((x) => x.id === a.upload) : null;
  switch (a.type) {
    case 'attach':          // {files}: picked, dropped or pasted
      add(s, a.files);
      return true;
    case 'upload-progress': // {upload, loaded}
      if (t && t.state === 'uploading') { t.loaded = Math.min(t.size, Number(a.loaded) || 0); t.rev++; }
      return true;
    case 'upload-done':     // {upload, att}: 201 {sha256, name, type, size}
      if (t && t.state === 'uploading') {
        const [att] = cleanAttachments([a.att]);
        if (att) Object.assign(t, { state: 'done', att, loaded: t.size, type: att.type, name: att.name });
        else Object.assign(t, { state: 'failed', error: 'the server answered without a file id' });
        t.rev++;
      }
      return true;
    case 'upload-failed':   // {upload, error}
      if (t && t.state === 'uploading') { Object.assign(t, { state: 'failed', error: String(a.error || 'failed') }); t.rev++; }
      return true;
    case 'upload-retry':    // {upload}
      if (t && t.state === 'failed') {
        Object.assign(t, { state: 'uploading', loaded: 0, error: '' });
        t.rev++;
        request(s, { kind: 'upload', upload: t.id, file: t.file, name: t.name });
      }
      return true;
    case 'upload-remove':   // {upload}: the × on a chip; a running upload is aborted
      if (t) {
        tray.items = tray.items.filter((x) => x !== t);
        if (t.state === 'uploading') request(s, { kind: 'upload-abort', upload: t.id });
      }
      tray.error = '';
      return true;
    case 'tray-restore':    // {attachments}: Edit on an unsent message puts its files back
      for (const att of cleanAttachments(a.attachments)) {
        if (tray.items.some((x) => x.att && x.att.sha256 === att.sha256)) continue;
        tray.items.push({ id: 'f' + ++tray.serial, name: att.name, size: att.size, type: att.type, file: null,
          state: 'done', loaded: att.size, error: '', att, rev: 1 });
      }
      return true;
    default:
      return false;
  }
}
