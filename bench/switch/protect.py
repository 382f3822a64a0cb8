#!/usr/bin/env python3
"""A protected model with a 4k-token cached prompt (evict: protect) and one stray request: kev
(protected: idle_s 2, max_wait_s 30) answers an agent that sends the same ~4,000-token prompt again
and again for --seconds, reading each answer for 0.3 s (llama-server's prompt cache makes each
prefill cheap); 2 s in, one request for laya arrives. Prints, per kev call, its prompt tokens, the
tokens it found cached and its duration; when laya was answered; and the switch records. The target: no eviction of kev while the agent uses it
(every kev call after the first finds its prompt cached), laya served once kev has been idle for
idle_s, within max_wait_s.

  bench/switch/protect.py [--seconds 6] [--policy protect|normal] [--orch BIN] [--tiny BIN]

Uses the real llama-server ($KEVLAYA_LLAMA_SERVER, else var/llama-server/llama-server)."""
import argparse, json, os, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from door import ROOT, built, chat, request, start_door, stop, write_config  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--policy", choices=("protect", "normal"), default="protect", help="normal: the same run unprotected")
    ap.add_argument("--orch")
    ap.add_argument("--tiny")
    a = ap.parse_args()
    orch = a.orch or built("kevlaya-orch")
    tiny = a.tiny or built("kevlaya-tiny-gguf", "tools")
    server = os.path.realpath(os.environ.get("KEVLAYA_LLAMA_SERVER", os.path.join(ROOT, "var/llama-server/llama-server")))
    words = " ".join(f"w{i % 97}" for i in range(2000))  # about 4,000 tokens
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([tiny, "model", "--out", f"{tmp}/m.gguf", "--n-ctx", "8192"], check=True, stdout=subprocess.DEVNULL)
        common = f"binary: {server}\nmodel: {tmp}/m.gguf\nngl: 0\nctx: 8192\nparallel: 1\nshared_base: false\n"
        write_config(tmp, {"kev": common + f"evict: {{policy: {a.policy}, idle_s: 2, max_wait_s: 30}}\n", "laya": common},
                     "residency: rotate\n")
        door, port = start_door(orch, tmp)
        try:
            t0 = time.time()
            laya = {}

            def stray():
                time.sleep(2)
                st, _, _ = request(port, "POST", "/v1/chat/completions", chat("laya", 4))
                laya.update(status=st, at=time.time() - t0)

            th = threading.Thread(target=stray)
            th.start()
            print("call  prompt  cached  seconds")
            body = chat("kev", 4)
            body["messages"][0]["content"] = words
            i = 0
            while time.time() - t0 < a.seconds:
                i += 1
                c0 = time.time()
                st, _, data = request(port, "POST", "/v1/chat/completions", body)
                if st != 200:
                    sys.exit(f"bench: kev answered {st}: {data[:300]!r}")
                t = json.loads(data).get("timings", {})
                print(f"{i:4}  {t.get('prompt_n', 0) + t.get('cache_n', 0):6}  {t.get('cache_n', '-'):>6}  {time.time() - c0:7.2f}",
                      flush=True)
                time.sleep(0.3)  # the agent reads the answer
            kev_done = time.time() - t0
            th.join()
            _, _, data = request(port, "GET", "/status")
            sw = [(s["from"] or "-", s["to"], s.get("reason", "")) for s in json.loads(data)["recent_switches"]]
            print(f"kev's calls ended at {kev_done:.1f} s; laya ({laya.get('status')}) answered at {laya.get('at', 0):.1f} s")
            print("switches: " + ", ".join(f"{f}->{t}" + (f" ({r})" if r else "") for f, t, r in sw))
        finally:
            stop(door)


if __name__ == "__main__":
    main()
