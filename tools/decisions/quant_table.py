#!/usr/bin/env python3
"""The per-quantization table by direct calls to the real llama-server (a faster stand-in for eval.sh
where `kevlaya-orch eval` is too slow, e.g. on a loaded box). Python 3 standard library only.

  quant_table.py --server PATH [--quants F32,Q8_0,Q4_K_M,Q2_K] [--scenarios 40] [--repeat 5]
                 [--kev-repeat 20] [--file SCENARIOS.jsonl]

For each variant (llama-quantize of the committed F32 models into var/decisions/quant/) it starts one
server per model with the server's default settings and sends the pipeline's own prompts
(/v1/chat/completions, temperature 0.1 as in the pipeline, a fresh seed per repeat), with the output
constraint (Kev: the four labels as a grammar; Laya: the stage's JSON schema) and without it:
Kev's accuracy and consistency (all --kev-repeat answers the same) on held-out scenarios; Laya's catch
and false-reject rates on held-out right/wrong proposals; the schema-valid rate of both; and the
decide -> verify -> retry pipeline (3 rounds, Laya's reason as feedback, as the executor does).
"""
import argparse
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gen  # noqa: E402
from fidelity import Server, post  # noqa: E402

LABELS = ["cache", "retry", "escalate", "abort"]


def verify_schema():
    """The verify stage's JSON schema as the pipeline writes it (its property order is the grammar's)."""
    import yaml  # python3-yaml (train.sh installs it)
    with open(os.path.join(ROOT, "pipelines", "decide-verify.yaml"), encoding="utf-8") as f:
        stages = {s["name"]: s for s in yaml.safe_load(f)["stages"]}
    return stages["verify"]["output"]["json_schema"]


SCHEMA = verify_schema()


def ask(server, st, values, seed, constrained, kind):
    body = {"messages": [{"role": "system", "content": gen.render(st["system"], values)},
                         {"role": "user", "content": gen.render(st["user"], values)}],
            "temperature": 0.1, "seed": seed, "max_tokens": 8 if kind == "kev" else 256}
    if constrained:
        if kind == "kev":
            body["grammar"] = "root ::= " + " | ".join(f'"{l}"' for l in LABELS)
        else:
            body["response_format"] = {"type": "json_schema", "json_schema": {"schema": SCHEMA}}
    return post(server.port, "/v1/chat/completions", body)["choices"][0]["message"]["content"]


def verdict(text):
    try:
        v = json.loads(text)
        return (v["verdict"], v.get("reason", "")) if v.get("verdict") in ("pass", "reject") else (None, "")
    except (ValueError, TypeError, AttributeError):
        return None, ""


def rate(a, b):
    return f"{100 * a / b:.0f}% ({a}/{b})" if b else "-"


