#!/usr/bin/env python3
"""Many connections on one door (stand-in child, loopback), one run:
  1. --streams concurrent streamed chat calls (default 1,000, `max_tokens` 16, the stand-in writing
     a token every 5 ms, `parallel: 64`): each must end with `data: [DONE]`; the door's peak RSS
     (VmHWM) and its descriptors after they close (its kept-alive connections to the child apart).
  2. --idle keep-alive connections (default 10,000): each sends GET /health and stays open; the
     door's RSS and descriptors are read with all of them open, then after they all close
     (descriptors must be back to where they were before).

  bench/http/connections.py [--build DIR] [--idle N] [--streams N] [--nginx]

--nginx runs the same two phases, in the same run, against nginx (from PATH: one worker, an
upstream keep-alive pool, no buffering) in front of a stand-in child of its own, as the reference.

Needs `ulimit -n` above --idle + a margin (the door's limits.max_connections is set to fit)."""
import argparse, asyncio, json, os, resource, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "k8s"))
import doorkit  # noqa: E402


def proc_status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])  # kB
    return 0


def child_connections(pid, port):
    """The proxy's kept-alive connections to its child (its upstream pool), from `ss`: its
    established sockets other than those on its own listening port."""
    out = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if "pid=%d," % pid in line and ":%d " % port not in line)


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


async def idle_connection(port, opened, release):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await w.drain()
    head = await r.readuntil(b"\r\n\r\n")
    length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
    await r.readexactly(length)
    opened.append(1)
    await release.wait()
    w.close()


async def stream_call(port, done, failed):
    body = json.dumps({"model": "kev", "stream": True, "max_tokens": 16,
                       "messages": [{"role": "user", "content": "Once"}]}).encode()
    try:
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        await w.drain()
        data = await asyncio.wait_for(r.read(), 300)
        w.close()
        (done if b"data: [DONE]" in data and b" 200 " in data.split(b"\r\n", 1)[0] else failed).append(1)
    except (OSError, asyncio.TimeoutError):
        failed.append(1)


async def phases(args, name, pid, port):
    base_fds, base_rss = fds(pid), proc_status(pid, "VmRSS")
    print("%s at rest: RSS %.1f MiB, %d descriptors" % (name, base_rss / 1024, base_fds))
    # 1. concurrent streams (first: VmHWM is then their peak)
    done, failed = [], []
    t2 = time.monotonic()
    await asyncio.gather(*(stream_call(port, done, failed) for _ in range(args.streams)))
    wall = time.monotonic() - t2
    t3 = time.monotonic()
    while fds(pid) > base_fds + child_connections(pid, port) and time.monotonic() - t3 < 30:
        await asyncio.sleep(0.1)
    pooled = child_connections(pid, port)
    print("%s: %d concurrent streams: %d completed, %d failed in %.1f s; peak RSS %.1f MiB; %d descriptors after "
          "(at rest %d, + %d kept-alive connections to its child)"
          % (name, args.streams, len(done), len(failed), wall, proc_status(pid, "VmHWM") / 1024, fds(pid), base_fds, pooled))
    base_fds += pooled
    # 2. idle keep-alive connections
    opened, release = [], asyncio.Event()
    t0 = time.monotonic()
    tasks = []
    for i in range(args.idle):
        tasks.append(asyncio.create_task(idle_connection(port, opened, release)))
        if i % 500 == 499:
            await asyncio.sleep(0.05)  # the kernel's accept backlog
    while len(opened) < args.idle and time.monotonic() - t0 < 120:
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    rss, n = proc_status(pid, "VmRSS"), fds(pid)
    print("%s: %d idle keep-alive connections open (%d answered): RSS %.1f MiB (+%.1f KiB per connection), %d descriptors"
          % (name, args.idle, len(opened), rss / 1024, (rss - base_rss) / max(1, len(opened)), n))
    release.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    t1 = time.monotonic()
    while fds(pid) > base_fds and time.monotonic() - t1 < 30:
        await asyncio.sleep(0.1)
    print("%s: after they closed: %d descriptors (at rest %d), RSS %.1f MiB"
          % (name, fds(pid), base_fds, proc_status(pid, "VmRSS") / 1024))
    return len(opened) == args.idle and len(done) == args.streams


def start_nginx(work, child, conns):
    """nginx in front of `child`: one worker (master_process off: its RSS is the one process's)."""
    port = doorkit.free_port()
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""worker_processes 1; daemon off; master_process off; pid %s/nginx.pid; error_log %s/nginx.err;
worker_rlimit_nofile %d;
events { worker_connections %d; }
http { access_log off; keepalive_timeout 600s; keepalive_requests 100000;
  upstream child { server 127.0.0.1:%d; keepalive 64; }
  server { listen 127.0.0.1:%d backlog=4096;
    location / { proxy_pass http://child; proxy_http_version 1.1; proxy_set_header Connection "";
                 proxy_buffering off; proxy_read_timeout 300s; } } }
""" % (work, work, conns + 256, conns, child, port))
    p = subprocess.Popen(["nginx", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            if doorkit.request(port, "GET", "/health", timeout=2)[0] == 200:
                return p, port
        except (doorkit.Refused, OSError):
            pass
        time.sleep(0.05)
    p.kill()
    raise RuntimeError("nginx did not start")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--idle", type=int, default=10000)
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--nginx", action="store_true", help="the same phases against nginx, as the reference")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.idle + args.streams + 512
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))  # the door inherits it
    orch = os.path.join(args.build, "kevlaya-orch")
    standin = os.path.join(args.build, "tools", "llama-server-standin")
    with tempfile.TemporaryDirectory(prefix="kevlaya-conns-") as work:
        gguf = doorkit.write_tiny_gguf(os.path.join(args.build, "tools", "kevlaya-tiny-gguf"), os.path.join(work, "tiny.gguf"))
        door = doorkit.Door(work, orch, standin, gguf, ["kev"], load_ms=0, token_ms=5,
                            extra="limits:\n  max_connections: %d\n  idle_timeout_s: 600\nqueue:\n  max_depth: %d\n"
                                  % (args.idle + 64, args.streams + 64), parallel=64)
        procs = []
        try:
            door.wait_up()
            doorkit.request(door.port, "POST", "/admin/load/kev", {}, timeout=60)
            ok = asyncio.run(phases(args, "door", door.proc.pid, door.port))
            door.stop()
            if args.nginx:
                child_port = doorkit.free_port()
                child = subprocess.Popen([standin, "-m", gguf, "-ngl", "0", "-c", str(256 * 64), "-np", "64",
                                          "--host", "127.0.0.1", "--port", str(child_port), "--fake-token-ms", "5"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                procs.append(child)
                nginx, port = start_nginx(work, child_port, args.idle + args.streams + 512)
                procs.append(nginx)
                ok = asyncio.run(phases(args, "nginx", nginx.pid, port)) and ok
        finally:
            door.stop()
            for p in procs:
                p.kill()
                p.wait()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
