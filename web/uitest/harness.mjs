// What the reducer tests share: events as the server sends them and a
// connection's opening (connected, the replay, synced).
import * as Core from '../static/core.js';

export const ev = (seq, type, turn, data, ts) => ({ seq, ts: ts || '2026-11-22T10:00:00.000Z', type, turn, data: data || {} });
export const frame = (s, f) => Core.reduce(s, { type: 'frame', frame: f });
export const connect = (s, info, events, gapless = true) => {
  Core.reduce(s, { type: 'socket-open' });
  frame(s, { type: 'connected', data: Object.assign({ session_id: 'S', generation: 1, busy: false, last_seq: 0, resumed: true }, info) });
  events.forEach((e) => frame(s, e));
  frame(s, { type: 'synced', data: { last_seq: 0, gapless } });
};
