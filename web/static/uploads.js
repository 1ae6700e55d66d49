// uploads.js — owns the uploads' I/O: each {kind: 'upload'} request of the
// tray (attachments.js) becomes one XMLHttpRequest POST /api/attachments
// (fetch cannot report upload progress), signed in by the session cookie as
// every API call; its progress, answer or failure is dispatched back. Also
// the URL a stored file is shown or opened from (the cookie goes with
// <img> and <a> too).

import { requestHandlers, dispatch, askForToken } from './shell.js';

const running = new Map(); // upload id → its XMLHttpRequest, for abort

requestHandlers.upload = (req) => {
  const xhr = new XMLHttpRequest();
  running.set(req.upload, xhr);
  const done = () => running.delete(req.upload);
  const fail = (error) => { done(); dispatch({ type: 'upload-failed', upload: req.upload, error }); };
  xhr.open('POST', '/api/attachments?name=' + encodeURIComponent(req.name));
  // The server sniffs the type from the bytes; this only has to be present.
  xhr.setRequestHeader('Content-Type', req.file.type || 'application/octet-stream');
  xhr.responseType = 'json';
  let last = 0;
  xhr.upload.onprogress = (e) => {
    // At most ~10 dispatches a second: each one renders.
    const now = Date.now();
    if (e.lengthComputable && now - last > 100) { last = now; dispatch({ type: 'upload-progress', upload: req.upload, loaded: e.loaded }); }
  };
  xhr.onload = () => {
    const body = xhr.response && typeof xhr.response === 'object' ? xhr.response : {};
    if (xhr.status === 201) {
      done();
      dispatch({ type: 'upload-done', upload: req.upload, att: body });
    } else if (xhr.status === 401) {
      askForToken();
      fail('you are not signed in');
    } else {
      fail(body.message || 'the server answered ' + xhr.status);
    }
  };
  xhr.onerror = () => fail(navigator.onLine ? 'the server did not answer' : 'no network');
  xhr.ontimeout = () => fail('the upload took too long');
  xhr.send(req.file);
};

requestHandlers['upload-abort'] = (req) => {
  const xhr = running.get(req.upload);
  running.delete(req.upload);
  if (xhr) xhr.abort();
};

// attachmentURL is where a stored file is shown (images) or opened.
export function attachmentURL(sha256) {
  return '/api/attachments/' + sha256;
}
