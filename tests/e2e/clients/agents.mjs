// Whole tool round trips through the door with two agent frameworks: the model calls pick_strategy,
// the framework runs the tool and sends its result back, the model answers in plain text. Vercel's
// AI SDK (`ai` + `@ai-sdk/openai-compatible`, generateText and streamText with stopWhen) and
// LangChain JS (`@langchain/openai` ChatOpenAI.bindTools, a `tool` from `@langchain/core`), both on
// OpenAI chat. The tool choice is the framework's default (auto): the model calls by itself.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { tool as lcTool } from '@langchain/core/tools';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { base, check } from './check.mjs';
import { description, model, parameters, pickStrategy, situations, system } from './tool_world.mjs';

const provider = createOpenAICompatible({ name: 'kevlaya', baseURL: `${base}/v1`, apiKey: 'unused' });
const tools = { pick_strategy: tool({ description, inputSchema: jsonSchema(parameters), execute: async (a) => pickStrategy(a) }) };

// One step's calls and the final text must name the situation's strategy.
function checkRoundTrip(who, steps, text, want) {
  const calls = steps.flatMap((s) => s.toolCalls);
  const results = steps.flatMap((s) => s.toolResults);
  check(calls.length === 1 && calls[0].toolName === 'pick_strategy' && calls[0].input.strategy === want,
    `${who}: one pick_strategy call`, calls);
  check(results.length === 1 && results[0].output === pickStrategy({ strategy: want }), `${who}: the tool ran`, results);
  check(steps.length === 2 && text.includes(want) && !text.includes('<tool_call>'), `${who}: a plain answer after the result`,
    { steps: steps.length, text });
}

for (const { text: prompt, strategy } of situations) {
  const g = await generateText({ model: provider(model), system, prompt, tools, stopWhen: stepCountIs(3), temperature: 0 });
  checkRoundTrip('ai generateText', g.steps, g.text, strategy);
}

const s = streamText({ model: provider(model), system, prompt: situations[0].text, tools, stopWhen: stepCountIs(3), temperature: 0 });
let streamed = '';
for await (const part of s.textStream) streamed += part;
checkRoundTrip('ai streamText', await s.steps, streamed, situations[0].strategy);

// LangChain: the agent loop by hand, as its docs show it: invoke, run each tool call, invoke again.
const pick = lcTool(async (a) => pickStrategy(a), { name: 'pick_strategy', description, schema: parameters });
const llm = new ChatOpenAI({ model, apiKey: 'unused', temperature: 0, maxRetries: 0, configuration: { baseURL: `${base}/v1` } });
const bound = llm.bindTools([pick]);
for (const { text: prompt, strategy } of situations) {
  const history = [new SystemMessage(system), new HumanMessage(prompt)];
  const ai = await bound.invoke(history);
  check(ai.tool_calls?.length === 1 && ai.tool_calls[0].name === 'pick_strategy' && ai.tool_calls[0].args.strategy === strategy,
    'langchain: one pick_strategy call', ai.tool_calls);
  const result = await pick.invoke(ai.tool_calls[0]);  // a ToolMessage with the call's id
  check(result.tool_call_id === ai.tool_calls[0].id, 'langchain: the result answers the call', result);
  const final = await bound.invoke([...history, ai, result]);
  check((final.tool_calls ?? []).length === 0 && typeof final.content === 'string' && final.content.includes(strategy),
    'langchain: a plain answer after the result', { content: final.content, calls: final.tool_calls });
}
console.log('agents: ok with the AI SDK (generateText, streamText) and LangChain');
