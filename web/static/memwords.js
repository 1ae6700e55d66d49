// memwords.js — who made a memory item and who edited it last, in words
// that cannot be misread (pure: no DOM, importable by the node tests).
// "by agent · edited Today" after a web edit read as if the agent had
// edited it; now the maker and the editor are named apart.

import { nameOf, shown } from './people.js';

// Where a request came from, as a person says it.
const places = {
  web: 'the web page', console: 'the terminal', api: 'the API', email: 'email',
  webhook: 'the webhook', mcp: 'MCP', schedule: 'a schedule',
};
export const place = (door) => places[door] || (door ? '“' + door + '”' : 'somewhere unknown');

// madeBy: "added in the web page", "saved by the assistant, asked by email
// (eve@example.com)", "summarised by the assistant from a conversation".
// Items of earlier versions (no door) say only what they know.
export function madeBy(it) {
  const from = it.from ? ' (' + it.from + ')' : '';
  switch (it.source) {
    case 'agent':
      return 'saved by the assistant' + (it.door ? ', asked ' + (it.door === 'email' ? 'by ' : 'in ') + place(it.door) + from : '');
    case 'consolidation':
      return 'summarised by the assistant from a conversation';
    case 'web': case 'console': case 'api':
      return 'added in ' + place(it.source) + from;
    default:
      return it.source ? 'saved by ' + it.source : 'saved';
  }
}

// editedBy: "edited in the web page" (the latest edit's door), "edited"
// for an item an earlier version edited, '' for one never edited.
// With the person who edited it (person, from a memory_changed frame, or
// the item's own edited_person): "edited by Ann in the web page".
export function editedBy(it, person) {
  const who = shown(person || it.edited_person || '');
  if (it.edited_by) return 'edited' + (who ? ' by ' + nameOf(who) : '') + ' in ' + place(it.edited_by);
  if (who && it.updated && it.updated !== it.created) return 'edited by ' + nameOf(who);
  return it.updated && it.updated !== it.created ? 'edited' : '';
}
