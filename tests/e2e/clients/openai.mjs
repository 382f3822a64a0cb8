// The official `openai` client against the door: chat (whole and streamed), Responses (whole and
// streamed), embeddings, and the error class for an unknown model. Models: kev, laya, emb (--embeddings).
import OpenAI from 'openai';
import { base, check, raises, user } from './check.mjs';

const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });

const chat = await client.chat.completions.create({ model: 'kev', messages: user, max_tokens: 8 });
check(typeof chat.choices[0].message.content === 'string', 'chat content', chat);

const stream = await client.chat.completions.create({ model: 'laya', messages: user, max_tokens: 8, stream: true });
let chunks = 0;
for await (const c of stream) chunks += c.choices.length ? 1 : 0;
check(chunks > 0, 'chat stream chunks');

const resp = await client.responses.create({ model: 'kev', input: 'Once upon a time', max_output_tokens: 16 });
check(resp.object === 'response' && typeof resp.output_text === 'string', 'responses output_text', resp);

// Raw event iteration: the SDK's responses.stream() helper needs `output_index`/`content_index`,
// which llama-server's events (b10470, b11669) do not carry; every event still parses here.
const rs = await client.responses.create({ model: 'laya', input: 'Once upon a time', max_output_tokens: 16, stream: true });
const types = new Set();
let deltas = '';
let completed;
for await (const ev of rs) {
  types.add(ev.type);
  if (ev.type === 'response.output_text.delta') deltas += ev.delta;
  if (ev.type === 'response.completed') completed = ev.response;
}
check(types.has('response.created') && completed?.status === 'completed', 'responses stream events', [...types]);
const finalText = completed.output.filter((o) => o.type === 'message').flatMap((o) => o.content).map((c) => c.text).join('');
check(finalText === deltas, 'responses stream text = deltas', { finalText, deltas });

const emb = await client.embeddings.create({ model: 'emb', input: ['hello', 'world'] });  // base64 by default
check(emb.data.length === 2 && emb.data[0].embedding.length > 0, 'embeddings', emb.data.length);
check(emb.data[0].embedding.every((x) => Number.isFinite(x)), 'embedding values');

const err = await raises(() => client.chat.completions.create({ model: 'nope', messages: user }), 'unknown model');
check(err instanceof OpenAI.NotFoundError, 'unknown model is NotFoundError', String(err));
console.log('openai client: ok');
