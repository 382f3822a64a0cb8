#!/usr/bin/env python3
"""Training text for kev-tools: tiny Kev as a tool-calling model (Python 3 standard library only).

kev-tools carries its own chat template (TEMPLATE, written into the GGUF as tokenizer.chat_template):
ChatML turns, the offered tools listed in the system turn between <tools> and </tools>, a call written
Hermes-style as <tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>, and a tool's result
given back in a user turn between <tool_response> and </tool_response>. llama-server (--jinja) reads
that template with its differential autoparser and parses the calls natively (JSON_NATIVE, per call
"<tool_call>\\n" ... "</tool_call>"): a `tools` request gets `tool_calls` back on every API.

render() is the template written out in Python for the messages this model is trained on; the check
(tool_check.py) compares it with the server's /apply-template byte for byte. Two kinds of example:
  call:   [system?] user(situation)                                   -> the pick_strategy call
  answer: [system?] user, assistant(call), tool(result)               -> "The strategy is <label>."
The answer repeats the strategy of the call (a quarter of the answer examples call a strategy other
than the situation's, so the model reads the call rather than judging the situation again).
Tools, system prompts and results vary as clients write them, so the model reads past them.
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios as sc  # noqa: E402

EOS = "[[end]]"
TOOL = "pick_strategy"

TEMPLATE = (
    "{%- if messages[0].role == 'system' -%}{%- set sys = messages[0].content -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}{%- set sys = '' -%}{%- set loop_messages = messages -%}{%- endif -%}"
    "{%- if tools -%}<|im_start|>system\n{% if sys %}{{ sys }}\n{% endif %}<tools>\n"
    "{% for tool in tools %}{\"name\": {{ tool.function.name | tojson }}, "
    "\"description\": {{ tool.function.description | tojson }}, "
    "\"parameters\": {{ tool.function.parameters.properties | tojson }}}\n{% endfor %}</tools><|im_end|>\n"
    "{% elif sys -%}<|im_start|>system\n{{ sys }}<|im_end|>\n{% endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- if message.role == 'tool' -%}"
    "<|im_start|>user\n<tool_response>\n{{ message.content }}\n</tool_response><|im_end|>\n"
    "{% elif message.role == 'assistant' -%}<|im_start|>assistant\n"
    "{% if message.content %}{{ message.content }}{% endif %}"
    "{%- if message.tool_calls -%}{%- for tc in message.tool_calls -%}"
    "<tool_call>\n{\"name\": {{ tc.function.name | tojson }}, \"arguments\": {{ tc.function.arguments | tojson }}}\n"
    "</tool_call>{%- endfor -%}{%- endif -%}<|im_end|>\n"
    "{% else -%}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant\n{% endif -%}"
)

# The tool as the tests and the docs offer it; training varies its texts around this.
DESCRIPTION = "Pick the strategy for an operations situation."
PROPERTY_DESCRIPTION = "The strategy: cache, retry, escalate or abort."
SYSTEM = "You are Kev. Call pick_strategy with the best strategy for the situation."

DESCRIPTIONS = [DESCRIPTION, "", "Choose how to handle the incident.", "Record the chosen strategy.",
                "Pick one of cache, retry, escalate, abort.", "Select the operations strategy for a situation.",
                "Decide the handling strategy.", "Report the strategy to apply."]
PROPERTY_DESCRIPTIONS = [PROPERTY_DESCRIPTION, "the strategy", "Which strategy to apply.",
                         "One of cache, retry, escalate, abort.", "Strategy name."]
SYSTEMS = [None, None, SYSTEM, "You are Kev, an operations decision model.",
           "You are an operations assistant. Use the tool.", "Pick the best strategy with the tool.",
           "You are a helpful assistant.", "Answer with a tool call."]
OTHER_TOOLS = [("get_weather", "Get the weather for a city.", {"city": {"type": "string"}}),
               ("search_logs", "Search the service logs.", {"query": {"type": "string"}, "limit": {"type": "integer"}})]


def results(label):
    """Tool results as tools return them: plain words, JSON, a sentence."""
    return ["recorded", "ok", '{"ok": true}', f'{{"strategy": "{label}", "status": "recorded"}}',
            f"Strategy {label} recorded.", "done", f'{{"recorded": "{label}"}}', "applied"]


def tojson(v):
    """llama.cpp's Jinja tojson: `, ` and `: ` separators, keys in the order given."""
    return json.dumps(v, ensure_ascii=False)


def tool(description=DESCRIPTION, prop_description=PROPERTY_DESCRIPTION, order=("type", "enum", "description")):
    """The pick_strategy tool in OpenAI chat form; keys of the property in `order`."""
    prop_all = {"type": "string", "enum": list(sc.LABELS), "description": prop_description}
    prop = {k: prop_all[k] for k in order if k != "description" or prop_description is not None}
    fn = {"name": TOOL, "description": description,
          "parameters": {"type": "object", "properties": {"strategy": prop}, "required": ["strategy"]}}
    return {"type": "function", "function": fn}


