// The `ollama` client against the door's Ollama API: chat and generate (whole and streamed),
// list (tags), and the error for an unknown model.
import { Ollama } from 'ollama';
import { base, check, raises, user } from './check.mjs';

const ollama = new Ollama({ host: base });
const options = { num_predict: 8, seed: 1 };

const chat = await ollama.chat({ model: 'kev', messages: user, stream: false, options });
check(chat.done === true && chat.message.role === 'assistant', 'chat', chat);
check(typeof chat.message.content === 'string', 'chat content', chat);

let parts = 0;
let done = 0;
for await (const p of await ollama.chat({ model: 'laya', messages: user, stream: true, options })) {
  parts++;
  if (p.done) done++;
}
check(parts >= 2 && done === 1, 'chat stream: parts then one done', { parts, done });

const gen = await ollama.generate({ model: 'kev', prompt: 'Once upon a time', stream: false, options });
check(gen.done === true && typeof gen.response === 'string', 'generate', gen);

let text = '';
let last;
for await (const p of await ollama.generate({ model: 'laya', prompt: 'Once upon a time', stream: true, options })) {
  text += p.response;
  last = p;
}
check(last?.done === true && typeof last.eval_count === 'number', 'generate stream end', last);

const tags = await ollama.list();
check(tags.models.map((m) => m.name).sort().join(',') === 'emb,kev,laya', 'tags', tags);

const err = await raises(() => ollama.chat({ model: 'nope', messages: user, stream: false }), 'unknown model');
check(err.name === 'ResponseError' && err.status_code === 404, 'unknown model error', { name: err.name, status: err.status_code });
console.log('ollama client: ok');
