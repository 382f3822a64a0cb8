#!/usr/bin/env python3
"""Alternating Kev/Laya chat calls against several servers, side by side, with a chosen think time.

Each server gets blocks of consecutive calls (kev, laya, kev, ... continuing across blocks) over one
kept-alive connection, as an agent's SDK makes them; `--think-ms` is slept between two calls of a
block (the time an agent spends reading an answer and writing the next prompt). The first call of
each block follows the other servers' blocks, so it is not timed. Servers take turns block by block
(the order rotates every round), so all see the same machine state.

Prints one line per server: the median seconds per call (think time excluded) and its ratio to the
`--ref` server.
Usage: alternate_calls.py --ref router --think-ms 0 --calls 20 name=http://127.0.0.1:PORT ...
"""
import argparse
import http.client
import json
import statistics
import time
import urllib.parse


def call(conn, model):
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Once"}], "max_tokens": 4})
    t0 = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    took = time.perf_counter() - t0
    if resp.status != 200:
        raise SystemExit(f"bench: {model} answered {resp.status}: {data[:200]!r}")
    return took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("servers", nargs="+", help="name=url")
    ap.add_argument("--ref", required=True, help="the server the ratios are taken against")
    ap.add_argument("--think-ms", type=float, default=0.0)
    ap.add_argument("--calls", type=int, default=20, help="timed calls per server")
    ap.add_argument("--block", type=int, default=6, help="consecutive calls per server and turn")
    args = ap.parse_args()
    servers = []
    for s in args.servers:
        name, url = s.split("=", 1)
        u = urllib.parse.urlparse(url)
        servers.append({"name": name, "host": u.hostname, "port": u.port, "conn": None, "i": 0, "t": []})
    rnd = 0
    while any(len(s["t"]) < args.calls for s in servers):
        order = servers[rnd % len(servers):] + servers[:rnd % len(servers)]
        rnd += 1
        for s in order:
            if s["conn"] is None:
                s["conn"] = http.client.HTTPConnection(s["host"], s["port"], timeout=120)
            for k in range(args.block):
                if k > 0 and args.think_ms > 0:
                    time.sleep(args.think_ms / 1000.0)
                t = call(s["conn"], "kev" if s["i"] % 2 == 0 else "laya")
                s["i"] += 1
                if k > 0:
                    s["t"].append(t)
    med = {s["name"]: statistics.median(s["t"][:args.calls]) for s in servers}
    for s in servers:
        print(f"  {s['name']:<22} {med[s['name']]:.4f} s/call  ({med[s['name']] / med[args.ref]:.2f}x {args.ref})")


if __name__ == "__main__":
    main()
