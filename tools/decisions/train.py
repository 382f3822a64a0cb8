#!/usr/bin/python3
"""Trains tiny Kev or Laya in PyTorch (CPU, seeded) and exports it as an F32 llama GGUF.

  train.py --model kev|laya|kev-tools --out FILE.gguf [--seed 20] [--examples 6000] [--epochs 6]
           [--threads 1] [--summary FILE.json]

The data is gen.py's: the exact ChatML prompt llama-server builds from pipelines/decide-verify.yaml,
then the answer and the EOS; the loss covers the answer tokens only. Both models share one
vocabulary (vocab.py, learned from the training text of both), so the file's tokenizer splits the
server's prompt exactly like the training text. With the same torch build and thread count the
run is bit-for-bit reproducible (float sums are ordered the same way).
kev-tools is Kev as a tool-calling model (tool_gen.py): its own vocabulary and chat template, trained
on the prompts llama-server renders from that template with a pick_strategy tool offered.
"""
import argparse
import functools
import json
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gen  # noqa: E402
import model as M  # noqa: E402
import scenarios as sc  # noqa: E402
import tool_gen  # noqa: E402
from synonyms import Synonyms  # noqa: E402
from vocab import Vocab  # noqa: E402

N_VOCAB = 1536
PIPELINE = os.path.join(ROOT, "pipelines", "decide-verify.yaml")


def build_vocab(stages, kev, laya):
    corpus = [a for _, a in kev + laya] + [p for p, _ in kev + laya]
    pieces = [gen.EOS] + gen.constant_pieces(stages)
    eos_tok = pieces[0]
    return Vocab.build(eos_tok, pieces[1:], [_strip(stages, p) for p in corpus], N_VOCAB)


def _strip(stages, text):
    """A text without the prompts' fixed pieces: merges are learned from the variable parts only."""
    for p in sorted(gen.constant_pieces(stages), key=len, reverse=True):
        text = text.replace(p, " ")
    return text


def data(stages, n, seed, swap):
    syn = Synonyms() if swap > 0 else None
    kev, laya, _ = gen.examples(stages, seed, n, n, synonyms=syn, swap=swap)
    return kev, laya


def encode(vocab, pairs):
    eos = vocab.id[gen.EOS]
    return [(vocab.encode(p), vocab.encode(a) + [eos]) for p, a in pairs]


def batches(rows, size, rng, noise=None):
    """Right-padded batches; `noise` = (share, ids): that share of the prompt's ordinary tokens is
    swapped for random ones, so the model reads the whole situation, not one memorized word."""
    order = list(range(len(rows)))
    rng.shuffle(order)
    for i in range(0, len(order) - size + 1, size):
        chunk = [rows[j] for j in order[i:i + size]]
        t = max(len(p) + len(a) for p, a in chunk)
        x = torch.zeros((size, t), dtype=torch.long)
        y = torch.full((size, t), -100, dtype=torch.long)
        for r, (p, a) in enumerate(chunk):
            if noise:
                p = [rng.choice(noise[1]) if t in noise[2] and rng.random() < noise[0] else t for t in p]
            seq = p + a
            x[r, :len(seq)] = torch.tensor(seq)
            y[r, len(p) - 1:len(seq) - 1] = torch.tensor(a)  # position i predicts token i+1
        yield x, y


