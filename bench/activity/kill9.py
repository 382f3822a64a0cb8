# kill -9 of `kevlaya-orch serve` under load (4 clients, stand-in child), N times over one
# state_dir: PRAGMA integrity_check after each kill and the records lost at each (docs/benchmarks.md,
# "Request history").   python3 bench/activity/kill9.py BUILD_DIR [N=20]
import json, os, re, signal, sqlite3, subprocess, sys, tempfile, threading, time, urllib.request
B = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build-asan"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 20
root = tempfile.mkdtemp(prefix="kevlaya-kill9-")
os.makedirs(root + "/profiles"); os.makedirs(root + "/pipelines")
open(root + "/profiles/kev.yaml", "w").write(
    "name: kev\nbinary: %s/tools/llama-server-standin\nmodel: %s/test-models/stories-shaped.gguf\nngl: 0\nctx: 256\nparallel: 4\nshared_base: false\n" % (B, B))
body = json.dumps({"model": "kev", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}).encode()
answered = kept_before = worst = 0
worst_s = 0.0
for k in range(N):
    d = "%s/door-%d" % (root, k); os.makedirs(d)
    open(d + "/kevlaya.yaml", "w").write("profiles_dir: %s/profiles\npipelines_dir: %s/pipelines\nstate_dir: %s/state\nlog_dir: %s/logs\n" % (root, root, root, root))
    log = open(d + "/serve.log", "w")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    p = subprocess.Popen([B + "/kevlaya-orch", "serve", d + "/kevlaya.yaml", "--port", "0"], stdout=log, stderr=subprocess.STDOUT, env=env)
    port = None
    for _ in range(500):
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(d + "/serve.log").read())
        if m: port = int(m.group(1)); break
        time.sleep(0.02)
    ok = [0]; stop = [False]; lock = threading.Lock()
    def client():
        while not stop[0]:
            try:
                r = urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % port, body, {"Content-Type": "application/json"}), timeout=10)
                r.read()
                if r.status == 200:
                    with lock: ok[0] += 1
            except Exception:
                pass
    ts = [threading.Thread(target=client) for _ in range(4)]
    t0 = time.time()
    for t in ts: t.start()
    target = 50 + 13 * k
    while ok[0] < target and time.time() - t0 < 60: time.sleep(0.005)
    before = ok[0]; rate = before / (time.time() - t0)
    os.kill(p.pid, signal.SIGKILL); p.wait()
    stop[0] = True
    for t in ts: t.join()
    db = sqlite3.connect(root + "/state/activity.db")
    integ = db.execute("PRAGMA integrity_check").fetchone()[0]
    kept = db.execute("SELECT count(*) FROM requests").fetchone()[0]
    db.close()
    rec = kept - kept_before; kept_before = kept
    lost = max(0, before - rec); answered += before
    worst = max(worst, lost); worst_s = max(worst_s, lost / max(rate, 1))
    print("kill %2d: answered %4d (%.0f/s), recorded %4d, lost %d, integrity %s" % (k + 1, before, rate, rec, lost, integ), flush=True)
print("%d kills: %d answered, %d kept, worst loss %d records (%.3f s of traffic)" % (N, answered, kept_before, worst, worst_s))
subprocess.run(["rm", "-rf", root])
