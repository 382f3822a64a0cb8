#!/usr/bin/env python3
"""The switch figures of bench/device/run.sh: two models of --mib MiB (seeds 1 and 2, so two files
the page cache holds apart), `kevlaya-orch serve` with both (ngl all, residency rotate), calls
alternating between them; each switch record (GET /status) gives stop, VRAM wait (NVML: until the
stopped child's memory is free again), spawn to listening and total. Prints each and the medians."""
import argparse, http.client, json, os, re, statistics, subprocess, sys, tempfile, time


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--orch", required=True)
    ap.add_argument("--tiny", required=True)
    ap.add_argument("--switches", type=int, default=10)
    ap.add_argument("--mib", type=int, default=3900)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/tmp")) as tmp:
        os.makedirs(f"{tmp}/profiles")
        os.makedirs(f"{tmp}/pipelines")
        t0 = time.time()
        for i, name in enumerate(("kev", "laya")):
            subprocess.run([a.tiny, "model", "--out", f"{tmp}/{name}.gguf", "--big-mib", str(a.mib), "--seed", str(i + 1)],
                           check=True, stdout=subprocess.DEVNULL)
            with open(f"{tmp}/profiles/{name}.yaml", "w") as f:
                f.write(f"name: {name}\nbinary: {a.server}\nmodel: {tmp}/{name}.gguf\nngl: all\nctx: 4096\nparallel: 1\n")
        print(f"models: 2 x {a.mib} MiB written in {time.time() - t0:.0f} s", flush=True)
        with open(f"{tmp}/kevlaya.yaml", "w") as f:
            f.write("profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n"
                    "residency: rotate\nscheduling:\n  switch_ahead: false\n")
        log = open(f"{tmp}/door.log", "w")
        door = subprocess.Popen([a.orch, "serve", f"{tmp}/kevlaya.yaml", "--port", "0"], stdout=log, stderr=log)
        try:
            port = None
            for _ in range(1200):
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(f"{tmp}/door.log").read())
                if m:
                    port = int(m.group(1))
                    break
                time.sleep(0.05)
            if not port:
                sys.exit("bench/device: the door did not start:\n" + open(f"{tmp}/door.log").read()[-2000:])
            for i in range(a.switches + 1):
                model = ("kev", "laya")[i % 2]
                status, data = request(port, "POST", "/v1/chat/completions",
                                       {"model": model, "max_tokens": 4, "messages": [{"role": "user", "content": "Once"}]})
                if status != 200:
                    sys.exit(f"bench/device: {model} answered {status}: {data[:400]!r}\n" + open(f"{tmp}/door.log").read()[-3000:])
            _, data = request(port, "GET", "/status")
            recs = [r for r in json.loads(data)["recent_switches"] if r.get("from")]
            cols = ("stop", "vram_wait", "spawn_to_listening", "total")
            print("from   to     " + "  ".join(f"{c:>18}" for c in cols) + "  (ms)")
            for r in recs:
                print(f"{r['from']:6} {r['to']:6} " + "  ".join(f"{r['phases_ms'][c]:18}" for c in cols))
            if recs:
                print("median        " + "  ".join(f"{statistics.median(r['phases_ms'][c] for r in recs):18.0f}" for c in cols))
        finally:
            door.terminate()
            door.wait(timeout=120)


if __name__ == "__main__":
    main()
