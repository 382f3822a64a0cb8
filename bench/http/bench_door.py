#!/usr/bin/env python3
"""REST door overhead, measured side by side in one run: the same requests sent to a child started
directly (same binary, model and flags, no key) and through `kevlaya-orch serve` (whose own child
answers only the door: a per-start --api-key), interleaved so both see the same machine state.

  bench/http/bench_door.py [--build DIR] [--server BIN] [--model GGUF] [--n 200] [--clients 16]
                           [--baseline ORCH [--baseline-yaml LINES]] [--nginx] [--nginx-log] [--keep-alive]
                           [--prompt-kib N]
                           [--rounds 9]

Prints median added latency (non-streaming), added time to first SSE chunk, throughput at 16
concurrent clients as ratios door/direct (the median over --rounds rounds, each
burst beside direct bursts of the same round), and the door's own CPU time per request (from
/proc/PID/task/*/schedstat: far less noisy than latency on a loaded machine). Each request opens a
fresh connection; --keep-alive reuses one per client thread and server, as the SDKs do. Uses the stand-in server unless
--server names a real llama-server. --baseline ORCH runs a second door (another kevlaya-orch
build, e.g. before a change) in the same run, interleaved, so before/after share the machine state;
--baseline-yaml adds kevlaya.yaml lines to the baseline door only (the same binary with a setting off).
--nginx adds nginx (from PATH: one worker, `proxy_pass` with an upstream keep-alive pool, access log
off) in front of the direct child as a reference row: what a lean proxy's extra hop costs on this
machine; --nginx-log a second one with its access log on (nginx's default; the door's history on is
its own)."""
import argparse, http.client, json, os, re, statistics, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


KEEP_ALIVE = False  # --keep-alive: each thread keeps one connection per port, as SDK clients do
_conns = threading.local()


