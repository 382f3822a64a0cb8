"""What the Python benchmarks share: finding the built binaries, calling the door, starting
`kevlaya-orch serve` on a configuration folder, and reading its event stream (GET /events)."""
import http.client, json, os, re, subprocess, sys, threading, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def built(name, sub=""):
    """A binary of build/ (Release), else build-asan/; exits when neither has it."""
    for b in ("build", "build-asan"):
        p = os.path.join(ROOT, b, sub, name)
        if os.path.exists(p):
            return p
    sys.exit(f"bench: {name} not built (build it, or pass its path)")


def request(port, method, path, body=None, timeout=600):
    """One call on a fresh connection: (status, lower-cased headers, body bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data


def chat(model, max_tokens=16):
    return {"model": model, "max_tokens": max_tokens, "messages": [{"role": "user", "content": "Once"}]}


def write_config(tmp, profiles, top=""):
    """kevlaya.yaml and profiles/NAME.yaml (text after `name:`) in `tmp`."""
    os.makedirs(f"{tmp}/profiles", exist_ok=True)
    os.makedirs(f"{tmp}/pipelines", exist_ok=True)
    for name, text in profiles.items():
        with open(f"{tmp}/profiles/{name}.yaml", "w") as f:
            f.write(f"name: {name}\n{text}")
    with open(f"{tmp}/kevlaya.yaml", "w") as f:
        f.write("profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n" + top)


def start_door(orch, tmp, wait_s=60):
    """`serve TMP/kevlaya.yaml --port 0`, logged to TMP/door.log: (process, port)."""
    log = open(f"{tmp}/door.log", "w")
    p = subprocess.Popen([orch, "serve", f"{tmp}/kevlaya.yaml", "--port", "0"], stdout=log, stderr=log)
    end = time.time() + wait_s
    while time.time() < end:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(f"{tmp}/door.log").read())
        if m:
            return p, int(m.group(1))
        time.sleep(0.05)
    p.kill()
    sys.exit("bench: the door did not start:\n" + open(f"{tmp}/door.log").read()[-3000:])


class Events:
    """The door's event stream, every event kept in arrival order (`items`, guarded by `cv`)."""

    def __init__(self, port):
        self.items, self.cv = [], threading.Condition()
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
        self.conn.request("GET", "/events")
        self.resp = self.conn.getresponse()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        try:
            for line in self.resp:
                if line.startswith(b"data: "):
                    with self.cv:
                        self.items.append(json.loads(line[6:]))
                        self.cv.notify_all()
        except (OSError, ValueError, http.client.HTTPException):
            pass

    def of_type(self, type_, since_ms=0):
        with self.cv:
            return [e for e in self.items if e.get("type") == type_ and e.get("at_ms", 0) >= since_ms]


def cpu_hogs(n):
    """n CPU-bound processes (a busy machine beside the door)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop(door, hogs=()):
    """Kills the hogs, then stops the door (SIGTERM: it drains and stops its children)."""
    for h in hogs:
        h.kill()
    door.terminate()
    door.wait(timeout=120)
