#!/usr/bin/env python3
"""Switches under bursts: `kevlaya-orch serve` with two rotating models (`residency: rotate`,
`parallel: 1`, default scheduling) receives bursts of N concurrent chat requests alternating
kev/laya (max_tokens 16), quiet and then with two CPU-bound processes beside the door. Each burst
starts cold (POST /admin/unload), so every burst must load both models.

  bench/switch/burst.py [--n 40] [--bursts 3] [--hogs 2] [--standin] [--orch BIN] [--tiny BIN]

Per burst it prints the switches (from /status, by their time), the fewest that the starvation
guard allows, their ratio, and the self-restarts (`from` = `to`: a child stopped and started again
to serve the model it served). The fewest: each model loads once; beyond that the guard cuts a
residency at the first answer that ends W = max(max_wait_before_swap_ms, min_residency_ms) after it
became ready while the other model waits, so replaying each model's answers (the door's `request`
events on GET /events, in the order they ended, each holding its slot total_ms - queue_ms) in runs
of W or more gives c_m residencies per model; the models alternate until one runs out:
minimum = 2 min(c_kev, c_laya) + (1 if they differ) (docs/supervisor.md, "Grouping and the
starvation guard").
queue.max_depth is raised to 2 x N (the default 64 would refuse part of a burst of 100 with 429);
requests refused with 429/503 would be counted, not retried.
Uses the real llama-server ($KEVLAYA_LLAMA_SERVER, else var/llama-server/llama-server) unless
--standin; the door binary from --orch (default build/kevlaya-orch, else build-asan/)."""
import argparse, json, os, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from door import ROOT, Events, built, chat, cpu_hogs, request, start_door, stop, write_config  # noqa: E402

GUARD_MS, RESIDENCY_MS = 2000, 500  # config.hpp SchedulingCfg defaults (the bench sets none)


def serve(tmp, server, tiny):
    model = f"{tmp}/model.gguf"
    subprocess.run([tiny, "model", "--out", model, "--seed", "1"], check=True, stdout=subprocess.DEVNULL)
    profile = f"binary: {server}\nmodel: {model}\nngl: 0\nctx: 512\nparallel: 1\nshared_base: false\n"
    write_config(tmp, {"kev": profile, "laya": profile},
                 f"residency: rotate\nqueue:\n  max_depth: {max(64, 2 * ARGS.n)}\n")
    return start_door(ARGS.orch, tmp)


def burst(port, n):
    """n requests at once, kev and laya in turn; counts answered and refused."""
    out = {"ok": 0, "refused": 0, "errors": []}
    lock = threading.Lock()

    def one(i):
        status, _, data = request(port, "POST", "/v1/chat/completions", chat("laya" if i % 2 else "kev"))
        with lock:
            if status == 200:
                out["ok"] += 1
            elif status in (429, 503):
                out["refused"] += 1
            else:
                out["errors"].append(f"{status} {data[:200]!r}")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if out["errors"]:
        sys.exit("bench: unexpected answers: " + "; ".join(out["errors"][:5]))
    return out


def guard_minimum(calls):
    """The fewest switches the guard allows for these calls: each model's answers in the order they
    ended, cut into runs that each last W or more (a residency ends at the first answer ending W
    after it became ready), the models alternating until one runs out."""
    w = max(GUARD_MS, RESIDENCY_MS) / 1000
    held = {}
    for e in sorted(calls, key=lambda e: e["at_ms"]):
        held.setdefault(e["model"], []).append((e["total_ms"] - e["queue_ms"]) / 1000)
    chunks = []
    for answers in held.values():
        c, acc = 0, 0.0
        for s in answers:
            if acc == 0:
                c += 1
            acc += s
            if acc >= w:
                acc = 0.0
        chunks.append(c)
    if len(chunks) < 2:
        return max(1, len(chunks))
    a, b = chunks[:2]
    return 2 * min(a, b) + (1 if a != b else 0)


def run(label, port, seen):
    totals = {"switches": 0, "minimum": 0, "self": 0}
    for b in range(ARGS.bursts):
        request(port, "POST", "/admin/unload")
        since_ms = time.time() * 1000
        t0 = time.perf_counter()
        out = burst(port, ARGS.n)
        seconds = time.perf_counter() - t0
        _, _, data = request(port, "GET", "/status")
        recs = [s for s in json.loads(data)["recent_switches"] if s["at_ms"] >= since_ms - 1]
        selfr = sum(1 for s in recs if s["from"] == s["to"])
        time.sleep(0.5)  # the last `request` events reach the /events reader
        calls = [e for e in seen.of_type("request", since_ms - 1) if e.get("queue_ms") is not None]
        minimum = guard_minimum(calls)
        totals["switches"] += len(recs)
        totals["minimum"] += minimum
        totals["self"] += selfr
        print(f"{label:5} burst {b + 1}: n={ARGS.n} answered={out['ok']} refused={out['refused']} "
              f"seconds={seconds:.2f} switches={len(recs)} minimum={minimum} "
              f"switches/minimum={len(recs) / minimum:.2f} self_restarts={selfr}", flush=True)
    print(f"{label:5} total: switches={totals['switches']} minimum={totals['minimum']} "
          f"switches/minimum={totals['switches'] / totals['minimum']:.2f} self_restarts={totals['self']}", flush=True)


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--bursts", type=int, default=3)
    ap.add_argument("--hogs", type=int, default=2, help="CPU-bound processes beside the door in the busy run (0: no busy run)")
    ap.add_argument("--standin", action="store_true")
    ap.add_argument("--orch")
    ap.add_argument("--tiny")
    ARGS = ap.parse_args()
    ARGS.orch = ARGS.orch or built("kevlaya-orch")
    tiny = ARGS.tiny or built("kevlaya-tiny-gguf", "tools")
    server = built("llama-server-standin", "tools") if ARGS.standin else os.path.realpath(
        os.environ.get("KEVLAYA_LLAMA_SERVER", os.path.join(ROOT, "var/llama-server/llama-server")))
    print(f"server: {server}\ndoor: {ARGS.orch}\nguard: max_wait_before_swap_ms={GUARD_MS} "
          f"min_residency_ms={RESIDENCY_MS}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        door, port = serve(tmp, server, tiny)
        hogs = []
        try:
            seen = Events(port)
            run("quiet", port, seen)
            if ARGS.hogs > 0:
                hogs = cpu_hogs(ARGS.hogs)
                run("busy", port, seen)
        finally:
            stop(door, hogs)


if __name__ == "__main__":
    main()
