"""Real `kevlaya-orch serve` doors with stand-in children on loopback, for tools/k8s's tests and
the scale-out simulation (Python 3 standard library only)."""
import http.client
import json
import os
import signal
import socket
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Refused(Exception):
    """The door did not accept the connection: nothing was sent (safe to try another endpoint)."""


def request(port, method, path, body=None, timeout=30.0):
    """(status, body text) of one request on a fresh connection; Refused when it cannot connect."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        try:
            conn.connect()
        except ConnectionRefusedError as e:
            raise Refused(str(e))
        data = json.dumps(body) if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        conn.request(method, path, body=data, headers=headers)
        res = conn.getresponse()
        return res.status, res.read().decode("utf-8", "replace")
    finally:
        conn.close()


def samples(text):
    """Prometheus text -> {name: [(labels dict, value)]}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, labels = head.partition("{")
        parsed = {}
        for part in labels.rstrip("}").split('",') if labels else []:
            k, _, v = part.partition('="')
            parsed[k.strip(",")] = v.rstrip('"')
        out.setdefault(name, []).append((parsed, float(value)))
    return out


def write_tiny_gguf(tool, path):
    if not os.path.exists(path):
        subprocess.run([tool, "model", "--out", path], check=True, stdout=subprocess.DEVNULL)
    return path


class Door:
    """One node: a door in `workdir` rotating `models` (one resident at a time) on stand-in children."""

    def __init__(self, workdir, orch, standin, gguf, models, load_ms=300, token_ms=5, extra="", parallel=1):
        """`extra`: more kevlaya.yaml text; `parallel`: each profile's slots."""
        self.dir, self.orch, self.standin, self.gguf = workdir, orch, standin, gguf
        self.load_ms, self.token_ms, self.parallel = load_ms, token_ms, parallel
        os.makedirs(os.path.join(workdir, "profiles"), exist_ok=True)
        os.makedirs(os.path.join(workdir, "pipelines"), exist_ok=True)
        with open(os.path.join(workdir, "kevlaya.yaml"), "w") as f:
            f.write("profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n"
                    "residency: rotate\n" + extra)
        for m in models:
            self.write_profile(m)
        self.port = free_port()
        self.log = open(os.path.join(workdir, "door.log"), "w")
        self.proc = subprocess.Popen([orch, "serve", os.path.join(workdir, "kevlaya.yaml"), "--port", str(self.port)],
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def write_profile(self, name):
        with open(os.path.join(self.dir, "profiles", name + ".yaml"), "w") as f:
            f.write("name: %s\nbinary: %s\nmodel: %s\nngl: 0\nctx: %d\nparallel: %d\nshared_base: false\n"
                    "extra_args: [--fake-load-ms, '%d', --fake-token-ms, '%d']\n"
                    % (name, self.standin, self.gguf, 256 * self.parallel, self.parallel, self.load_ms, self.token_ms))

    def wait_up(self, timeout=30.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("door exited: see %s/door.log" % self.dir)
            try:
                if request(self.port, "GET", "/health", timeout=2)[0] == 200:
                    return
            except (Refused, OSError):
                pass
            time.sleep(0.05)
        raise RuntimeError("door on %d did not come up" % self.port)

    def add_model(self, name):
        """A new profile file, then POST /admin/reload: served without a restart."""
        self.write_profile(name)
        return request(self.port, "POST", "/admin/reload", {})

    def terminate(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout=30.0):
        self.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
