#!/usr/bin/env bash
# Checks that the Dockerfile's build stage installs its packages with `tools/deps.sh build`, and that
# what it COPYs is enough to build kevlaya-orch: the tracked
# files under those paths alone are configured with the Dockerfile's cmake flags, then every input of
# the kevlaya-orch build graph that no rule makes must exist. (`ninja -n` alone stops at the
# regeneration step and misses a file such as cmake/embed_assets.cmake that only a build rule reads.)
# Usage: check_copies.sh [SOURCE_DIR]   exit 0: enough; 1: something is missing (named); 4: skipped.
set -euo pipefail
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
for tool in git cmake ninja; do
  command -v "$tool" >/dev/null || { echo "check_copies: SKIPPED: no $tool"; exit 4; }
done
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || { echo "check_copies: SKIPPED: $src is not a git checkout"; exit 4; }
# The build stage: from its FROM line to the next FROM; COPY lines without --from.
mapfile -t paths < <(awk '/^FROM /{stage++} stage==1 && /^COPY / && !/--from/ {for (i=2; i<NF; i++) print $i}' "$src/Dockerfile")
[ ${#paths[@]} -gt 0 ] || { echo "check_copies: no COPY in the Dockerfile's build stage"; exit 1; }
# The build stage installs its packages with `tools/deps.sh build`, the host build's one list (a list
# of its own in the Dockerfile went stale: mimalloc was missing from it).
awk '/^FROM /{stage++} stage==1' "$src/Dockerfile" | grep -q '^RUN tools/deps.sh build' ||
  { echo "check_copies: FAILED: the Dockerfile's build stage does not install its packages with tools/deps.sh build"; exit 1; }
# The cmake flags of the build stage's RUN cmake line.
flags=$(awk '/^FROM /{stage++} stage==1' "$src/Dockerfile" | tr '\\\n' '  ' | grep -o 'cmake -S [^&]*' | head -n1 |
        sed -e 's/^cmake -S [^ ]* -B [^ ]* //' -e 's/-DCMAKE_BUILD_RPATH=[^ ]*//')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
# Tracked files as they are in the tree now (a clone's files; no build folders, no node_modules).
(cd "$src" && git ls-files -z -- "${paths[@]}" | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf -) | tar -C "$work/src" -xf -
echo "check_copies: the build stage copies: ${paths[*]}"
# shellcheck disable=SC2086
if ! cmake -S "$work/src" -B "$work/build" $flags >"$work/configure.log" 2>&1; then
  cat "$work/configure.log"
  echo "check_copies: FAILED: cmake cannot configure from the copied paths"
  exit 1
fi
cd "$work/build"
made=$(ninja -t targets all | sed 's/: .*//' | sort -u)
missing=()
while IFS= read -r input; do
  [ -n "$input" ] || continue
  [ -e "$input" ] && continue
  grep -qxF "$input" <<<"$made" && continue
  missing+=("${input#"$work"/src/}")
done < <(ninja -t inputs kevlaya-orch)
if [ ${#missing[@]} -gt 0 ]; then
  printf 'check_copies: FAILED: the image build needs files the Dockerfile does not copy:\n'
  printf '  %s\n' "${missing[@]}"
  exit 1
fi
echo "check_copies: ok: $(ninja -t inputs kevlaya-orch | wc -l) inputs of kevlaya-orch, all copied or built"
