#!/usr/bin/env bash
# Makes Debian's packaged llama-server (testing, else unstable) runnable on this machine without
# touching the system: apt-get with a private state folder and sources list downloads the packages,
# dpkg-deb unpacks them with that suite's C/C++ runtime into a private prefix, and small wrappers exec
# each tool through the prefix's own dynamic loader (so a wrapper's pid is the tool's pid).
#
#   tools/llama-server/fetch.sh [PREFIX]      (default PREFIX: <repo>/var/llama-server, git-ignored)
#
# KEVLAYA_DEBIAN_MIRROR overrides the Debian mirror (default: the one this machine's apt uses).
# Writes PREFIX/{llama-server,llama-finetune,llama-quantize,llama-tokenize}; prints the server's
# version line. A second run is a no-op (the .complete stamp names the layout, the wrapper template's
# hash and the packages).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prefix=${1:-$here/../../var/llama-server}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)

die() {
  echo "fetch.sh: $*" >&2
  exit 1
}

tools=(llama-server llama-finetune llama-quantize llama-tokenize)
# llama-server and llama-quantize are in -tools, llama-finetune in -examples, llama-tokenize in
# -tools-extra; the rest is what they link (libssl3t64 needs libzstd1 and zlib1g).
pkgs=(llama.cpp-tools llama.cpp-examples llama.cpp-tools-extra libllama0 libggml0
      libc6 libstdc++6 libgcc-s1 libgomp1 libssl3t64 zlib1g libzstd1)
suites=(testing unstable)
layout=1  # bump when the prefix's layout changes, so existing prefixes are redone
key="$layout $(sha256sum <"$here/wrapper.sh.in" | cut -c1-16) ${pkgs[*]}"

print_version() {
  local v
  v=$("$prefix/llama-server" --version 2>&1 | grep -m1 '^version') ||
    die "the unpacked llama-server in $prefix does not start (try: $prefix/llama-server --version)"
  echo "llama-server $v ($prefix/llama-server)"
}

# Fast path: nothing to do when a complete prefix made by this very script is there.
if [[ -f $prefix/.complete && "$(<"$prefix/.complete")" == "$key" ]]; then
  print_version
  exit 0
fi

[[ $(uname -m) == x86_64 ]] || die "only x86_64 is supported (this machine is $(uname -m)); build llama-server from source instead"
if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
  die "apt-get and dpkg-deb are needed (a Debian or Ubuntu machine); build llama-server from source instead"
fi

exec 9>"$prefix/.lock"
flock -w 600 9 || die "another fetch.sh holds $prefix/.lock for more than 10 minutes"
if [[ -f $prefix/.complete && "$(<"$prefix/.complete")" == "$key" ]]; then
  print_version  # a concurrent run finished it while we waited
  exit 0
fi

# The mirror and keyring this machine's apt already uses (deb822 or one-line format).
mirror_uri() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f")
    [[ -n $uri ]] && { echo "$uri"; return; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f $f ]] || continue
    uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /=/ && $i !~ /\]$/) {
                               if ($i !~ /security/ && $i ~ /debian/) print $i; break } }' "$f" | head -n1)
    [[ -n $uri ]] && { echo "$uri"; return; }
  done
  echo "http://deb.debian.org/debian"
}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[[ -r $keyring ]] || die "Debian's archive keyring $keyring is missing (apt-get install debian-archive-keyring)"
uri=${KEVLAYA_DEBIAN_MIRROR:-$(mirror_uri)}

apt_dir=$prefix/.apt
log=$apt_dir/log
rm -rf "$apt_dir"
mkdir -p "$apt_dir"/{lists/partial,cache/archives/partial,sources.list.d,preferences.d,debs}
touch "$apt_dir/status"
apt_opts=(-o "Dir::State=$apt_dir" -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::State::status=$apt_dir/status"
          -o "Dir::Cache=$apt_dir/cache" -o "Dir::Etc::SourceList=/dev/null"
          -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d" -o "Dir::Etc::Preferences=/dev/null"
          -o "Dir::Etc::PreferencesParts=$apt_dir/preferences.d" -o "Debug::NoLocking=1"
          -o "APT::Sandbox::User=$(id -un)" -o "Acquire::Languages=none" -o "Acquire::http::Timeout=30"
          -o "APT::Architecture=amd64" -o "APT::Architectures::=amd64" -q)

# Downloads every package from one suite into $apt_dir/debs; fails if any is missing.
download_from() {
  local suite=$1
  rm -f "$apt_dir"/debs/*.deb "$apt_dir"/lists/*_* 2>/dev/null || true
  printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' "$uri" "$suite" "$keyring" \
    >"$apt_dir/sources.list.d/llama.sources"
  echo "== $suite" >>"$log"
  apt-get "${apt_opts[@]}" update >>"$log" 2>&1 || return 1
  (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download "${pkgs[@]}") >>"$log" 2>&1
}
got=
for suite in "${suites[@]}"; do
  if download_from "$suite"; then got=$suite; break; fi
done
[[ -n $got ]] || die "cannot download Debian's llama.cpp packages from $uri (suites: ${suites[*]}); apt's output is in $log"

# Unpack into a fresh tree, then swap it in, so an interrupted run never leaves half a prefix.
rm -rf "$prefix/root.new"
mkdir -p "$prefix/root.new"
for deb in "$apt_dir"/debs/*.deb; do
  dpkg-deb -x "$deb" "$prefix/root.new" || die "cannot unpack $deb"
done
libs=$prefix/root.new/usr/lib/x86_64-linux-gnu
[[ -x $libs/ld-linux-x86-64.so.2 && -d $libs/ggml/backends0 ]] ||
  die "the $got packages have an unexpected layout (no loader or no ggml/backends0 in $libs)"
for t in "${tools[@]}"; do
  [[ -x $prefix/root.new/usr/bin/$t ]] || die "the $got packages no longer contain usr/bin/$t"
done
rm -rf "$prefix/root"
mv "$prefix/root.new" "$prefix/root"
(cd "$apt_dir/debs" && ls) >"$prefix/packages.txt"
rm -rf "$apt_dir/lists" "$apt_dir/cache"

for t in "${tools[@]}"; do
  sed "s/@TOOL@/$t/" "$here/wrapper.sh.in" >"$prefix/$t.new"
  chmod +x "$prefix/$t.new"
  mv "$prefix/$t.new" "$prefix/$t"
done
echo "$key" >"$prefix/.complete"
echo "fetch.sh: unpacked Debian $got's llama.cpp into $prefix" >&2
print_version
