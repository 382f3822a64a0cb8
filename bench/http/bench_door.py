#!/usr/bin/env python3
"""REST door overhead, measured side by side in one run: the same requests sent to the resident
child directly and through `kevlaya-orch serve`, interleaved so both see the same machine state.

  bench/http/bench_door.py [--build DIR] [--server BIN] [--model GGUF] [--n 200] [--clients 16]

Prints median added latency (non-streaming), added time to first SSE chunk, and throughput at
16 concurrent clients as ratios door/direct. Uses the stand-in server unless --server names a
real llama-server."""
import argparse, http.client, json, os, re, statistics, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def post(port, path, body, stream=False):
    """One request on a fresh connection; returns (total_s, first_chunk_s)."""
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"{port}{path}: {r.status} {r.read()[:200]!r}")
    first = None
    while True:
        chunk = r.read1(65536) if stream else r.read()
        if first is None:
            first = time.perf_counter() - t0
        if not chunk or not stream:
            break
    c.close()
    return time.perf_counter() - t0, first


def start_door(orch, cfg):
    p = subprocess.Popen([orch, "serve", cfg, "--port", "0"], stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, int(m.group(1))
    raise RuntimeError("door did not start")


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def throughput(port, path, body, clients, per_client):
    def worker():
        for _ in range(per_client):
            post(port, path, body)
    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(clients)]
    for t in ts: t.start()
    for t in ts: t.join()
    return clients * per_client / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--server", default=None)
    ap.add_argument("--model", default=os.path.join(ROOT, "..", "shared", "models", "stories260K.gguf"))
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--clients", type=int, default=16)
    a = ap.parse_args()
    server = a.server or os.path.join(a.build, "tools", "llama-server-standin")
    orch = next(p for p in (os.path.join(a.build, "kevlaya-orch"),
                            os.path.join(a.build, "orchestrator", "kevlaya-orch")) if os.path.exists(p))
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/profiles"); os.makedirs(f"{d}/pipelines")
        with open(f"{d}/profiles/kev.yaml", "w") as f:
            f.write(f"name: kev\nbinary: {server}\nmodel: {os.path.abspath(a.model)}\nngl: 0\n"
                    f"ctx: 2048\nparallel: {a.clients}\n")
        with open(f"{d}/kevlaya.yaml", "w") as f:
            f.write(f"profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: {d}/state\n"
                    f"log_dir: {d}/logs\nqueue:\n  max_depth: 256\n")
        door, port = start_door(orch, f"{d}/kevlaya.yaml")
        try:
            run(a, port)
            print(f"  door RSS after the run: {rss_mib(door.pid):.1f} MiB (target < 20 MiB)")
        finally:
            door.terminate(); door.wait(30)


def run(a, door):
    c = http.client.HTTPConnection("127.0.0.1", door, timeout=120)
    c.request("POST", "/admin/load/kev", headers={"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    assert r.status == 200, r.status
    c.request("GET", "/status"); st = json.loads(c.getresponse().read())
    child = next(p["port"] for p in st["profiles"] if p["name"] == "kev")
    body = {"model": "kev", "messages": [{"role": "user", "content": "Once upon a time"}],
            "max_tokens": 8, "temperature": 0}
    sbody = dict(body, stream=True)
    path = "/v1/chat/completions"
    for _ in range(20):  # warm both paths
        post(child, path, body); post(door, path, body)
    direct, via = [], []
    sdirect, svia = [], []
    for _ in range(a.n):  # interleaved: both paths see the same machine state
        direct.append(post(child, path, body)[0]); via.append(post(door, path, body)[0])
        sdirect.append(post(child, path, sbody, True)[1]); svia.append(post(door, path, sbody, True)[1])
    md, mv = statistics.median(direct), statistics.median(via)
    fd, fv = statistics.median(sdirect), statistics.median(svia)
    per = max(4, a.n // a.clients)
    td = throughput(child, path, body, a.clients, per)
    tv = throughput(door, path, body, a.clients, per)
    td2 = throughput(child, path, body, a.clients, per)  # direct again: bounds drift
    print(f"REST door vs direct child (stand-in, {a.n} interleaved requests, {a.clients} clients)")
    print(f"  non-streaming median: direct {md*1e3:.3f} ms, door {mv*1e3:.3f} ms, "
          f"added {(mv-md)*1e3:.3f} ms, ratio {mv/md:.2f}")
    print(f"  first SSE chunk median: direct {fd*1e3:.3f} ms, door {fv*1e3:.3f} ms, "
          f"added {(fv-fd)*1e3:.3f} ms, ratio {fv/fd:.2f}")
    print(f"  throughput @{a.clients}: direct {td:.0f}/{td2:.0f} req/s, door {tv:.0f} req/s, "
          f"ratio {tv/((td+td2)/2):.2f}")


if __name__ == "__main__":
    sys.exit(main())
