// Shared by the tool-call scripts: the pick_strategy tool as each API writes it, the situations
// (with the strategy kev-tools picks for each, docs/decisions.md) and the profile's name.
export const model = process.env.KEVLAYA_TOOL_MODEL || 'kev-tools';
export const strategies = ['cache', 'retry', 'escalate', 'abort'];
export const description = 'Pick the strategy for an operations situation.';
export const system = 'You are Kev. Call pick_strategy with the best strategy for the situation.';
// The parameters' JSON schema, as the OpenAI, Responses and Ollama APIs carry it.
export const parameters = {
  type: 'object',
  properties: { strategy: { type: 'string', enum: strategies, description: 'The strategy: cache, retry, escalate or abort.' } },
  required: ['strategy'],
};
export const openaiTool = { type: 'function', function: { name: 'pick_strategy', description, parameters } };
// Situations written for these tests (not generated): the strategy each calls for.
export const situations = [
  { text: 'Alert: the disk on the billing database host is full and writes are failing.', strategy: 'escalate' },
  { text: 'Ticket: the signup request is missing the required email field.', strategy: 'abort' },
];
export const situation = situations[0];
// The tool's implementation in the round trips: what it returns is what the model reads back.
export const pickStrategy = ({ strategy }) => `Strategy ${strategy} recorded.`;
