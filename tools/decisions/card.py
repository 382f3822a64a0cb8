#!/usr/bin/env python3
"""Prints the model card (Markdown) of the trained Kev and Laya.

  card.py MODELS_DIR [EVAL_DIR]

MODELS_DIR holds train.py's summaries kev.json and laya.json; EVAL_DIR (default
var/decisions/eval) the `eval --json` reports of eval.sh, when it has run.
"""
import json
import os
import sys


def read_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def rate(r):
    return "-" if not r or not r.get("of") else f"{100 * r['rate']:.0f}% ({r['hit']}/{r['of']})"


def table(report, cols):
    out = ["| variant | grammar | " + " | ".join(c[0] for c in cols) + " |",
           "|---|---|" + "---|" * len(cols)]
    for p in report["profiles"]:
        s = p["scores"]
        cells = [rate(s[c[1]]) if c[1] != "switches" else str(p["switches"]) for c in cols]
        out.append(f"| {p['variant']} | {'on' if p['constrained'] else 'off'} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    models = sys.argv[1]
    ev = sys.argv[2] if len(sys.argv) > 2 else "var/decisions/eval"
    print("# Tiny Kev and Laya: model card\n")
    print("Trained from scratch in PyTorch by `tools/decisions/train.sh` (`train.py`, CPU, one thread) on text")
    print("from `tools/decisions/gen.py`: the exact ChatML prompts llama-server builds from")
    print("`pipelines/decide-verify.yaml`, followed by the right answer (loss on the answer tokens only);")
    print("exported to F32 GGUF (`general.architecture = llama`) and checked against the real server by")
    print("`tools/decisions/fidelity.py`.\n")
    for m in ("kev", "laya"):
        p = json.loads(read_text(os.path.join(models, f"{m}.json")))
        c = p["config"]
        h = p["heldout"]
        print(f"- **{m}** ({p['bytes'] / 1e6:.1f} MB, F32): llama, n_embd {c['n_embd']}, {c['n_layer']} layers, "
              f"{c['n_head']} heads / {c['n_head_kv']} KV heads, n_ff {c['n_ff']}, vocab {c['n_vocab']}, "
              f"rms eps {c['eps']}, rope base {c['freq_base']:g}; data: generator seed {p['seed']}, "
              f"{p['examples']} examples; training: {p['epochs']} epochs = {p['steps']} steps of {p['batch']}, "
              f"AdamW lr {p['lr']:g} (warm-up, linear decay), {100 * p.get('noise', 0):.0f}% of situation tokens "
              f"swapped at random, {100 * p.get('swap', 0):.0f}% of a fact's words given a WordNet synonym, "
              f"seed {p['seed']}, {p['threads']} thread, torch {p['torch']}; final loss "
              f"{p['final_loss']}; greedy held-out accuracy in PyTorch {h['right']}/{h['of']}")
    tools = os.path.join(models, "kev-tools.json")
    if os.path.exists(tools):  # the tool-calling Kev (tool_gen.py): its own template and vocabulary
        p = json.loads(read_text(tools))
        c, h = p["config"], p["heldout"]
        print(f"- **kev-tools** ({p['bytes'] / 1e6:.1f} MB, F32): llama, n_embd {c['n_embd']}, {c['n_layer']} layers, "
              f"{c['n_head']} heads / {c['n_head_kv']} KV heads, n_ff {c['n_ff']}, vocab {c['n_vocab']} (its own), "
              f"chat template with Hermes-style tool calls (tool_gen.py); seed {p['seed']}, {p['examples']} examples; "
              f"{p['epochs']} epochs = {p['steps']} steps of {p['batch']}, AdamW lr {p['lr']:g}, "
              f"{100 * p.get('noise', 0):.0f}% token noise, {100 * p.get('swap', 0):.0f}% WordNet swaps, "
              f"{p['threads']} thread, torch {p['torch']}; final loss {p['final_loss']}; greedy held-out accuracy "
              f"in PyTorch: call {h['call']['right']}/{h['call']['of']}, without a system prompt "
              f"{h['call_no_system']['right']}/{h['call_no_system']['of']}, answer after the result "
              f"{h['answer']['right']}/{h['answer']['of']}")
    print("\n## Measured (tools/decisions/eval.sh, real llama-server, temperature 0.1)\n")
    pj, lj = os.path.join(ev, "pipeline.json"), os.path.join(ev, "laya.json")
    if os.path.exists(pj):
        r = json.loads(read_text(pj))
        print(f"Held-out scenarios through decide -> verify, {r['repeat']} runs each:\n")
        print(table(r, [("pipeline acc", "pipeline_accuracy"), ("Kev acc (round 1)", "kev_accuracy"),
                        ("consistency", "consistency"), ("schema-valid", "schema_valid"),
                        ("Laya catch", "laya_catch"), ("false reject", "laya_false_reject"),
                        ("switches", "switches")]))
    if os.path.exists(lj):
        r = json.loads(read_text(lj))
        print(f"\nLaya alone on held-out right and wrong decisions, {r['repeat']} runs each:\n")
        print(table(r, [("catch (wrong rejected)", "laya_catch"), ("false reject (right rejected)", "laya_false_reject"),
                        ("schema-valid", "schema_valid")]))
    if not os.path.exists(pj):
        print("(no eval.sh report here: the committed figures, measured on the real server per quantization with\n"
              "tools/decisions/quant_table.py, are in docs/decisions.md)")


if __name__ == "__main__":
    main()
