#!/usr/bin/env python3
"""Prints the model card (Markdown) of the trained Kev and Laya.

  card.py TRAIN_DIR [EVAL_DIR]

TRAIN_DIR holds params.json and the llama-finetune logs (train.sh); EVAL_DIR (default
var/decisions/eval) the `eval --json` reports of eval.sh, when it has run.
"""
import json
import os
import re
import sys


def read_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def last_epoch(log_path):
    """(train loss, train acc, val loss, val acc) of the last epoch in a llama-finetune log."""
    if not os.path.exists(log_path):
        return None
    text = read_text(log_path).replace("\r", "\n")
    found = {}
    for kind in ("train", "val"):
        rows = re.findall(kind + r":.*data=(\d+)/(\d+) loss=([\d.]+)\S* acc=([\d.]+)", text)
        done = [r for r in rows if r[0] == r[1]]
        if done:
            found[kind] = (float(done[-1][2]), float(done[-1][3]))
    return found


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
    train = sys.argv[1]
    ev = sys.argv[2] if len(sys.argv) > 2 else "var/decisions/eval"
    p = json.loads(read_text(os.path.join(train, "params.json")))
    print("# Tiny Kev and Laya: model card\n")
    print("Trained from scratch by `tools/decisions/train.sh` (llama-finetune, CPU, one thread) on text from")
    print("`tools/decisions/gen.py`: the exact ChatML prompts llama-server builds from")
    print("`pipelines/decide-verify.yaml`, followed by the right answer.\n")
    print(f"- architecture: llama, n_embd {p['n_embd']}, {p['n_layer']} layers, 4 heads, n_ff {p['n_ff']}, "
          f"vocab {p['n_vocab']} ({p['task_tokens']} task tokens), F32")
    print(f"- data: generator seed {p['seed']}; Kev {p['kev_examples']} examples (30% with Laya's reject "
          f"reason as feedback), Laya {p['laya_examples']} (half right proposals, half wrong)")
    print(f"- training: {p['epochs']} epochs, AdamW lr {p['lr']}, ctx {p['ctx']} (one batch = {p['ctx']} tokens), "
          f"seed {p['seed']}, 5% validation split")
    for m in ("kev", "laya"):
        e = last_epoch(os.path.join(train, f"{m}.log"))
        if e and "train" in e:
            v = e.get("val", (float("nan"), float("nan")))
            print(f"- {m}: last epoch train loss {e['train'][0]:.3f} (token acc {e['train'][1]:.1f}%), "
                  f"validation loss {v[0]:.3f} (token acc {v[1]:.1f}%)")
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
        print("(not measured yet: run tools/decisions/eval.sh, then this script again)")


if __name__ == "__main__":
    main()
