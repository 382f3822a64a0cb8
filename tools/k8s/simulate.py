#!/usr/bin/env python3
"""Scale-out simulation (docs/scale-out.md): several kevlaya-orch doors on loopback, each a GPU node
rotating two models that cannot be co-resident (stand-in children, fake load time), fed the same
alternating workload twice: by round-robin, then by a picker that applies the EPP's filters and
scorers to the doors' own /metrics and /readyz. Mid-run one node drains (SIGTERM) and a model is
added to another (profile file + POST /admin/reload). Prints switches, latency and losses of both.

Usage: simulate.py --orch BUILD/kevlaya-orch --standin BUILD/tools/llama-server-standin
                   --gguf-tool BUILD/tools/kevlaya-tiny-gguf [--requests 300] [--check]
--check: exit 1 unless affinity switches <= round-robin's / 3, its p99 <= round-robin's, 0 lost.
"""
import argparse
import itertools
import json
import os
import random
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doorkit  # noqa: E402


class View:
    """What the picker knows of one door, refreshed every scrape interval (the EPP's data layer)."""

    def __init__(self, door):
        self.door = door
        self.ready = False
        self.models = set()      # the models the door serves (the pool membership, see docs)
        self.waiting = 0.0
        self.running = 0.0
        self.kv = 0.0
        self.resident = set()
        self.switching = set()
        self.max_models = 1
        self.switches = 0.0      # kevlaya_switches_total, last seen


def scrape(view):
    port = view.door.port
    try:
        ready, _ = doorkit.request(port, "GET", "/readyz", timeout=2)
        status, text = doorkit.request(port, "GET", "/metrics", timeout=2)
        _, models = doorkit.request(port, "GET", "/v1/models", timeout=2)
    except (doorkit.Refused, OSError):
        view.ready = False
        return
    s = doorkit.samples(text)
    if status != 200 or "kevlaya_resident_models_info" not in s:
        view.ready = False
        return False
    view.models = {m["id"] for m in json.loads(models)["data"]}
    view.waiting = s["kevlaya_requests_waiting"][0][1]
    view.running = s["kevlaya_requests_running"][0][1]
    view.kv = s["kevlaya_kv_cache_usage_ratio"][0][1]
    labels = s["kevlaya_resident_models_info"][0][0]
    view.resident = {m for m in labels.get("running_lora_adapters", "").split(",") if m}
    view.switching = {m for m in labels.get("waiting_lora_adapters", "").split(",") if m}
    view.max_models = int(labels.get("max_lora", "1"))
    view.switches = sum(v for _, v in s.get("kevlaya_switches_total", []))
    view.ready = ready == 200
    return True


def affinity_score(v, model):
    """lora-affinity-scorer: resident 1, room to load 0.8, a switch to it under way 0.6, else 0."""
    if model in v.resident:
        return 1.0
    if len(v.resident | v.switching) < v.max_models:
        return 0.8
    return 0.6 if model in v.switching else 0.0


def epp_pick(views, model, exclude, weights):
    """Readiness and pool filters, then queue-scorer, kv-cache-utilization-scorer and the affinity
    scorer, weighted; max-score picker with a random tie-break."""
    cands = [v for v in views if v.ready and model in v.models and v not in exclude]
    if not cands:
        return None
    qs = [v.waiting for v in cands]
    lo, hi = min(qs), max(qs)

    def score(v):
        queue = 1.0 if hi == lo else (hi - v.waiting) / (hi - lo)
        return (weights[0] * affinity_score(v, model) + weights[1] * queue + weights[2] * (1.0 - v.kv),
                random.random())
    return max(cands, key=score)


class RoundRobin:
    def __init__(self):
        self.counter = itertools.count()

    def pick(self, views, model, exclude):
        cands = [v for v in views if v.ready and model in v.models and v not in exclude]
        return cands[next(self.counter) % len(cands)] if cands else None


