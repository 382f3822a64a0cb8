#!/usr/bin/python3
"""Greedy accuracy of trained Kev and Laya files in PyTorch, per scenario file.

  accuracy.py [--models DIR] [FILE.jsonl ...]

Reads kev.gguf / laya.gguf from DIR (default: models/) back into model.py and answers every task of
each scenarios file the way the pipeline's first round does (Kev: a label; Laya: her JSON verdict on
the right label and on one wrong label per task). Default files: the held-out scenarios, the
hand-written outside.jsonl and outside-independent.jsonl (80 situations by an author who never saw
the scenario world). Prints one line per file: Kev right, Laya catches, Laya passes.
"""
import argparse
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import torch  # noqa: E402,F401
import gen  # noqa: E402
import model as M  # noqa: E402
import scenarios as sc  # noqa: E402

DEFAULT = ["scenarios-heldout.jsonl", "outside.jsonl", "outside-independent.jsonl"]


def kev_answer(m, vocab, stages, text):
    eos = vocab.id[gen.EOS]
    return vocab.decode(m.greedy(vocab.encode(gen.kev_prompt(stages, text)), eos, 8)[0])


def laya_verdict(m, vocab, stages, text, proposed):
    eos = vocab.id[gen.EOS]
    out = vocab.decode(m.greedy(vocab.encode(gen.laya_prompt(stages, text, proposed)), eos, 64)[0])
    try:
        return json.loads(out)["verdict"]
    except (ValueError, KeyError, TypeError):
        return "invalid"


def score(kev, laya, stages, rows, rng):
    k = c = p = 0
    misses = []
    for r in rows:
        text, label = r["input"], r["expected"]
        got = kev_answer(*kev, stages, text) if kev else None
        k += got == label
        if kev and got != label:
            misses.append(f"{label} -> {got}: {text}")
        if laya:
            p += laya_verdict(*laya, stages, text, label) == "pass"
            wrong = rng.choice([x for x in sc.LABELS if x != label])
            c += laya_verdict(*laya, stages, text, wrong) == "reject"
    return k, c, p, misses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=os.path.join(HERE, "models"))
    ap.add_argument("--misses", action="store_true", help="print Kev's wrong answers")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    torch.set_num_threads(1)
    stages = gen.load_stages(os.path.join(ROOT, "pipelines", "decide-verify.yaml"))
    load = lambda n: M.load(os.path.join(a.models, n)) if os.path.exists(os.path.join(a.models, n)) else None  # noqa: E731
    kev, laya = load("kev.gguf"), load("laya.gguf")
    for f in a.files or [os.path.join(HERE, "scenarios", d) for d in DEFAULT]:
        rows = [json.loads(line) for line in open(f, encoding="utf-8") if line.strip()]
        k, c, p, misses = score(kev, laya, stages, rows, random.Random(7))
        n = len(rows)
        print(f"{os.path.basename(f)}: Kev {k}/{n} ({100 * k / n:.0f}%)"
              + (f", Laya catches {c}/{n} ({100 * c / n:.0f}%), passes {p}/{n} ({100 * p / n:.0f}%)" if laya else ""))
        if a.misses:
            for x in misses:
                print("   ", x)


if __name__ == "__main__":
    main()