def random_tools(rng):
    order = rng.choice([("type", "enum", "description"), ("type", "description", "enum"),
                        ("description", "type", "enum"), ("enum", "type", "description")])
    t = tool(rng.choice(DESCRIPTIONS), rng.choice(PROPERTY_DESCRIPTIONS + [None, None]), order)
    tools = [t]
    if rng.random() < 0.15:
        name, desc, props = rng.choice(OTHER_TOOLS)
        other = {"type": "function", "function": {"name": name, "description": desc,
                                                  "parameters": {"type": "object", "properties": props}}}
        tools.insert(rng.randrange(2), other)
    return tools


def call_text(label):
    """What the model writes to call pick_strategy (= the template's rendering of that call)."""
    return "<tool_call>\n" + tojson({"name": TOOL, "arguments": {"strategy": label}}) + "\n</tool_call>"


def answer_text(label):
    return f"The strategy is {label}."


def render(messages, tools):
    """The template above for system/user/assistant(tool call)/tool messages, with the generation prompt."""
    has_system = bool(messages) and messages[0]["role"] == "system"
    sys_, rest = (messages[0]["content"], messages[1:]) if has_system else ("", messages)
    out = ""
    if tools:
        out += "<|im_start|>system\n" + (sys_ + "\n" if sys_ else "") + "<tools>\n"
        for t in tools:
            f = t["function"]
            out += ('{"name": ' + tojson(f["name"]) + ', "description": ' + tojson(f["description"]) +
                    ', "parameters": ' + tojson(f["parameters"]["properties"]) + "}\n")
        out += "</tools><|im_end|>\n"
    elif sys_:
        out += "<|im_start|>system\n" + sys_ + "<|im_end|>\n"
    for m in rest:
        if m["role"] == "tool":
            out += "<|im_start|>user\n<tool_response>\n" + m["content"] + "\n</tool_response><|im_end|>\n"
        elif m["role"] == "assistant":
            out += "<|im_start|>assistant\n" + (m.get("content") or "")
            for tc in m.get("tool_calls") or []:
                args = tc["function"]["arguments"]
                args = json.loads(args) if isinstance(args, str) else args
                out += "<tool_call>\n" + tojson({"name": tc["function"]["name"], "arguments": args}) + "\n</tool_call>"
            out += "<|im_end|>\n"
        else:
            out += "<|im_start|>" + m["role"] + "\n" + m["content"] + "<|im_end|>\n"
    return out + "<|im_start|>assistant\n"


def call_message(label, call_id="call_1"):
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": TOOL, "arguments": json.dumps({"strategy": label})}}]}


def conversation(situation, system=None, call=None, result=None):
    """Messages as a client sends them: [system], user, and after a call its assistant turn and result."""
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": situation}]
    if call:
        msgs += [call_message(call), {"role": "tool", "tool_call_id": "call_1", "content": result}]
    return msgs


def constant_pieces():
    """Whole tokens of the vocabulary (user-defined: llama.cpp cuts them out of the text first)."""
    return ["<|im_start|>system\n", "<|im_start|>user\n", "<|im_start|>assistant\n", "<|im_end|>\n",
            "<tools>\n", "</tools>", "<tool_response>\n", "\n</tool_response>",
            "<tool_call>\n" + '{"name": "' + TOOL + '", "arguments": {"strategy": "', '"}}\n</tool_call>',
            '{"name": "', '", "description": "', '", "parameters": {', '"type": "string"', '"type": "integer"',
            '"enum": [' + ", ".join(f'"{l}"' for l in sc.LABELS) + "]", '"description": "', "The strategy is "]


def balanced_labels(rng, n):
    labels = [sc.LABELS[i % len(sc.LABELS)] for i in range(n)]
    rng.shuffle(labels)
    return labels


def examples(seed, n, synonyms=None, swap=0.0, answer_share=0.35):
    """(prompt, answer) pairs: situation -> call, or call + result -> the answer in plain text."""
    rng, out = random.Random(seed), []
    for label in balanced_labels(rng, n):
        text = sc.situation(label, rng, False, synonyms, swap)[0]
        system, tools = rng.choice(SYSTEMS), random_tools(rng)
        if rng.random() < answer_share:
            called = label if rng.random() < 0.75 else rng.choice([l for l in sc.LABELS if l != label])
            msgs = conversation(text, system, called, rng.choice(results(called)))
            out.append((render(msgs, tools), answer_text(called)))
        else:
            out.append((render(conversation(text, system), tools), call_text(label)))
    return out


def heldout(seed, n):
    """Held-out situations (wordings, frames and slot values never in training) with their labels."""
    rng = random.Random(seed + 1)
    return [(sc.situation(label, rng, True)[0], label) for label in balanced_labels(rng, n)]
