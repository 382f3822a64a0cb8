#!/usr/bin/env python3
"""The switch figures of bench/device/run.sh: two models of --mib MiB (seeds 1 and 2, so two files
the page cache holds apart), `kevlaya-orch serve` with both (ngl all, residency rotate), calls
alternating between them; each switch record (GET /status) gives stop, VRAM wait (NVML: until the
stopped child's memory is free again), spawn to listening and total. Prints each and the medians."""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from door import chat, request, start_door, stop, write_config  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--orch", required=True)
    ap.add_argument("--tiny", required=True)
    ap.add_argument("--switches", type=int, default=10)
    ap.add_argument("--mib", type=int, default=3900)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/tmp")) as tmp:
        t0 = time.time()
        profiles = {}
        for i, name in enumerate(("kev", "laya")):
            subprocess.run([a.tiny, "model", "--out", f"{tmp}/{name}.gguf", "--big-mib", str(a.mib), "--seed", str(i + 1)],
                           check=True, stdout=subprocess.DEVNULL)
            profiles[name] = f"binary: {a.server}\nmodel: {tmp}/{name}.gguf\nngl: all\nctx: 4096\nparallel: 1\n"
        print(f"models: 2 x {a.mib} MiB written in {time.time() - t0:.0f} s", flush=True)
        write_config(tmp, profiles, "residency: rotate\nscheduling:\n  switch_ahead: false\n")
        door, port = start_door(a.orch, tmp, wait_s=120)
        try:
            for i in range(a.switches + 1):
                model = ("kev", "laya")[i % 2]
                status, _, data = request(port, "POST", "/v1/chat/completions", chat(model, 4), timeout=900)
                if status != 200:
                    sys.exit(f"bench/device: {model} answered {status}: {data[:400]!r}\n" + open(f"{tmp}/door.log").read()[-3000:])
            _, _, data = request(port, "GET", "/status")
            recs = [r for r in json.loads(data)["recent_switches"] if r.get("from")]
            cols = ("stop", "vram_wait", "spawn_to_listening", "total")
            print("from   to     " + "  ".join(f"{c:>18}" for c in cols) + "  (ms)")
            for r in recs:
                print(f"{r['from']:6} {r['to']:6} " + "  ".join(f"{r['phases_ms'][c]:18}" for c in cols))
            if recs:
                print("median        " + "  ".join(f"{statistics.median(r['phases_ms'][c] for r in recs):18.0f}" for c in cols))
        finally:
            stop(door)


if __name__ == "__main__":
    main()