def train(m, rows, epochs, lr, seed, log, noise=None):
    rng = random.Random(seed)
    opt = torch.optim.AdamW(m.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)
    steps = epochs * (len(rows) // 32)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 50) * max(0.05, 1 - s / steps))
    step, t0 = 0, time.time()
    for ep in range(epochs):
        total, n = 0.0, 0
        for x, y in batches(rows, 32, rng, noise):
            h = m.hidden(x)
            sel = y != -100
            loss = F.cross_entropy(m.output(h[sel]), y[sel])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            sched.step()
            total, n, step = total + loss.item(), n + 1, step + 1
        log(f"epoch {ep + 1}/{epochs}: loss {total / n:.4f} ({step} steps, {time.time() - t0:.0f} s)")
    return steps, total / n


def accuracy(m, vocab, which, stages, seed, n):
    """Greedy answers of the PyTorch model on gen.py's held-out tasks: (right, of)."""
    tasks, vtasks = gen.heldout(random.Random(seed + 1), n, stages["decide"]["choices"])
    eos, right = vocab.id[gen.EOS], 0
    rows = tasks if which == "kev" else vtasks
    for t in rows:
        if which == "kev":
            ids = vocab.encode(gen.kev_prompt(stages, t["input"]))
            out = vocab.decode(m.greedy(ids, eos, 8)[0])
            right += out == t["expected"]
        else:
            ids = vocab.encode(gen.laya_prompt(stages, t["input"], t["proposed"]))
            out = vocab.decode(m.greedy(ids, eos, 48)[0])
            try:
                right += json.loads(out)["verdict"] == t["verdict"]
            except (ValueError, KeyError, TypeError):
                pass
    return right, len(rows)


def tool_vocab(pairs):
    """kev-tools' vocabulary: the template's pieces, merges learned from its own training text."""
    pieces = tool_gen.constant_pieces()
    strip = lambda t: functools.reduce(lambda acc, p: acc.replace(p, " "), sorted(pieces, key=len, reverse=True), t)  # noqa: E731
    return Vocab.build(tool_gen.EOS, pieces, [strip(x) for pair in pairs for x in pair], N_VOCAB)


def tool_accuracy(m, vocab, seed, n):
    """Greedy answers on held-out situations with the tool as offered by the tests: the call with and
    without a system prompt, and the answer after the call's result. {kind: (right, of)}."""
    eos, t = vocab.id[tool_gen.EOS], tool_gen
    tools, out = [t.tool()], {"call": [0, 0], "call_no_system": [0, 0], "answer": [0, 0]}
    for situation, label in t.heldout(seed, n):
        for kind, msgs, want in (("call", t.conversation(situation, t.SYSTEM), t.call_text(label)),
                                 ("call_no_system", t.conversation(situation), t.call_text(label)),
                                 ("answer", t.conversation(situation, t.SYSTEM, label, "recorded"), t.answer_text(label))):
            got = vocab.decode(m.greedy(vocab.encode(t.render(msgs, tools)), eos, 24)[0])
            out[kind][0] += got == want
            out[kind][1] += 1
    return {k: tuple(v) for k, v in out.items()}


def main_tools(a, log):
    """kev-tools: tool_gen's examples, its vocabulary, its template in the GGUF."""
    pairs = tool_gen.examples(a.seed, a.examples, Synonyms() if a.swap > 0 else None, a.swap)
    vocab = tool_vocab(pairs)
    eos = vocab.id[tool_gen.EOS]
    rows = [(vocab.encode(p), vocab.encode(x) + [eos]) for p, x in pairs]
    log(f"{len(rows)} examples, {sum(len(p) + len(x) for p, x in rows) / len(rows):.1f} tokens each on average")
    cfg = M.Config(N_VOCAB)
    m = M.Llama(cfg)
    normal = [i for i, t in enumerate(vocab.types) if t == 1]
    steps, loss = train(m, rows, a.epochs, a.lr, a.seed, log, (a.noise, normal, set(normal)) if a.noise > 0 else None)
    m.eval()
    acc = tool_accuracy(m, vocab, a.seed, a.heldout)
    log(f"held-out accuracy (PyTorch, greedy): {acc}")
    M.export(m, vocab, eos, a.model, a.out, [("tokenizer.chat_template", tool_gen.TEMPLATE)])
    return cfg, steps, loss, {k: {"right": r, "of": n} for k, (r, n) in acc.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["kev", "laya", "kev-tools"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--examples", type=int, default=6000)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--heldout", type=int, default=200)
    ap.add_argument("--noise", type=float, default=0.1, help="share of situation tokens swapped at random")
    ap.add_argument("--swap", type=float, default=0.15, help="share of a fact's words given a WordNet synonym")
    ap.add_argument("--summary")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    log = lambda s: print(f"train.py {a.model}: {s}", flush=True)  # noqa: E731
    if a.model == "kev-tools":
        cfg, steps, loss, heldout = main_tools(a, log)
    else:
        cfg, steps, loss, heldout = main_pipeline(a, log)
    if a.summary:
        with open(a.summary, "w") as f:
            json.dump({"model": a.model, "config": cfg.as_dict(), "seed": a.seed, "examples": a.examples,
                       "epochs": a.epochs, "lr": a.lr, "noise": a.noise, "swap": a.swap, "steps": steps, "batch": 32, "final_loss": round(loss, 4),
                       "threads": a.threads, "torch": torch.__version__,
                       "heldout": heldout, "bytes": os.path.getsize(a.out)}, f, indent=1)
    log(f"wrote {a.out} ({os.path.getsize(a.out)} bytes)")


def main_pipeline(a, log):
    """Kev or Laya: gen.py's pipeline prompts, the shared vocabulary."""
    stages = gen.load_stages(PIPELINE)
    kev, laya = data(stages, a.examples, a.seed, a.swap)
    vocab = build_vocab(stages, kev, laya)
    rows = encode(vocab, kev if a.model == "kev" else laya)
    log(f"{len(rows)} examples, {sum(len(p) + len(x) for p, x in rows) / len(rows):.1f} tokens each on average")
    cfg = M.Config(N_VOCAB)
    m = M.Llama(cfg)
    normal = [i for i, t in enumerate(vocab.types) if t == 1]
    noise = (a.noise, normal, set(normal)) if a.noise > 0 else None
    steps, loss = train(m, rows, a.epochs, a.lr, a.seed, log, noise)
    m.eval()
    right, of = accuracy(m, vocab, a.model, stages, a.seed, a.heldout)
    log(f"held-out accuracy (PyTorch, greedy): {right}/{of}")
    M.export(m, vocab, vocab.id[gen.EOS], a.model, a.out)
    return cfg, steps, loss, {"right": right, "of": of}


if __name__ == "__main__":
    main()
