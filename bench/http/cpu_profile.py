#!/usr/bin/env python3
"""Where the door's CPU goes, sampled by perf: one client sends kept-alive chat calls (`max_tokens: 8`,
non-streamed and streamed in turn, one at a time), alternating between the door and nginx in front
of the same stand-in child, as bench_door.py --keep-alive does; `perf record -g --call-graph dwarf`
samples the door (every thread, kernel and user) for --seconds, and the samples are sorted into the
parts of a call by their stacks (a sample in the kernel by the system call it serves). First the CPU
time per call of the door and of nginx over --seconds of the same calls, unsampled.

  bench/http/cpu_profile.py [--build DIR] [--orch BIN] [--seconds 8] [--out perf.data]

Needs Debian's linux-perf and nginx, and perf_event_paranoid <= 2 (a process's own samples). The
shares are of all the door's samples; a share times the CPU per call is that part's time per call."""
import argparse, collections, os, re, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_door  # noqa: E402

# (part, test on the sample): the first that matches names a sample. `kernel` is the system call the
# kernel's frames serve (the first user frame); `leaf` the user frame sampled; `stack` every frame.
PARTS = [
    ("kernel: send (to the child, to the client)", lambda k, leaf, dso, stack: k and "send" in k),
    ("kernel: recv", lambda k, leaf, dso, stack: k and "recv" in k),
    ("kernel: epoll_wait (sleep, wake-up)", lambda k, leaf, dso, stack: k and "epoll_wait" in k),
    ("kernel: epoll_ctl", lambda k, leaf, dso, stack: k and "epoll_ctl" in k),
    ("kernel: history file (SQLite I/O)", lambda k, leaf, dso, stack: k and re.search(r"pwrite|pread|fcntl|fdatasync", k)),
    ("kernel: other", lambda k, leaf, dso, stack: k is not None),
    ("user: history writer thread (SQLite)", lambda k, leaf, dso, stack: "Recorder::run" in stack),
    ("user: malloc/free", lambda k, leaf, dso, stack: "mimalloc" in dso or
     re.search(r"malloc|free|operator new|operator delete|tcache|unlink_chunk|_int_", leaf)),
    ("user: system-call entry and return", lambda k, leaf, dso, stack:
     re.match(r"(epoll_wait|epoll_ctl|__libc_recv|__libc_send|__libc_sendmsg|__GI_epoll_ctl|__libc_pwrite)", leaf)),
    ("user: admission and release (scheduler)", lambda k, leaf, dso, stack: re.search(r"admit|on_release|reschedule", stack)),
    ("user: Beast's HTTP parsers", lambda k, leaf, dso, stack: re.search(r"basic_parser|parse_buffered", stack)),
    ("user: JSON scans (the request's model and stream, the answer's timings)", lambda k, leaf, dso, stack:
     re.search(r"timings_of|parse_model_call|Scanner|scan_json", stack)),
    ("user: record, metrics, in-flight list", lambda k, leaf, dso, stack:
     re.search(r"Metrics|note_request|finish_record|start_record|InFlight", stack)),
    ("user: the rest (Asio, coroutines, the relay, strings)", lambda k, leaf, dso, stack: True),
]


def parts_of(script_text):
    """Counts of samples per part from `perf script -F tid,ip,sym,dso` output."""
    counts = collections.Counter()
    for block in script_text.split("\n\n"):
        frames = []
        for line in block.splitlines():
            if not line.startswith("\t"):
                continue
            fields = line.strip().split(None, 1)
            if len(fields) < 2:
                continue
            m = re.match(r"(.*) \((.*)\)$", fields[1])
            frames.append((m.group(1), m.group(2)) if m else (fields[1], ""))
        if not frames:
            continue
        leaf, dso = frames[0]
        in_kernel = "kernel" in dso
        user = [f for f in frames if "kernel" not in f[1]]
        kernel = (user[0][0] if user else "?") if in_kernel else None
        stack = " ".join(f[0] for f in frames)
        counts[next(name for name, test in PARTS if test(kernel, leaf, dso, stack))] += 1
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(bench_door.ROOT, "build"))
    ap.add_argument("--model", default=os.path.join(bench_door.ROOT, "..", "shared", "models", "stories260K.gguf"))
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--out", default=None, help="keep perf.data here (default: a temporary folder)")
    ap.add_argument("--orch", default=None, help="another kevlaya-orch to profile (default: the build's)")
    a = ap.parse_args()
    bench_door.KEEP_ALIVE = True
    server = os.path.join(a.build, "tools", "llama-server-standin")
    orch = a.orch or os.path.join(a.build, "kevlaya-orch")
    with tempfile.TemporaryDirectory() as d:
        bench_door.write_config(d, server, a.model, 16)
        procs = []
        try:
            door, dport = bench_door.start_door(orch, f"{d}/kevlaya.yaml")
            procs.append(door)
            direct, child = bench_door.start_direct(server, os.path.abspath(a.model), 16)
            procs.append(direct)
            nginx, nport = bench_door.start_nginx(d, child)
            procs.append(nginx)
            import http.client
            c = http.client.HTTPConnection("127.0.0.1", dport, timeout=120)
            c.request("POST", "/admin/load/kev")
            c.getresponse().read()
            body = {"model": "kev", "messages": bench_door.conversation(0), "max_tokens": 8, "temperature": 0}
            sbody = dict(body, stream=True)
            stop = threading.Event()
            calls = [0]

            def load():
                while not stop.is_set():
                    for port in (dport, nport):
                        bench_door.post(port, "/v1/chat/completions", body)
                        bench_door.post(port, "/v1/chat/completions", sbody, True)
                    calls[0] += 2
            t = threading.Thread(target=load)
            t.start()
            time.sleep(2)  # warm
            # CPU per call first, unsampled (perf's stack copies would count as the door's time), then the samples.
            cpu0 = {p.pid: bench_door.cpu_s(p.pid) for p in (door, nginx)}
            n0 = calls[0]
            time.sleep(a.seconds)
            n = calls[0] - n0
            cpu = {pid: (bench_door.cpu_s(pid) - was) / n * 1e6 for pid, was in cpu0.items()}
            data = a.out or f"{d}/perf.data"
            subprocess.run(["perf", "record", "-q", "-F", "4000", "--call-graph", "dwarf,16384", "-p", str(door.pid),
                            "-o", data, "--", "sleep", str(a.seconds)], check=True)
            stop.set()
            t.join()
            text = subprocess.run(["perf", "script", "-i", data, "-F", "tid,ip,sym,dso"], check=True,
                                  capture_output=True, text=True).stdout
        finally:
            for p in procs:
                p.terminate(); p.wait(30)
    counts = parts_of(text)
    total = sum(counts.values())
    print(f"door CPU {cpu[door.pid]:.0f} us per call, nginx {cpu[nginx.pid]:.0f} us (over {n} calls each, "
          f"unsampled); then {total} samples of the door")
    print("| part of the door's CPU | share | per call |\n|---|---|---|")
    for name, k in sorted(counts.items(), key=lambda x: -x[1]):
        print(f"| {name} | {100 * k / total:.1f} % | {cpu[door.pid] * k / total:.0f} µs |")


if __name__ == "__main__":
    sys.exit(main())
