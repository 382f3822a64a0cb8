#!/usr/bin/env python3
"""Load ETA against the loads it predicts: `kevlaya-orch serve` with one model (default a 1000 MiB
F16 model written by kevlaya-tiny-gguf --big-mib, served with --load-mode none so that a load reads
the file as a GPU load copies it), loaded N times from cold (POST /admin/unload, then one chat
request). The door's `phase` event to `starting` carries eta_s, its guess at the start of the load
(the median of that child's last loads); the `switch` event that follows gives the load itself
(its total less drain, stop and VRAM wait: start to ready). Prints both per load and the error;
the target is within +-30 % from the fourth load on.

  bench/switch/eta.py [--loads 10] [--mib 1000] [--hogs 0] [--standin] [--orch BIN] [--tiny BIN]

Uses the real llama-server ($KEVLAYA_LLAMA_SERVER, else var/llama-server/llama-server) unless
--standin; the door binary from --orch (default build/kevlaya-orch, else build-asan/)."""
import argparse, os, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from door import ROOT, Events, built, chat, cpu_hogs, request, start_door, stop, write_config  # noqa: E402


def wait_switch(ev, start):
    """The first `switch` event to m at or after index `start` of the stream, and the eta_s of the
    `starting` phase event before it (None before the first load)."""
    deadline = time.time() + 600
    with ev.cv:
        while time.time() < deadline:
            eta = None
            for e in ev.items[start:]:
                if e.get("type") == "phase" and e.get("to") == "starting" and e.get("child") == "m":
                    eta = e.get("eta_s")
                if e.get("type") == "switch" and e.get("to") == "m":
                    return eta, e
            ev.cv.wait(1)
    sys.exit("bench: no switch event within 600 s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", type=int, default=10)
    ap.add_argument("--mib", type=int, default=1000)
    ap.add_argument("--hogs", type=int, default=0, help="CPU-bound processes beside the door")
    ap.add_argument("--standin", action="store_true")
    ap.add_argument("--orch")
    ap.add_argument("--tiny")
    args = ap.parse_args()
    orch = args.orch or built("kevlaya-orch")
    tiny = args.tiny or built("kevlaya-tiny-gguf", "tools")
    server = built("llama-server-standin", "tools") if args.standin else os.path.realpath(
        os.environ.get("KEVLAYA_LLAMA_SERVER", os.path.join(ROOT, "var/llama-server/llama-server")))
    print(f"server: {server}\ndoor: {orch}\nmodel: {args.mib} MiB F16, {args.loads} loads, {args.hogs} CPU hogs", flush=True)
    hogs = cpu_hogs(args.hogs)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([tiny, "model", "--out", f"{tmp}/m.gguf", "--big-mib", str(args.mib)], check=True,
                       stdout=subprocess.DEVNULL)
        # --load-mode none (no mmap): the load reads the whole file, as a GPU load copies it
        write_config(tmp, {"m": f"binary: {server}\nmodel: {tmp}/m.gguf\nngl: 0\nctx: 256\nparallel: 1\n"
                                 "extra_args: [--load-mode, none]\n"})
        door, port = start_door(orch, tmp)
        try:
            ev = Events(port)
            time.sleep(0.3)
            errors = []
            print("load  eta_s  actual_s  error")
            for i in range(args.loads):
                request(port, "POST", "/admin/unload")
                start = len(ev.items)
                status, _, _ = request(port, "POST", "/v1/chat/completions", chat("m", 1))
                if status != 200:
                    sys.exit(f"bench: load {i + 1} answered {status}")
                eta, sw = wait_switch(ev, start)
                ph = sw["phases_ms"]
                actual = max(0, ph["total"] - ph["drain"] - ph["stop"] - ph["vram_wait"]) / 1000
                err = None if eta is None or actual == 0 else (eta - actual) / actual
                if err is not None and i >= 3:
                    errors.append(abs(err))
                print(f"{i + 1:4}  {'-' if eta is None else f'{eta:.2f}':>5}  {actual:8.2f}  "
                      f"{'-' if err is None else f'{err * 100:+.0f} %'}", flush=True)
            if errors:
                within = sum(1 for e in errors if e <= 0.30)
                print(f"from the 4th load: {within}/{len(errors)} within +-30 %, worst {max(errors) * 100:.0f} %")
        finally:
            stop(door, hogs)


if __name__ == "__main__":
    main()
