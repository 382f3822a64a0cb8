// A required tool call through the door on every API, whole and streamed, each with its official
// client: OpenAI chat (`tool_calls`, streamed tool-call deltas) and Responses (`function_call`
// items, argument deltas) with `openai`, Anthropic Messages (`tool_use` blocks, `input_json_delta`)
// with `@anthropic-ai/sdk`, Ollama `/api/chat` (`tool_calls`, mapped by the door) with `ollama`; on
// Responses, Anthropic and Ollama the tool's result sent back then gets a plain answer.
// The model is kev-tools (tools/decisions/models/kev-tools.gguf) on the real llama-server: each call
// must pick the situation's strategy, so a call that arrives empty or mangled fails.
import Anthropic from '@anthropic-ai/sdk';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import { base, check } from './check.mjs';
import { description, model, openaiTool, parameters, pickStrategy, situation, system } from './tool_world.mjs';

const want = { strategy: situation.strategy };
const messages = [{ role: 'system', content: system }, { role: 'user', content: situation.text }];
const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// OpenAI chat, whole: one call in message.tool_calls, finish_reason tool_calls.
const chat = await openai.chat.completions.create({
  model, messages, tools: [openaiTool], tool_choice: 'required', temperature: 0, max_tokens: 64 });
const call = chat.choices[0].message.tool_calls?.[0];
check(call?.type === 'function' && call.function.name === 'pick_strategy' && typeof call.id === 'string',
  'chat: a pick_strategy call', chat.choices[0]);
check(same(JSON.parse(call.function.arguments), want), 'chat: its arguments', call.function.arguments);
check(chat.choices[0].finish_reason === 'tool_calls', 'chat: finish_reason', chat.choices[0].finish_reason);

// OpenAI chat, streamed: the name arrives first, the arguments in deltas that join to the JSON.
const stream = await openai.chat.completions.create({
  model, messages, tools: [openaiTool], tool_choice: 'required', temperature: 0, max_tokens: 64, stream: true });
let name = '';
let args = '';
let argDeltas = 0;
let finish;
for await (const c of stream) {
  const ch = c.choices[0];
  if (!ch) continue;
  for (const d of ch.delta?.tool_calls ?? []) {
    check(d.index === 0, 'chat stream: one call, index 0', d);
    name += d.function?.name ?? '';
    if (d.function?.arguments) {
      args += d.function.arguments;
      argDeltas++;
    }
  }
  finish = ch.finish_reason ?? finish;
}
check(name === 'pick_strategy' && same(JSON.parse(args), want), 'chat stream: the call', { name, args });
check(argDeltas >= 1 && finish === 'tool_calls', 'chat stream: argument deltas and finish_reason', { argDeltas, finish });

// Responses, whole: a function_call output item.
const tool = { type: 'function', name: 'pick_strategy', description, parameters };
const resp = await openai.responses.create({
  model, instructions: system, input: situation.text, tools: [tool], tool_choice: 'required', temperature: 0 });
const fc = resp.output.find((o) => o.type === 'function_call');
check(fc?.name === 'pick_strategy' && typeof fc.call_id === 'string', 'responses: a function_call item', resp.output);
check(same(JSON.parse(fc.arguments), want), 'responses: its arguments', fc.arguments);

// Responses, streamed: argument deltas, then the item done with the whole arguments.
const rs = await openai.responses.create({
  model, instructions: system, input: situation.text, tools: [tool], tool_choice: 'required', temperature: 0, stream: true });
let rArgs = '';
let rDone;
let rCompleted;
for await (const ev of rs) {
  if (ev.type === 'response.function_call_arguments.delta') rArgs += ev.delta;
  if (ev.type === 'response.output_item.done' && ev.item?.type === 'function_call') rDone = ev.item;
  if (ev.type === 'response.completed') rCompleted = ev.response;
}
check(rDone?.name === 'pick_strategy' && same(JSON.parse(rDone.arguments), want), 'responses stream: the item', rDone);
check(rArgs === rDone.arguments, 'responses stream: deltas = arguments', { rArgs, item: rDone.arguments });
check(rCompleted?.output?.some((o) => o.type === 'function_call'), 'responses stream: completed', rCompleted?.output);