def variant_row(name, kev, laya, stages, tasks, vtasks, repeat, kev_repeat, constrained):
    dec, ver = stages["decide"], stages["verify"]
    cands = ", ".join(dec["choices"])
    right = consistent = valid = calls = pipe = 0
    for t in tasks:
        answers = [ask(kev, dec, {"input": t["input"], "candidates": cands, "verify.feedback": ""}, r, constrained,
                       "kev") for r in range(max(repeat, kev_repeat))]
        calls, valid = calls + len(answers), valid + sum(a in LABELS for a in answers)
        right += sum(a == t["expected"] for a in answers)
        consistent += len(set(answers)) == 1
        for r in range(repeat):
            a = answers[r]
            fb = ""
            for _ in range(3):  # the pipeline: decide, verify, retry with the reason on reject
                v, why = verdict(ask(laya, ver, {"input": t["input"], "decide.output": a}, r, constrained, "laya"))
                calls, valid = calls + 1, valid + (v is not None)
                if v != "reject":
                    break
                fb = why
                a = ask(kev, dec, {"input": t["input"], "candidates": cands, "verify.feedback": fb}, r, constrained, "kev")
                calls, valid = calls + 1, valid + (a in LABELS)
            pipe += a == t["expected"]
    catch = wrong = false_rej = right_p = 0
    for t in vtasks:
        for r in range(repeat):
            v, _ = verdict(ask(laya, ver, {"input": t["input"], "decide.output": t["proposed"]}, r, constrained, "laya"))
            calls, valid = calls + 1, valid + (v is not None)
            if t["verdict"] == "reject":
                wrong, catch = wrong + 1, catch + (v == "reject")
            else:
                right_p, false_rej = right_p + 1, false_rej + (v == "reject")
    n, nk = len(tasks) * repeat, len(tasks) * max(repeat, kev_repeat)
    return (f"| {name} | {'on' if constrained else 'off'} | {rate(pipe, n)} | {rate(right, nk)} | "
            f"{rate(consistent, len(tasks))} | {rate(valid, calls)} | {rate(catch, wrong)} | {rate(false_rej, right_p)} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", default=os.environ.get("KEVLAYA_LLAMA_SERVER"), required=False)
    ap.add_argument("--quants", default="F32,F16,Q8_0,Q5_0,Q4_0,Q4_K_M,Q3_K_M,Q2_K")
    ap.add_argument("--scenarios", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=5, help="runs of the pipeline and of Laya alone per task")
    ap.add_argument("--kev-repeat", type=int, default=20, help="Kev's answers per scenario (accuracy, consistency)")
    ap.add_argument("--file", help="scenarios with `expected` instead of the held-out ones; Laya judges the "
                                   "right strategy and one wrong one (seeded) per scenario")
    a = ap.parse_args()
    if not a.server:
        sys.exit("quant_table.py: pass --server or set KEVLAYA_LLAMA_SERVER")
    stages = gen.load_stages(os.path.join(ROOT, "pipelines", "decide-verify.yaml"))
    sc_dir = os.path.join(HERE, "scenarios")
    jl = lambda f: [json.loads(x) for x in open(os.path.join(sc_dir, f))]  # noqa: E731
    tasks, vtasks = jl("scenarios-heldout.jsonl")[:a.scenarios], jl("laya-heldout.jsonl")[:2 * a.scenarios]
    if a.file:
        rng = random.Random(7)
        tasks = [json.loads(x) for x in open(a.file, encoding="utf-8") if x.strip()][:a.scenarios]
        vtasks = [dict(t, proposed=p, verdict="pass" if p == t["expected"] else "reject") for t in tasks
                  for p in (t["expected"], rng.choice([x for x in LABELS if x != t["expected"]]))]
    out = os.path.join(ROOT, "var", "decisions", "quant")
    os.makedirs(out, exist_ok=True)
    quantize = os.path.join(os.path.dirname(a.server), "llama-quantize")
    print(f"{len(tasks)} held-out scenarios and {len(vtasks)} proposals x {a.repeat} repeats "
          f"(Kev alone x {max(a.repeat, a.kev_repeat)})\n")
    print("| variant | constraint | pipeline acc | Kev acc | Kev consistency | schema-valid | Laya catch | Laya false reject |")
    print("|---|---|---|---|---|---|---|---|")
    for q in a.quants.split(","):
        files = {}
        for m in ("kev", "laya"):
            src = os.path.join(HERE, "models", m + ".gguf")
            files[m] = src if q == "F32" else os.path.join(out, f"{m}-{q.lower()}.gguf")
            if q != "F32":
                subprocess.run([quantize, src, files[m], q], check=True, capture_output=True)
        with open(os.path.join(out, f"{q}.log"), "w") as log:
            kev, laya = Server(a.server, files["kev"], log, False), Server(a.server, files["laya"], log, False)
            try:
                for constrained in (True, False):
                    print(variant_row(q, kev, laya, stages, tasks, vtasks, a.repeat, a.kev_repeat, constrained),
                          flush=True)
            finally:
                kev.close()
                laya.close()
        print(f"<!-- {q}: kev {os.path.getsize(files['kev'])} bytes, laya {os.path.getsize(files['laya'])} bytes -->", flush=True)


if __name__ == "__main__":
    main()
