#!/usr/bin/env bash
# Builds the Debian package from a Release configuration, unpacks it into a throwaway root, runs the
# packaged kevlaya-orch from there (--version, check of the packaged /etc/kevlaya) and lintian.
#   tools/package_test.sh [BUILD_DIR]     (default: build-deb; the ctest entry "package:deb" runs it)
# Exit 4 (ctest: Skipped) with the reason when a packaging tool is missing (tools/deps.sh installs them).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "${1:-$src/build-deb}" && cd "${1:-$src/build-deb}" && pwd)
skip() { echo "SKIPPED: $*" >&2; exit 4; }
fail() { echo "package test: $*" >&2; exit 1; }
for tool in cpack dpkg-deb dpkg-shlibdeps gzip; do
  command -v "$tool" >/dev/null || skip "$tool is missing (apt-get install dpkg-dev cmake)"
done
export CCACHE_BASEDIR=$src CCACHE_NOHASHDIR=1
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
[ -f "$build/CMakeCache.txt" ] || cmake -S "$src" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DKEVLAYA_BUILD_TESTS=OFF -DKEVLAYA_BUILD_BENCH=OFF -DKEVLAYA_PACKAGE=ON >/dev/null
cmake --build "$build" --parallel "$(nproc)" --target kevlaya-package-files
rm -f "$build"/kevlaya-orch_*.deb
(cd "$build" && cpack -G DEB >/dev/null) || fail "cpack -G DEB failed (see $build/_CPack_Packages)"
deb=$(ls "$build"/kevlaya-orch_*.deb)
echo "built $deb"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "$deb" "$root"
dpkg-deb -e "$deb" "$root/DEBIAN"
orch=$root/usr/bin/kevlaya-orch
"$orch" --version | grep -qx "kevlaya-orch [0-9.]*" || fail "--version of the packaged binary: $("$orch" --version)"
# The Release binary runs on mimalloc (orchestrator/CMakeLists.txt), and the package depends on it.
"$orch" --version | grep -qx "allocator: mimalloc [0-9.]*" || fail "the packaged binary's allocator: $("$orch" --version)"
grep -q '^Depends:.*libmimalloc' "$root/DEBIAN/control" || fail "the package does not depend on libmimalloc: $(grep ^Depends "$root/DEBIAN/control")"
"$orch" check "$root/etc/kevlaya/kevlaya.yaml" || fail "check of the packaged /etc/kevlaya/kevlaya.yaml failed"
grep -qx /etc/kevlaya/kevlaya.yaml "$root/DEBIAN/conffiles" || fail "/etc/kevlaya/kevlaya.yaml is not a conffile"
unit=$root/lib/systemd/system/kevlaya-orch.service
grep -qx "ExecStart=/usr/bin/kevlaya-orch serve /etc/kevlaya/kevlaya.yaml" "$unit" || fail "unit's ExecStart"
grep -qx KillMode=control-group "$unit" || fail "unit lacks KillMode=control-group"
sed -n '/^\[Unit\]/,/^\[/p' "$unit" | grep -q '^StartLimitBurst=' || fail "StartLimitBurst is not in [Unit]"
for f in usr/share/man/man1/kevlaya-orch.1.gz usr/share/bash-completion/completions/kevlaya-orch \
         usr/share/kevlaya-orch/schema/{orchestrator,profile,pipeline}.schema.json usr/share/doc/kevlaya-orch/copyright; do
  [ -s "$root/$f" ] || fail "missing $f"
done
zcat "$root/usr/share/man/man1/kevlaya-orch.1.gz" | grep -q '^\.SS check$' || fail "the man page lacks the check subcommand"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libyaml-cpp libboost-filesystem libspdlog; do
  [[ $depends == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done
echo "Depends: $depends"
command -v lintian >/dev/null || skip "lintian is missing (apt-get install lintian); everything else passed"
lintian --fail-on error "$deb" || fail "lintian reports errors"
echo "package test: ok"