// Responses round trip: the function_call item and its function_call_output go back as input.
const rFinal = await openai.responses.create({ model, instructions: system, tools: [tool], temperature: 0, input: [
  { role: 'user', content: situation.text }, fc,
  { type: 'function_call_output', call_id: fc.call_id, output: pickStrategy(JSON.parse(fc.arguments)) }] });
check(!rFinal.output.some((o) => o.type === 'function_call') && rFinal.output_text.includes(situation.strategy),
  'responses: a plain answer after the result', rFinal.output);

// Anthropic Messages, whole and streamed: tool_use blocks; input_json_delta events.
const anthropic = new Anthropic({ baseURL: base, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
const aReq = {
  model, system, max_tokens: 64, temperature: 0, messages: [{ role: 'user', content: situation.text }],
  tools: [{ name: 'pick_strategy', description, input_schema: parameters }], tool_choice: { type: 'any' } };
const msg = await anthropic.messages.create(aReq);
const use = msg.content.find((b) => b.type === 'tool_use');
check(use?.name === 'pick_strategy' && typeof use.id === 'string' && same(use.input, want), 'anthropic: a tool_use block', msg.content);
check(msg.stop_reason === 'tool_use', 'anthropic: stop_reason', msg.stop_reason);

const as = anthropic.messages.stream(aReq);
let partial = '';
as.on('inputJson', (delta) => { partial += delta; });
const aFinal = await as.finalMessage();
const aUse = aFinal.content.find((b) => b.type === 'tool_use');
check(aUse?.name === 'pick_strategy' && same(aUse.input, want), 'anthropic stream: the tool_use block', aFinal.content);
check(partial !== '' && same(JSON.parse(partial), want), 'anthropic stream: input_json_delta', partial);
check(aFinal.stop_reason === 'tool_use', 'anthropic stream: stop_reason', aFinal.stop_reason);

// Anthropic round trip: the tool_use block goes back in the assistant turn, its tool_result after it.
const aAnswer = await anthropic.messages.create({ ...aReq, tool_choice: undefined, messages: [...aReq.messages,
  { role: 'assistant', content: msg.content },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: pickStrategy(use.input) }] }] });
check(aAnswer.content.every((b) => b.type === 'text') && aAnswer.content.map((b) => b.text).join('').includes(situation.strategy) &&
  aAnswer.stop_reason === 'end_turn', 'anthropic: a plain answer after the result', aAnswer);

// Ollama /api/chat, whole and streamed (the door's own mapping): arguments as an object.
const ollama = new Ollama({ host: base });
const oReq = { model, messages, tools: [openaiTool], options: { temperature: 0, num_predict: 64 } };
const oChat = await ollama.chat({ ...oReq, stream: false });
const oCall = oChat.message.tool_calls?.[0];
check(oChat.message.tool_calls?.length === 1 && oCall.function.name === 'pick_strategy' && same(oCall.function.arguments, want),
  'ollama: one tool call', oChat.message);

const oCalls = [];
let oDone = 0;
for await (const p of await ollama.chat({ ...oReq, stream: true })) {
  oCalls.push(...(p.message.tool_calls ?? []));
  if (p.done) oDone++;
}
check(oCalls.length === 1 && oCalls[0].function.name === 'pick_strategy' && same(oCalls[0].function.arguments, want),
  'ollama stream: one whole tool call', oCalls);
check(oDone === 1, 'ollama stream: one done', oDone);

// Ollama round trip: the call goes back as the assistant's message with the tool's result after it.
const oFinal = await ollama.chat({ ...oReq, stream: false, messages: [...messages, oChat.message,
  { role: 'tool', tool_name: 'pick_strategy', content: pickStrategy(oCall.function.arguments) }] });
check(!oFinal.message.tool_calls?.length && oFinal.message.content.includes(situation.strategy),
  'ollama: a plain answer after the result', oFinal.message);
console.log('tool calls: ok on openai chat, responses, anthropic and ollama, whole and streamed');
