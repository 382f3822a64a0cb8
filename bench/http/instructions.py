#!/usr/bin/env python3
"""Instructions per proxied request, counted by callgrind: a figure that the machine's noise does
not move (CPU time on a shared 2-core machine drifts by a third between runs; these counts by about
1 %). Each proxy runs under `valgrind --tool=callgrind` with its instrumentation switched on only
around the load: after 40 warm-up calls of each kind, N non-streamed and N streamed chat calls
(`max_tokens: 8`) from one client on one kept-alive connection, one at a time, the same calls as
bench_door.py --keep-alive. The count is the user-space instructions of every thread of the process
(the door's request history writer included) divided by 2N; the kernel's work (system calls) is not
in it: bench_door.py's CPU column has both.

  bench/http/instructions.py [--build DIR] [--server BIN] [--baseline ORCH] [--nginx] [--nginx-log] [--relay] [--n 300] [--keep DIR]

--server: the child (default: the stand-in; a real llama-server prints dozens of log lines per call,
which the door reads and writes to the child's log); --baseline: a second kevlaya-orch (e.g. before a change); --nginx: nginx as bench_door.py runs it
(one worker, upstream keep-alive pool, access log off); --nginx-log: the same with its access log
on (nginx's default); --relay: the stack's floor (bench/relay: Boost's Asio coroutines and Beast
relaying to the child, nothing else; `tools/setup.sh --all` builds it); --keep: each proxy's
callgrind files are copied there (for callgrind_annotate). Needs Debian's valgrind. Under callgrind a proxy runs ~50x slower, so the
history writer's 50 ms batches hold fewer records than at full speed: its share is an upper bound."""
import argparse, glob, re, http.client, json, os, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_door  # noqa: E402


def count(proc, port, n, outdir, door):
    """Instructions per request of `proc` (running under callgrind) over 2n calls."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    if door:
        c.request("POST", "/admin/load/kev")
        r = c.getresponse(); r.read()
        assert r.status == 200, r.status
    body = {"model": "kev", "messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 8, "temperature": 0}
    def call(stream):
        c.request("POST", "/v1/chat/completions", body=json.dumps(dict(body, stream=stream)),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse(); r.read()
        assert r.status == 200, r.status
    for _ in range(40):
        call(False); call(True)
    time.sleep(0.3)  # the history's last batch of the warm-up is written
    ctl = lambda *args: subprocess.run(["callgrind_control", *args, str(proc.pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ctl("-i", "on")
    for _ in range(n):
        call(False); call(True)
    time.sleep(0.3)  # ... and the load's
    ctl("-d")
    dumps = glob.glob(f"{outdir}/cg.{proc.pid}.*")
    total = sum(int(line.split()[1]) for f in dumps for line in open(f) if line.startswith("summary:"))
    return total / (2 * n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(bench_door.ROOT, "build"))
    ap.add_argument("--server", default=None)
    ap.add_argument("--model", default=os.path.join(bench_door.ROOT, "..", "shared", "models", "stories260K.gguf"))
    ap.add_argument("--baseline", default=None)
    ap.add_argument("--nginx", action="store_true")
    ap.add_argument("--nginx-log", action="store_true")
    ap.add_argument("--relay", action="store_true", help="the stack's floor too (bench/relay)")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--keep", default=None, help="copy each proxy's callgrind files here (callgrind_annotate reads them)")
    a = ap.parse_args()
    server = a.server or os.path.join(a.build, "tools", "llama-server-standin")
    orch = next(p for p in (os.path.join(a.build, "kevlaya-orch"), os.path.join(a.build, "orchestrator", "kevlaya-orch"))
                if os.path.exists(p))
    rows = [("door", orch)] + ([("baseline", a.baseline)] if a.baseline else [])
    rows += [("nginx", None)] * a.nginx + [("nginx, access log on", None)] * a.nginx_log + [("relay (floor)", None)] * a.relay
    print(f"instructions per request (callgrind, {a.n} non-streamed + {a.n} streamed kept-alive calls, one client; "
          f"child: {os.path.basename(server)})")
    for name, bin_ in rows:
        with tempfile.TemporaryDirectory() as d:
            wrap = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={d}/cg.%p"]
            procs = []
            try:
                if bin_:
                    bench_door.write_config(d, server, a.model, 16)
                    procs.append(bench_door.start_door(bin_, f"{d}/kevlaya.yaml", wrap))
                else:
                    procs.append(bench_door.start_direct(server, os.path.abspath(a.model), 16))
                    if name.startswith("relay"):
                        procs.append(bench_door.start_relay(a.build, procs[0][1], wrap))
                    else:
                        procs.append(bench_door.start_nginx(d, procs[0][1], wrap, access_log=name != "nginx"))
                proc, port = procs[-1]
                print(f"  {name:21s}: {count(proc, port, a.n, d, bin_ is not None):8.0f}", flush=True)
                if a.keep:
                    os.makedirs(a.keep, exist_ok=True)
                    for f in glob.glob(f"{d}/cg.{proc.pid}.*"):
                        shutil.copy(f, os.path.join(a.keep, re.sub(r"[^a-z]+", "_", name) + "." + os.path.basename(f)))
            finally:
                for p, _ in reversed(procs):
                    p.terminate(); p.wait(60)


if __name__ == "__main__":
    sys.exit(main())
