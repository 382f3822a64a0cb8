#!/usr/bin/python3
"""kev-tools on the real llama-server: the template, the tokenizer and the tool-call accuracy.

  tool_check.py [--server PATH] [--model FILE] [--heldout N] [--file SCENARIOS.jsonl ...]

Starts llama-server (--jinja is its default) on kev-tools.gguf with the GGUF's own chat template and:
  1. /apply-template renders 40 generated conversations (system prompts, tool variants, calls and
     results) exactly as tool_gen.render() wrote the training prompts;
  2. /tokenize splits each exactly like the training tokenizer (vocab.py on the file's vocabulary);
  3. accuracy on /v1/chat/completions with the pick_strategy tool as the tests offer it, temperature 0:
     `required` and `auto` calls (a parsed tool_calls entry with the right strategy), and the plain
     answer after the call's result (content naming the strategy, no tool call), on N held-out
     situations and on each --file (`input`, `expected` per line, e.g. scenarios/outside*.jsonl).
Prints a table; exit 0 when 1 and 2 hold and every accuracy is >= --min (0.9 on the held-out set),
1 otherwise, 77 without a server.
"""
import argparse
import json
import os
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gguf_io  # noqa: E402
import scenarios as sc  # noqa: E402
import tool_gen as tg  # noqa: E402
from vocab import Vocab  # noqa: E402

SKIP = 77


def template_checks(srv, post, vocab, n=40):
    """(mismatched renderings, mismatched tokenizations) over n generated conversations."""
    rng, bad_t, bad_k = random.Random(7), 0, 0
    for i in range(n):
        label = rng.choice(sc.LABELS)
        text = sc.situation(label, rng, i % 2 == 0)[0]
        tools, system = tg.random_tools(rng), rng.choice(tg.SYSTEMS)
        msgs = tg.conversation(text, system, label if i % 3 == 0 else None, rng.choice(tg.results(label)))
        want = tg.render(msgs, tools)
        got = post(srv.port, "/apply-template", {"messages": msgs, "tools": tools})["prompt"]
        bad_t += got != want
        toks = post(srv.port, "/tokenize", {"content": want, "add_special": False, "parse_special": True})["tokens"]
        bad_k += toks != vocab.encode(want)
    return bad_t, bad_k


def ask(srv, post, msgs, choice):
    body = {"messages": msgs, "tools": [tg.tool()], "tool_choice": choice, "temperature": 0, "max_tokens": 48}
    return post(srv.port, "/v1/chat/completions", body)["choices"][0]["message"]


def called(msg):
    """The strategy of the message's one pick_strategy call, or None."""
    calls = msg.get("tool_calls") or []
    if len(calls) != 1 or calls[0]["function"]["name"] != tg.TOOL:
        return None
    try:
        return json.loads(calls[0]["function"]["arguments"]).get("strategy")
    except (ValueError, AttributeError):
        return None


def accuracy(srv, post, rows):
    """{kind: [right, of]} over (situation, label) rows."""
    out = {"required": [0, 0], "auto": [0, 0], "answer": [0, 0]}
    for text, label in rows:
        for kind in ("required", "auto"):
            out[kind][0] += called(ask(srv, post, tg.conversation(text, tg.SYSTEM), kind)) == label
            out[kind][1] += 1
        m = ask(srv, post, tg.conversation(text, tg.SYSTEM, label, f"Strategy {label} recorded."), "auto")
        out["answer"][0] += not m.get("tool_calls") and label in (m.get("content") or "")
        out["answer"][1] += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", default=os.environ.get("KEVLAYA_LLAMA_SERVER", ""))
    ap.add_argument("--model", default=os.path.join(HERE, "models", "kev-tools.gguf"))
    ap.add_argument("--heldout", type=int, default=40)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--file", action="append", default=[])
    ap.add_argument("--min", type=float, default=0.9)
    a = ap.parse_args()
    if not a.server or not os.path.exists(a.server):
        print("tool_check.py: SKIP: no llama-server (--server or KEVLAYA_LLAMA_SERVER)")
        return SKIP
    try:  # fidelity.py's server and request helpers need torch only for its own checks
        import fidelity
    except SystemExit:
        print("tool_check.py: SKIP: PyTorch is not installed (fidelity.py's helpers import it)")
        return SKIP
    meta, _ = gguf_io.read(a.model)
    vocab = Vocab(meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.scores"], meta["tokenizer.ggml.token_type"])
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as log:
        srv = fidelity.Server(a.server, a.model, log, exact=False)
    try:
        bad_t, bad_k = template_checks(srv, fidelity.post, vocab)
        print(f"template: {40 - bad_t}/40 renderings equal to the training prompts, "
              f"{40 - bad_k}/40 tokenizations equal")
        sets = [("held-out", tg.heldout(a.seed, a.heldout))]
        for f in a.file:
            with open(f) as fh:
                sets.append((os.path.basename(f), [(r["input"], r["expected"]) for r in map(json.loads, fh) if r.get("expected")]))
        ok = bad_t == 0 and bad_k == 0
        print("| situations | required call | auto call | answer after the result |\n|---|---|---|---|")
        for name, rows in sets:
            acc = accuracy(srv, fidelity.post, rows)
            cells = " | ".join(f"{100 * r / n:.0f} % ({r}/{n})" for r, n in acc.values())
            print(f"| {name} ({len(rows)}) | {cells} |", flush=True)
            if name == "held-out":
                ok = ok and all(r >= a.min * n for r, n in acc.values())
    finally:
        srv.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
