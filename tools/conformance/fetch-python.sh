#!/usr/bin/env bash
# Makes a private Python for llama.cpp's server tests from Debian testing, without touching the
# system: the suite needs the `openai` package, and testing's python3-openai needs pydantic-core built
# for testing's Python, so the interpreter and every test dependency come from that one suite.
# apt-get with a private state folder resolves and downloads them, dpkg-deb unpacks them into PREFIX,
# and PREFIX/python runs the interpreter through the prefix's own dynamic loader.
#
#   tools/conformance/fetch-python.sh [PREFIX]     (default PREFIX: <repo>/var/conformance/python)
#
# KEVLAYA_DEBIAN_MIRROR overrides the Debian mirror (default: http://deb.debian.org/debian).
# A second run is a no-op (the .complete stamp names the package list).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prefix=${1:-$here/../../var/conformance/python}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
die() { echo "fetch-python.sh: $*" >&2; exit 1; }

# The suite's requirements.txt, as Debian packages.
pkgs=(python3 python3-pytest python3-requests python3-aiohttp python3-wget python3-prometheus-client
      python3-numpy python3-openai)
key="1 ${pkgs[*]}"
if [[ -f $prefix/.complete && "$(<"$prefix/.complete")" == "$key" ]]; then
  "$prefix/python" -c 'import openai, pytest, requests, numpy; print("python", __import__("sys").version.split()[0], "openai", openai.__version__)'
  exit 0
fi
if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then die "apt-get and dpkg-deb are needed"; fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[[ -r $keyring ]] || die "Debian's archive keyring $keyring is missing"
uri=${KEVLAYA_DEBIAN_MIRROR:-http://deb.debian.org/debian}

apt_dir=$prefix/.apt
rm -rf "$apt_dir"
mkdir -p "$apt_dir"/{lists/partial,cache/archives/partial,sources.list.d,preferences.d}
touch "$apt_dir/status"  # empty: apt resolves the whole closure, libc included
printf 'Types: deb\nURIs: %s\nSuites: testing\nComponents: main\nSigned-By: %s\n' "$uri" "$keyring" \
  >"$apt_dir/sources.list.d/testing.sources"
apt_opts=(-o "Dir::State=$apt_dir" -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::State::status=$apt_dir/status"
          -o "Dir::Cache=$apt_dir/cache" -o "Dir::Etc::SourceList=/dev/null"
          -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d" -o "Dir::Etc::Preferences=/dev/null"
          -o "Dir::Etc::PreferencesParts=$apt_dir/preferences.d" -o "Debug::NoLocking=1"
          -o "APT::Sandbox::User=$(id -un)" -o "Acquire::Languages=none" -o "APT::Architecture=amd64"
          -o "APT::Architectures::=amd64" -o "APT::Install-Recommends=false" -q)
log=$prefix/fetch.log
apt-get "${apt_opts[@]}" update >"$log" 2>&1 || die "apt-get update failed; see $log"
apt-get "${apt_opts[@]}" -y --download-only install "${pkgs[@]}" >>"$log" 2>&1 ||
  die "apt-get could not download the packages; see $log"

rm -rf "$prefix/root.new"
mkdir -p "$prefix/root.new"
for deb in "$apt_dir"/cache/archives/*.deb; do
  dpkg-deb -x "$deb" "$prefix/root.new" || die "cannot unpack $deb"
done
libs=$prefix/root.new/usr/lib/x86_64-linux-gnu
[[ -x $libs/ld-linux-x86-64.so.2 ]] || die "no dynamic loader in the unpacked packages"
py=$(find "$prefix/root.new/usr/bin" -maxdepth 1 -regex '.*/python3\.[0-9]+' -printf '%f\n' | sort -V | tail -n1)
[[ -n $py ]] || die "no python3.N in the unpacked packages"
rm -rf "$prefix/root"
mv "$prefix/root.new" "$prefix/root"
(cd "$apt_dir/cache/archives" && ls -- *.deb) >"$prefix/packages.txt"
rm -rf "$apt_dir"

cat >"$prefix/python" <<WRAP
#!/usr/bin/env bash
# Written by tools/conformance/fetch-python.sh: Debian testing's $py through its own loader.
d=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
libs=\$d/root/usr/lib/x86_64-linux-gnu
export PYTHONNOUSERSITE=1  # the prefix comes from the path below: no PYTHONHOME to leak into children
exec "\$libs/ld-linux-x86-64.so.2" --library-path "\$libs:\$libs/blas:\$libs/lapack:\$libs/openblas-pthread" "\$d/root/usr/bin/$py" "\$@"
WRAP
chmod +x "$prefix/python"
echo "$key" >"$prefix/.complete"
"$prefix/python" -c 'import openai, pytest, requests, numpy; print("python", __import__("sys").version.split()[0], "openai", openai.__version__)'
