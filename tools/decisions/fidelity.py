#!/usr/bin/python3
"""Fidelity check: the exported GGUF on the real llama-server computes what the PyTorch model does.

  fidelity.py [--server PATH] [--models DIR] [--prompts N] [--tol 0.001]

For each model (kev.gguf, laya.gguf in DIR), read back into the PyTorch model of model.py (weights
and vocabulary from the file itself, so a wrong tensor layout shows), and N fixed held-out prompts of
each kind it checks, against a llama-server it starts on 127.0.0.1:
  1. /apply-template renders the pipeline's messages exactly as gen.py renders training prompts;
  2. /tokenize splits that prompt exactly like vocab.py (the training tokenizer);
  3. the server's greedy answer (temperature 0, no grammar) equals the PyTorch model's, token for token;
  4. at every answer step, the log-probabilities of the server's top 5 tokens (n_probs; computed from
     the raw logits, so they are logits minus one constant) agree with PyTorch's within --tol (1e-3;
     measured ~6e-5). The server runs with an F32 KV cache and without flash attention: its defaults
     (F16 cache, F16 flash-attention accumulation on the CPU) move log-probabilities by up to ~2e-2,
     which says nothing about the export (greedy answers stay equal).
Exit 0 when all hold, 1 otherwise, 77 (ctest's skip) without torch or a server, saying why.
"""
import argparse
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
SKIP = 77

try:
    import torch
except ImportError:
    print("fidelity.py: SKIP: PyTorch is not installed (apt-get install python3-torch; run with /usr/bin/python3)")
    sys.exit(SKIP)
import gen  # noqa: E402
import model as M  # noqa: E402


def post(port, path, body, timeout=60):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary, gguf, log, exact=True):
        """exact: the graph as PyTorch computes it (F32 KV cache, no flash attention, see 4.);
        otherwise the server's defaults, as the pipeline runs it."""
        self.port = free_port()
        args = [binary, "-m", gguf, "--host", "127.0.0.1", "--port", str(self.port), "-c", "512", "-np", "1",
                "-t", "1", "-ngl", "0"]
        if exact:
            args += ["--cache-type-k", "f32", "--cache-type-v", "f32", "--flash-attn", "off"]
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
            if self.proc.poll() is not None:
                break
        self.close()
        raise RuntimeError(f"llama-server did not become healthy on {gguf} (log: {log.name})")

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def cases(stages, which, n):
    tasks, vtasks = gen.heldout(random.Random(21), max(n, 8), stages["decide"]["choices"])
    if which == "kev":
        st = stages["decide"]
        return [(st, {"input": t["input"], "candidates": ", ".join(st["choices"]), "verify.feedback": ""},
                 gen.kev_prompt(stages, t["input"])) for t in tasks[:n]]
    st = stages["verify"]
    return [(st, {"input": t["input"], "decide.output": t["proposed"]},
             gen.laya_prompt(stages, t["input"], t["proposed"])) for t in vtasks[:n]]


def check_model(which, server, m, vocab, stages, n, tol):
    failures, worst, excess, at = [], 0.0, 0.0, 0.0
    eos = vocab.id[gen.EOS]
    for st, values, prompt in cases(stages, which, n):
        msgs = [{"role": "system", "content": gen.render(st["system"], values)},
                {"role": "user", "content": gen.render(st["user"], values)}]
        rendered = post(server.port, "/apply-template", {"messages": msgs})["prompt"]
        if rendered != prompt:
            failures.append(f"{which}: /apply-template differs from the training prompt:\n{rendered!r}\n{prompt!r}")
            continue
        ids = vocab.encode(prompt)
        server_ids = post(server.port, "/tokenize", {"content": prompt, "add_special": True})["tokens"]
        if server_ids != ids:
            failures.append(f"{which}: /tokenize {server_ids} != vocab.py {ids}")
            continue
        want, steps = m.greedy(ids, eos, 48)
        r = post(server.port, "/completion", {"prompt": ids, "n_predict": 48, "temperature": 0, "n_probs": 5,
                                              "cache_prompt": False, "samplers": ["temperature"]})
        probs = r["completion_probabilities"]
        got = [p["id"] for p in probs]
        if got and got[-1] == eos:
            got = got[:-1]
        if got != want:
            failures.append(f"{which}: server answered {vocab.decode(got)!r} {got}, PyTorch {vocab.decode(want)!r} {want}")
            continue
        for p, logits in zip(probs, steps):
            lp = torch.log_softmax(logits.double(), -1)
            for top in p["top_logprobs"]:
                d, ref = abs(top["logprob"] - float(lp[top["id"]])), float(lp[top["id"]])
                if d > worst:
                    worst, at = d, ref
                excess = max(excess, d - tol)
    same = not failures
    if excess > 0:
        failures.append(f"{which}: top-5 log-probabilities differ by up to {worst:.2e} > {tol}")
    print(f"fidelity.py: {which}: {n} prompts, greedy answers {'equal' if same else 'DIFFER'}, "
          f"max |log-prob difference| over the top 5 tokens {worst:.2e} at log-prob {at:.1f} "
          f"(tolerance {tol})")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", default=os.environ.get("KEVLAYA_LLAMA_SERVER"))
    ap.add_argument("--models", default=os.path.join(HERE, "models"))
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--tol", type=float, default=1e-3)
    a = ap.parse_args()
    if not a.server or not os.access(a.server, os.X_OK):
        print("fidelity.py: SKIP: no real llama-server (set KEVLAYA_LLAMA_SERVER or pass --server)")
        sys.exit(SKIP)
    torch.set_num_threads(1)
    stages = gen.load_stages(os.path.join(ROOT, "pipelines", "decide-verify.yaml"))
    failures = []
    for which in ("kev", "laya"):
        gguf = os.path.join(a.models, which + ".gguf")
        m, vocab = M.load(gguf)
        with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fidelity-{which}-{os.getpid()}.log"), "w") as log:
            server = Server(a.server, gguf, log)
            try:
                failures += check_model(which, server, m, vocab, stages, a.prompts, a.tol)
            finally:
                server.close()
    for f in failures:
        print("fidelity.py: FAIL: " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
