// people.js — who you are and what the people of this desk are called
// (pure: no DOM, no I/O; the node tests import it). shell.js fills it from
// GET /api/me and GET /api/people; items.js, memwords.js and the views
// read names from it. An event without person (an older server, or a door
// that names nobody) keeps its door-only label.

const names = new Map();
let me = null; // GET /api/me's body, or null before it is known

// setPeople takes GET /api/people's list [{person, name}].
export function setPeople(list) {
  names.clear();
  if (!Array.isArray(list)) return;
  for (const p of list) if (p && typeof p.person === 'string') names.set(p.person, typeof p.name === 'string' && p.name ? p.name : p.person);
}

// setYou takes GET /api/me's body (or connected.you); null forgets it.
export function setYou(you) {
  me = you && typeof you.person === 'string' ? you : null;
  if (me && me.name) names.set(me.person, me.name);
}

export const you = () => me;

// shown is the person an event names, as the page shows it: '' on a desk
// that configures nobody (GET /api/me says via "open": one implicit
// person, whose labels stay as they were before people existed).
export const shown = (person) => (person && !(me && me.via === 'open') ? String(person) : '');

// nameOf is a person's name, their id while the name is unknown, '' for none.
export const nameOf = (person) => (person ? names.get(person) || String(person) : '');

// withDoor is "Ann · web", or the door alone for an event without person.
export const withDoor = (person, door) => (person ? nameOf(person) + (door ? ' · ' + door : '') : String(door || ''));

// can: may you do perm? Until the server has said who you are (or an
// older server that never says), everything is shown, as before.
export function can(perm) {
  if (!me || !Array.isArray(me.permissions)) return true;
  return me.permissions.includes(perm);
}

// The controls each permission shows (a body class hides them: style.css).
export const GUARDED = ['talk', 'cancel', 'memory', 'schedules', 'approve', 'reset', 'forget', 'erase'];
