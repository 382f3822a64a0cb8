#!/usr/bin/env bash
# Installs the Debian bookworm packages kevlaya-orch needs, only those that are missing.
#   tools/deps.sh build   what the product builds with (tools/setup.sh, the main job): nothing else
#   tools/deps.sh         also what the tests use (tools/test.sh): catch2; dpkg-dev and lintian (the
#                         Debian package's test, tools/package_test.sh); python3-yaml (the Kubernetes
#                         chart's render test and the scale-out simulation, tools/k8s/); and Debian's
#                         chromium, used only by the status page's browser tests (tests/e2e/ui/):
#                         optional, when it cannot be installed those tests report Skipped.
set -euo pipefail
mode=${1:-test}
case "$mode" in build|test) ;; *) echo "usage: tools/deps.sh [build|test]" >&2; exit 2 ;; esac
pkgs=(build-essential cmake ninja-build libboost-dev libboost-filesystem-dev nlohmann-json3-dev
      libyaml-cpp-dev libspdlog-dev libcli11-dev libsqlite3-dev libzstd-dev libmimalloc-dev curl ccache)
[ "$mode" = build ] || pkgs+=(catch2 dpkg-dev lintian python3-yaml)
missing() {
  local out=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || out+=("$p")
  done
  echo "${out[*]}"
}
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
updated=
install() {
  [ -n "$updated" ] || "${sudo_cmd[@]}" apt-get update -qq
  updated=1
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "$@"
}
read -ra need <<<"$(missing "${pkgs[@]}")"
if ((${#need[@]})); then
  echo "kevlaya: installing missing packages: ${need[*]}" >&2
  install "${need[@]}"
fi
if [ "$mode" = test ] && [ "${KEVLAYA_NO_CHROMIUM:-}" != 1 ] && [ -n "$(missing chromium)" ] && ! command -v chromium >/dev/null; then
  echo "kevlaya: installing chromium (for the status page's browser tests only)" >&2
  install chromium || echo "kevlaya: chromium could not be installed: the browser tests will be skipped" >&2
fi