def run(args, policy, gguf, root):
    doors = [doorkit.Door(os.path.join(root, "%s-node%d" % (policy, i)), args.orch, args.standin, gguf,
                          ["kev", "laya"], load_ms=args.load_ms, token_ms=args.token_ms)
             for i in range(args.nodes)]
    for d in doors:
        d.wait_up()
    views = [View(d) for d in doors]
    for v in views:
        if scrape(v) is False:
            sys.exit("the door on %d exports no kevlaya_resident_models_info: a build with /readyz is needed"
                     % v.door.port)
    stop = threading.Event()

    def scraper():
        while not stop.is_set():
            for v in views:
                scrape(v)
            stop.wait(args.scrape_ms / 1000.0)
    threading.Thread(target=scraper, daemon=True).start()
    rr = RoundRobin()
    lat, lost, served_by_new = [], [], []
    lock = threading.Lock()
    next_i = itertools.count()
    drain_at, add_at = int(args.requests * 0.4), int(args.requests * 0.6)
    events = threading.Lock()
    done_events = set()

    def model_of(i):
        if i >= add_at and i % 4 == 3:
            return "mia"
        return "kev" if i % 2 == 0 else "laya"

    def maybe_event(i):
        with events:
            if i >= drain_at and "drain" not in done_events:
                done_events.add("drain")
                doors[-1].terminate()  # SIGTERM: the door stops accepting, drains, exits
            if i >= add_at and "add" not in done_events:
                done_events.add("add")
                status, body = doors[0].add_model("mia")
                if status != 200:
                    sys.exit("reload failed: %s" % body)
                scrape(views[0])

    def worker():
        while True:
            i = next(next_i)
            if i >= args.requests:
                return
            maybe_event(i)
            model, t0, tried, ok = model_of(i), time.monotonic(), [], False
            body = {"model": model, "max_tokens": args.tokens, "messages": [{"role": "user", "content": "hi %d" % i}]}
            for _ in range(len(views)):
                v = epp_pick(views, model, tried, args.weights) if policy == "affinity" else rr.pick(views, model, tried)
                if v is None:
                    break
                try:
                    status, _ = doorkit.request(v.door.port, "POST", "/v1/chat/completions", body, timeout=120)
                    ok = status == 200
                    if model == "mia" and ok:
                        served_by_new.append(v.door.port)
                    break
                except doorkit.Refused:
                    v.ready = False  # nothing was sent: the next endpoint may take it
                    tried.append(v)
                except OSError:
                    break  # sent, then the connection failed: lost
            with lock:
                (lat if ok else lost).append((time.monotonic() - t0) * 1000.0)

    workers = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    t_start = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall = time.monotonic() - t_start
    for v in views:
        scrape(v)
    stop.set()
    for d in doors:
        d.stop()
    lat.sort()
    pct = (lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan"))
    return {"policy": policy, "switches": int(sum(v.switches for v in views)), "served": len(lat),
            "lost": len(lost), "p50_ms": pct(0.50), "p99_ms": pct(0.99), "wall_s": wall,
            "new_model_served": len(served_by_new)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--orch", required=True)
    ap.add_argument("--standin", required=True)
    ap.add_argument("--gguf-tool", required=True)
    # Four: after one drains, the three models (kev, laya and the added mia) can each keep a node.
    # With three, two nodes are left for three models and one of them must switch on every turn.
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--concurrency", type=int, default=6)
    ap.add_argument("--load-ms", type=int, default=300, help="the stand-in's fake load time (a switch's cost)")
    ap.add_argument("--token-ms", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=4)
    ap.add_argument("--scrape-ms", type=int, default=50, help="the EPP refreshes metrics every 50 ms by default")
    ap.add_argument("--weights", type=float, nargs=3, default=[3, 2, 1], metavar=("AFFINITY", "QUEUE", "KV"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    random.seed(args.seed)
    with tempfile.TemporaryDirectory(prefix="kevlaya-sim-") as root:
        gguf = doorkit.write_tiny_gguf(args.gguf_tool, os.path.join(root, "tiny.gguf"))
        results = [run(args, "round-robin", gguf, root), run(args, "affinity", gguf, root)]
    print("%-12s %9s %7s %5s %9s %9s %7s %9s" % ("policy", "switches", "served", "lost", "p50 ms", "p99 ms", "wall s", "new model"))
    for r in results:
        print("%-12s %9d %7d %5d %9.1f %9.1f %7.1f %9d" % (r["policy"], r["switches"], r["served"], r["lost"],
                                                           r["p50_ms"], r["p99_ms"], r["wall_s"], r["new_model_served"]))
    rr, aff = results
    ok = (aff["switches"] * 3 <= rr["switches"] and aff["p99_ms"] <= rr["p99_ms"] and aff["lost"] == 0
          and rr["lost"] == 0 and aff["new_model_served"] > 0)
    print("targets (switches <= 1/3 of round-robin, p99 no worse, 0 lost, new model served):", "met" if ok else "NOT met")
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
