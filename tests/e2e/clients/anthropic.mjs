// The official `@anthropic-ai/sdk` client against the door: messages (whole and streamed),
// count_tokens, and Anthropic's error shape for an unknown model.
import Anthropic from '@anthropic-ai/sdk';
import { base, check, raises, user } from './check.mjs';

const client = new Anthropic({ baseURL: base, apiKey: 'unused', maxRetries: 0, timeout: 120000 });

const msg = await client.messages.create({ model: 'kev', max_tokens: 8, messages: user });
check(msg.type === 'message' && msg.role === 'assistant', 'message', msg);
check(msg.content[0].type === 'text' && typeof msg.content[0].text === 'string', 'text block', msg.content);

const stream = client.messages.stream({ model: 'laya', max_tokens: 8, messages: user });
let text = '';
stream.on('text', (t) => { text += t; });
const final = await stream.finalMessage();
check(final.content[0].text === text, 'stream text = final text', { text, final: final.content });
check(typeof final.stop_reason === 'string', 'stop_reason', final);

const count = await client.messages.countTokens({ model: 'kev', messages: user });
check(Number.isInteger(count.input_tokens) && count.input_tokens > 0, 'count_tokens', count);

const err = await raises(() => client.messages.create({ model: 'nope', max_tokens: 8, messages: user }), 'unknown model');
check(err instanceof Anthropic.NotFoundError, 'unknown model is NotFoundError', String(err));
check(err.error?.type === 'error' && err.error?.error?.type === 'not_found_error', 'Anthropic error body', err.error);
console.log('anthropic client: ok');
