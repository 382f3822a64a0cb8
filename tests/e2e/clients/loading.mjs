// loading_messages: reasoning (docs/http.md, "Loading state in the chat"): a streaming call that
// waits for a load hears about it as reasoning (openai: delta.reasoning_content) or thinking
// (ollama: message.thinking; anthropic: a thinking content block before the text block); the answer
// text stays clean, and a call that does not stream gets nothing of it. The door's loads take 1.5 s (the stand-in's --fake-load-ms), so each switch shows.
import OpenAI from 'openai';
import { Ollama } from 'ollama';
import Anthropic from '@anthropic-ai/sdk';
import { base, check, user } from './check.mjs';

const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none' });
const ollama = new Ollama({ host: base });
const anthropic = new Anthropic({ baseURL: base, apiKey: 'unused', maxRetries: 0, timeout: 120000 });

const first = await openai.chat.completions.create({ model: 'kev', messages: user, max_tokens: 8 });
const firstText = first.choices[0].message.content;
check(!/loading|waiting/.test(firstText) && !first.choices[0].message.reasoning_content, 'no progress without a stream', first.choices[0].message);

let reasoning = '';
let content = '';
const stream = await openai.chat.completions.create({ model: 'laya', messages: user, max_tokens: 8, stream: true });
for await (const chunk of stream) {
  const delta = chunk.choices[0]?.delta ?? {};
  reasoning += delta.reasoning_content ?? '';
  content += delta.content ?? '';
}
check(reasoning.includes('loading laya'), 'openai: the load as reasoning_content', reasoning);
check(!/loading|waiting/.test(content), 'openai: the answer is clean', content);

let thinking = '';
let answer = '';
for await (const p of await ollama.chat({ model: 'kev', messages: user, stream: true, options: { num_predict: 8 } })) {
  thinking += p.message.thinking ?? '';
  answer += p.message.content ?? '';
}
check(thinking.includes('loading kev'), 'ollama: the load as thinking', thinking);
check(!/loading|waiting/.test(answer), 'ollama: the answer is clean', answer);
// kev is resident: laya loads again, and the Anthropic stream shows it as a thinking block.
const astream = anthropic.messages.stream({ model: 'laya', max_tokens: 8, messages: user });
let atext = '';
astream.on('text', (t) => { atext += t; });
const final = await astream.finalMessage();
const blocks = final.content.map((b) => b.type);
check(blocks[0] === 'thinking' && final.content[0].thinking.includes('loading laya'), 'anthropic: the load as a thinking block', final.content);
check(blocks[1] === 'text' && final.content[1].text === atext, 'anthropic: the answer in its own text block', final.content);
check(!/loading|waiting/.test(atext), 'anthropic: the answer is clean', atext);
check(typeof final.stop_reason === 'string', 'anthropic: stop_reason', final);
console.log('loading messages: ok', JSON.stringify({ reasoning, thinking, anthropic: final.content[0].thinking }));
