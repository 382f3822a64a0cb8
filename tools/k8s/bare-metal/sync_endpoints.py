#!/usr/bin/env python3
"""Keeps the EPP's endpoints.yaml to the kevlaya doors that are ready (bare metal, file discovery).

File discovery routes to every listed endpoint; a door that drains (SIGTERM) or is down must leave
the list, and come back when /readyz answers 200 again. Every INTERVAL seconds this asks each door
of the full list (ALL_FILE, same format) and writes the ready ones to OUT atomically (a temporary
file renamed over it: the EPP's watchFile sees one Create event), only when the set changed.

Usage: sync_endpoints.py ALL_FILE OUT [--interval 2] [--once]
"""
import argparse
import http.client
import os
import time

import yaml


def ready(ep, timeout=1.0):
    conn = http.client.HTTPConnection(ep["address"], int(ep["port"]), timeout=timeout)
    try:
        conn.request("GET", "/readyz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def sync(all_file, out, last):
    """Writes the ready doors to `out` when they differ from `last`; returns the ready names."""
    with open(all_file) as f:
        endpoints = yaml.safe_load(f)["endpoints"]
    live = [ep for ep in endpoints if ready(ep)]
    names = [ep["name"] for ep in live]
    if names != last:
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            yaml.safe_dump({"endpoints": live}, f, sort_keys=False)
        os.replace(tmp, out)
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("all_file")
    ap.add_argument("out")
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--once", action="store_true")
    a = ap.parse_args()
    last = None
    while True:
        last = sync(a.all_file, a.out, last)
        if a.once:
            return
        time.sleep(a.interval)


if __name__ == "__main__":
    main()
