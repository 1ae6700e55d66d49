// memwords.js — who made a memory item and who edited it last, in words
// that cannot be misread (pure: no DOM, importable by the node tests).
// "by agent · edited Today" after a web edit read as if the agent had
// edited it; now the maker and the editor are named apart.

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
export function editedBy(it) {
  if (it.edited_by) return 'edited in ' + place(it.edited_by);
  return it.updated && it.updated !== it.created ? 'edited' : '';
}
