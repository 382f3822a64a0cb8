# How long llama-server takes to stop a generation once its connection is closed (what the door's
# POST /admin/requests/{id}/cancel does): its own stdout, read unbuffered (docs/benchmarks.md,
# "Request history").   python3 bench/activity/cancel_close.py LLAMA_SERVER MODEL.gguf
import json, os, select, socket, subprocess, sys, time
srv = subprocess.Popen([sys.argv[1], "-m", sys.argv[2], "--port", "18779", "-c", "4096", "-ngl", "0", "-np", "1"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
fd = srv.stdout.fileno(); os.set_blocking(fd, False)
buf = b""
def read_for(needle, deadline):
    global buf
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.001)
        if r:
            chunk = os.read(fd, 65536)
            buf += chunk
            if needle in buf: return time.time()
    return None
read_for(b"listening", time.time() + 60)
res = []
for i in range(5):
    buf = b""
    body = json.dumps({"stream": True, "max_tokens": 4000, "ignore_eos": True, "messages": [{"role": "user", "content": "Once"}]})
    s = socket.create_connection(("127.0.0.1", 18779))
    s.sendall(("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)).encode())
    d = b""
    while d.count(b"data: {") < 20: d += s.recv(65536)
    t0 = time.time(); s.close()
    t1 = read_for(b"cancel task", t0 + 10)
    res.append((t1 - t0) * 1000 if t1 else -1)
    time.sleep(0.3)
srv.terminate(); srv.wait()
print(" ".join("%.1f" % r for r in res), "ms; median %.1f ms" % sorted(res)[len(res) // 2])