def connection(port):
    if not KEEP_ALIVE:
        return http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    pool = _conns.__dict__.setdefault("pool", {})
    if port not in pool:
        pool[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    return pool[port]


def post(port, path, body, stream=False):
    """One request (a fresh connection, or this thread's kept one); returns (total_s, first_chunk_s)."""
    t0 = time.perf_counter()
    c = connection(port)
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
    if not KEEP_ALIVE:
        c.close()
    return time.perf_counter() - t0, first


def start_door(orch, cfg, wrap=()):
    """`wrap`: a command the door runs under (instructions.py: valgrind)."""
    p = subprocess.Popen([*wrap, orch, "serve", cfg, "--port", "0"], stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, int(m.group(1))
    raise RuntimeError("door did not start")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_direct(server, model, clients, ctx=2048):
    """The same server the door starts, on its own port, without a key."""
    port = free_port()
    p = subprocess.Popen([server, "-m", model, "-ngl", "0", "-c", str(ctx), "-np", str(clients),
                          "--host", "127.0.0.1", "--port", str(port)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return wait_healthy(p, port, "direct child", 600)


def wait_healthy(p, port, what, tries):
    """(p, port) once GET /health answers 200; kills p and raises after `tries` × 50 ms."""
    for _ in range(tries):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return p, port
        except OSError:
            pass
        time.sleep(0.05)
    p.kill()
    raise RuntimeError(f"{what} did not start")


def start_nginx(d, child, wrap=(), access_log=False):
    """nginx proxying to the direct child over keep-alive connections (no buffering: SSE passes);
    its access log off unless `access_log` (nginx's default: on)."""
    port = free_port()
    log = f"access_log {d}/access.log" if access_log else "access_log off"
    with open(f"{d}/nginx.conf", "w") as f:
        f.write(f"""worker_processes 1; daemon off; master_process off; pid {d}/nginx.pid; error_log {d}/nginx.err;
events {{ worker_connections 1024; }}
http {{ {log}; client_body_buffer_size 1m; client_max_body_size 16m;
  upstream child {{ server 127.0.0.1:{child}; keepalive 32; }}
  server {{ listen 127.0.0.1:{port};
    location / {{ proxy_pass http://child; proxy_http_version 1.1; proxy_set_header Connection "";
                 proxy_buffering off; }} }} }}
""")
    p = subprocess.Popen([*wrap, "nginx", "-c", f"{d}/nginx.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return wait_healthy(p, port, "nginx", 600 if wrap else 100)


def start_relay(build, child, wrap=()):
    """The stack's floor (bench/relay): Boost's Asio coroutines and Beast relaying to the child."""
    p = subprocess.Popen([*wrap, os.path.join(build, "bench", "kevlaya_bench_relay"), str(child)],
                         stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            return wait_healthy(p, int(m.group(1)), "the relay", 600 if wrap else 100)
    raise RuntimeError("the relay did not start")


def is_door(name):
    """A kevlaya door (loaded through /admin/load), not a proxy in front of the direct child."""
    return not name.startswith(("nginx", "relay"))


def cpu_s(pid):
    """CPU time of all of `pid`'s threads so far, in seconds (schedstat: nanoseconds)."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/schedstat") as f:
            total += int(f.read().split()[0])
    return total / 1e9


def user_sys_s(pid):
    """User and system CPU time of all of `pid`'s threads so far, in seconds (/proc/PID/task/*/stat:
    clock ticks, so only a long run splits the total finely)."""
    user = sys_ = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        user, sys_ = user + int(fields[11]), sys_ + int(fields[12])
    hz = os.sysconf("SC_CLK_TCK")
    return user / hz, sys_ / hz


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
    ap.add_argument("--baseline", default=None, help="a second kevlaya-orch, measured interleaved")
    ap.add_argument("--baseline-yaml", default="",
                    help="kevlaya.yaml lines added for the baseline door only, e.g. 'activity: {enabled: false}'")
    ap.add_argument("--nginx", action="store_true", help="nginx in front of the direct child, as a reference")
    ap.add_argument("--nginx-log", action="store_true",
                    help="a second nginx with its access log on (its default), as the door keeps its history")
    ap.add_argument("--relay", action="store_true",
                    help="the stack's floor (bench/relay: Asio coroutines and Beast, nothing else), as a reference")
    ap.add_argument("--rounds", type=int, default=9, help="throughput rounds (median ratio reported)")
    ap.add_argument("--keep-alive", action="store_true",
                    help="reuse one connection per client and server (what the OpenAI/Anthropic SDKs do)")
    ap.add_argument("--prompt-kib", type=int, default=0,
                    help="send a long conversation of about this many KiB (an agent's context) instead of one line")
    a = ap.parse_args()
    global KEEP_ALIVE
    KEEP_ALIVE = a.keep_alive
    server = a.server or os.path.join(a.build, "tools", "llama-server-standin")
    orch = next(p for p in (os.path.join(a.build, "kevlaya-orch"),
                            os.path.join(a.build, "orchestrator", "kevlaya-orch")) if os.path.exists(p))
    ctx = 2048 if a.prompt_kib <= 0 else a.clients * (a.prompt_kib * 512 + 256)  # every slot holds one
    with tempfile.TemporaryDirectory() as d:
        if a.prompt_kib > 0:  # a model whose training context holds the conversation (servers clamp to it)
            a.model = f"{d}/long.gguf"
            subprocess.run([os.path.join(a.build, "tools", "kevlaya-tiny-gguf"), "model", "--out", a.model,
                            "--n-ctx", str(a.prompt_kib * 512 + 256)], check=True, stdout=subprocess.DEVNULL)
        write_config(d, server, a.model, a.clients, ctx)
        doors = [("door", orch)] + ([("baseline", a.baseline)] if a.baseline else [])
        procs = []
        try:
            for i, (name, bin_) in enumerate(doors):
                cfg = f"{d}/kevlaya.yaml"
                if i:  # its own state and logs
                    cfg = f"{d}/kevlaya-{name}.yaml"
                    with open(f"{d}/kevlaya.yaml") as f, open(cfg, "w") as g:
                        g.write(f.read().replace(f"{d}/state", f"{d}/state-{name}").replace(f"{d}/logs", f"{d}/logs-{name}")
                                + (a.baseline_yaml + "\n" if a.baseline_yaml else ""))
                procs.append((name, *start_door(bin_, cfg)))
            direct, child = start_direct(server, os.path.abspath(a.model), a.clients, ctx)
            if a.nginx:
                procs.append(("nginx", *start_nginx(d, child)))
            if a.nginx_log:
                os.makedirs(f"{d}/nginx-log")
                procs.append(("nginx+log", *start_nginx(f"{d}/nginx-log", child, access_log=True)))
            if a.relay:
                procs.append(("relay", *start_relay(a.build, child)))
            procs.append(("direct", direct, child))
            run(a, procs[:-1], child)
            for name, p, _ in procs[:-1]:
                if is_door(name):
                    print(f"  {name} RSS after the run: {rss_mib(p.pid):.1f} MiB (target < 20 MiB)")
        finally:
            for _, p, _ in procs:
                p.terminate(); p.wait(30)


def write_config(d, server, model, clients, ctx=2048):
    """`d`/kevlaya.yaml with its one profile, kev: the defaults, `clients` slots."""
    os.makedirs(f"{d}/profiles", exist_ok=True); os.makedirs(f"{d}/pipelines", exist_ok=True)
    with open(f"{d}/profiles/kev.yaml", "w") as f:
        f.write(f"name: kev\nbinary: {server}\nmodel: {os.path.abspath(model)}\nngl: 0\n"
                f"ctx: {ctx}\nparallel: {clients}\n")
    with open(f"{d}/kevlaya.yaml", "w") as f:
        f.write(f"profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: {d}/state\n"
                f"log_dir: {d}/logs\nqueue:\n  max_depth: 256\n")


def conversation(kib):
    """One line, or turns of prose (quotes, escapes and non-ASCII included) adding up to ~kib KiB."""
    if kib <= 0:
        return [{"role": "user", "content": "Once upon a time"}]
    turn = ("Once upon a time, a \"small\" robot named Kev — curious, careful — walked to the river.\n"
            "It checked the map: route A (3 km), route B (5 km); Laya said \\ verify first. ") * 8
    n = max(1, kib * 1024 // len(turn.encode()))
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": turn} for i in range(n)]


def run(a, doors, child):
    """`doors`: (name, process, port) of each door; every measure interleaves them with direct."""
    for name, _, port in doors:
        if not is_door(name):
            continue  # a proxy in front of the running child
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        c.request("POST", "/admin/load/kev", headers={"Content-Type": "application/json"})
        r = c.getresponse(); r.read()
        assert r.status == 200, r.status
    body = {"model": "kev", "messages": conversation(a.prompt_kib), "max_tokens": 8, "temperature": 0}
    sbody = dict(body, stream=True)
    path = "/v1/chat/completions"
    for _ in range(20):  # warm every path
        post(child, path, body)
        for _, _, port in doors: post(port, path, body)
    lat = {name: [] for name in ["direct"] + [n for n, _, _ in doors]}
    first = {name: [] for name in lat}
    cpu0 = {n: cpu_s(p.pid) for n, p, _ in doors}
    split0 = {n: user_sys_s(p.pid) for n, p, _ in doors}
    paths = [("direct", child)] + [(name, port) for name, _, port in doors]
    for i in range(a.n):  # interleaved, the order rotating: every path sees the same machine state
        for name, port in paths[i % len(paths):] + paths[:i % len(paths)]:
            lat[name].append(post(port, path, body)[0])
            first[name].append(post(port, path, sbody, True)[1])
    cpu = {n: (cpu_s(p.pid) - cpu0[n]) / (2 * a.n) for n, p, _ in doors}
    split = {n: [(now - was) / (2 * a.n) for now, was in zip(user_sys_s(p.pid), split0[n])] for n, p, _ in doors}
    per = max(4, a.n // a.clients)
    for _, port in paths:  # one untimed burst each: every path opens its connections (and pools) first
        throughput(port, path, body, a.clients, 2)
    # Throughput: `rounds` rounds; in each, every path takes one burst (the order rotating) and a door's
    # ratio is its burst over the mean of the direct bursts of that round. A burst lasts ~0.15 s, so one
    # burst is at the mercy of the machine's noise; the median ratio over rounds is not.
    ratios = {name: [] for name, _, _ in doors}
    direct_rps = []
    for r in range(a.rounds):
        order = paths[r % len(paths):] + paths[:r % len(paths)]
        got = {name: throughput(port, path, body, a.clients, per) for name, port in order}
        got_direct = [got["direct"], throughput(child, path, body, a.clients, per)]  # bounds drift
        direct_rps += got_direct
        for name in ratios:
            ratios[name].append(got[name] / statistics.mean(got_direct))
    md, fd = statistics.median(lat["direct"]), statistics.median(first["direct"])
    print(f"REST door vs direct child ({os.path.basename(a.server or 'stand-in')}, {a.n} interleaved requests, "
          f"{a.clients} clients); direct: non-streaming {md*1e3:.3f} ms, first SSE chunk {fd*1e3:.3f} ms, "
          f"{statistics.median(direct_rps):.0f} req/s")
    for name, _, _ in doors:
        mv, fv = statistics.median(lat[name]), statistics.median(first[name])
        tv, lo, hi = statistics.median(ratios[name]), min(ratios[name]), max(ratios[name])
        print(f"  {name:8s}: added {(mv-md)*1e3:+.3f} ms (non-streaming), {(fv-fd)*1e3:+.3f} ms (first SSE chunk), "
              f"throughput {tv:.2f}x direct (median of {a.rounds} rounds, {lo:.2f}-{hi:.2f}), {'door' if is_door(name) else 'proxy'} CPU {cpu[name]*1e6:.0f} us/request "
              f"(user {split[name][0]*1e6:.0f}, system {split[name][1]*1e6:.0f})")


if __name__ == "__main__":
    sys.exit(main())
