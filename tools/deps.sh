#!/usr/bin/env bash
# Installs the Debian bookworm packages kevlaya-orch builds with, only those that are missing.
set -euo pipefail
pkgs=(build-essential cmake ninja-build libboost-dev libboost-filesystem-dev nlohmann-json3-dev
      libyaml-cpp-dev libspdlog-dev catch2 libcli11-dev curl ccache)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "kevlaya: installing missing packages: ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
