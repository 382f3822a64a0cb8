#!/bin/sh
# Door memory while a remote sends a huge non-streamed answer (docs/benchmarks.md, "Bounded
# answers"): a scripted remote (python3, one 64 KiB buffer written over and over) answers
# /v1/chat/completions with SIZE_MIB of JSON (Content-Length) and /health; a door with a `remote`
# profile for it relays the answer to curl (-o /dev/null). Prints the door's RSS before, its peak
# (VmHWM) and the bytes curl received; with ERROR=1 the remote answers 500 instead (-> 502).
# Usage: bench/remote/huge_answer.sh [BUILD_DIR] [SIZE_MIB] [ERROR]
set -eu
BUILD=$(cd "${1:-build-asan}" && pwd); MIB=${2:-1024}; ERR=${3:-0}
ORCH=$BUILD/kevlaya-orch
W=$(mktemp -d); trap 'kill $REMOTE $DOOR 2>/dev/null; rm -rf "$W"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
RP=$(free_port); DP=$(free_port)
cat > $W/remote.py <<P
import http.server, sys
N = $MIB << 20
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
    def do_POST(self):
        n = 64 if b"small" in self.rfile.read(int(self.headers.get("Content-Length", 0))) else N
        self.send_response(500 if $ERR and n == N else 200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(n)); self.end_headers()
        buf = b"a" * 65536; self.wfile.write(b'{"x":"'); left = n - 8
        try:
            while left > 0:
                self.wfile.write(buf[:min(left, len(buf))]); left -= min(left, len(buf))
            self.wfile.write(b'"}')
        except (BrokenPipeError, ConnectionResetError): pass
http.server.ThreadingHTTPServer(("127.0.0.1", $RP), H).serve_forever()
P
python3 $W/remote.py & REMOTE=$!
mkdir -p $W/profiles $W/pipelines
printf 'name: big\nbackend: remote\nurl: http://127.0.0.1:%s\nmodel: kev\n' $RP > $W/profiles/big.yaml
printf 'profiles_dir: profiles\npipelines_dir: pipelines\nstate_dir: state\nlog_dir: logs\n' > $W/kevlaya.yaml
$ORCH serve $W/kevlaya.yaml --port $DP 2> $W/door.log & DOOR=$!
until curl -fsS http://127.0.0.1:$DP/health >/dev/null 2>&1; do sleep 0.1; done
rss() { awk -v k="$1:" '$1 == k {print $2}' /proc/$DOOR/status; }
# A small call, until the remote's first health check has passed (503 before it).
i=0
until [ "$(curl -sS -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d '{"model":"big","max_tokens":1,"messages":[{"role":"user","content":"small"}]}' http://127.0.0.1:$DP/v1/chat/completions)" = 200 ]; do
  i=$((i + 1)); [ $i -lt 300 ] || { echo "the remote never became ready" >&2; exit 1; }; sleep 0.1
done
echo "door RSS after a small call: $(rss VmRSS) KiB"
T0=$(date +%s.%N)
OUT=$(curl -sS -o /dev/null -w '%{http_code} %{size_download}' -H 'Content-Type: application/json' \
  -d '{"model":"big","max_tokens":1,"messages":[{"role":"user","content":"x"}]}' http://127.0.0.1:$DP/v1/chat/completions)
T1=$(date +%s.%N)
echo "answer of $MIB MiB (status, bytes received): $OUT in $(echo "$T1 - $T0" | bc) s"
echo "door peak RSS (VmHWM): $(rss VmHWM) KiB; RSS now: $(rss VmRSS) KiB"
