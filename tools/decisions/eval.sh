#!/usr/bin/env bash
# The per-quantization table for the trained Kev and Laya on the real llama-server (CPU):
# llama-quantize makes each variant, then `kevlaya-orch eval` runs the held-out scenarios through
# the decide->verify pipeline (with and without the output grammar) and Laya alone on right and
# wrong decisions (verify-only.yaml).
#
#   tools/decisions/eval.sh [--repeat N] [--quants "F16 Q8_0 Q4_0"] [--scenarios N] [--constraint on|off|both]
#
# Defaults: 20 repeats (the consistency test), F32 plus F16 Q8_0 Q5_0 Q4_0 Q4_K_M and Q2_K (the
# deliberately too-coarse one; n_embd and n_ff are multiples of 256, so the K-quants apply to every
# matrix), grammar on and off.
# Writes var/decisions/eval/{pipeline,laya}.json (the `eval --json` reports) and prints the tables.
# Env: LLAMA_BIN (dir with llama-server, llama-quantize; default var/llama-server), KEVLAYA_ORCH.
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=20 quants="F16 Q8_0 Q5_0 Q4_0 Q4_K_M Q2_K" scenarios=0 constraint=both
while [ $# -gt 0 ]; do
  case $1 in
    --repeat) repeat=$2; shift 2 ;;
    --quants) quants=$2; shift 2 ;;
    --scenarios) scenarios=$2; shift 2 ;;
    --constraint) constraint=$2; shift 2 ;;
    *) echo "eval.sh: unknown argument $1" >&2; exit 1 ;;
  esac
done
LLAMA_BIN=${LLAMA_BIN:-var/llama-server}
ORCH=${KEVLAYA_ORCH:-build/kevlaya-orch}
[ -x "$LLAMA_BIN/llama-server" ] || tools/llama-server/fetch.sh "$LLAMA_BIN"
export KEVLAYA_SERVER_BINARY=${KEVLAYA_SERVER_BINARY:-$(cd "$LLAMA_BIN" && pwd)/llama-server}
dir=var/decisions/eval
rm -rf "$dir/profiles"
mkdir -p "$dir/profiles" "$dir/models"
abs=$(pwd)

profile() {  # NAME MODEL_FILE
  printf 'name: %s\nbinary: %s\nmodel: %s\nngl: 0\nctx: 512\nparallel: 1\n' "$1" "$KEVLAYA_SERVER_BINARY" "$2" \
    > "$dir/profiles/$1.yaml"
}
variants=f32=kev:laya
laya_variants=f32=:laya
for m in kev laya; do profile "$m" "$abs/tools/decisions/models/$m.gguf"; done
for q in $quants; do
  lq=$(echo "$q" | tr 'A-Z' 'a-z')
  for m in kev laya; do
    f=$abs/$dir/models/$m-$lq.gguf
    "$LLAMA_BIN/llama-quantize" "tools/decisions/models/$m.gguf" "$f" "$q" > "$dir/models/$m-$lq.log" 2>&1 ||
      { echo "eval.sh: llama-quantize $q failed for $m (see $dir/models/$m-$lq.log)" >&2; continue 2; }
    profile "$m-$lq" "$f"
  done
  variants+=",$lq=kev-$lq:laya-$lq"
  laya_variants+=",$lq=:laya-$lq"
done
cat > "$dir/kevlaya.yaml" <<EOF
profiles_dir: profiles
state_dir: ../state
log_dir: ../log
gpu:
  vram_mib: auto
EOF
sc=tools/decisions/scenarios/scenarios-heldout.jsonl
lsc=tools/decisions/scenarios/laya-heldout.jsonl
if [ "$scenarios" -gt 0 ]; then
  head -n "$scenarios" "$sc" > "$dir/scenarios.jsonl"; sc=$dir/scenarios.jsonl
  head -n "$((2 * scenarios))" "$lsc" > "$dir/laya-scenarios.jsonl"; lsc=$dir/laya-scenarios.jsonl
fi
echo "== decide -> verify pipeline, held-out scenarios x $repeat"
"$ORCH" eval pipelines/decide-verify.yaml --config "$dir/kevlaya.yaml" --scenarios "$sc" --repeat "$repeat" \
  --variants "$variants" --constraint "$constraint" --json > "$dir/pipeline.json"
echo "== Laya alone on right and wrong decisions (verify-only.yaml) x $repeat"
"$ORCH" eval tools/decisions/scenarios/verify-only.yaml --config "$dir/kevlaya.yaml" --scenarios "$lsc" \
  --repeat "$repeat" --variants "$laya_variants" --constraint "$constraint" --json > "$dir/laya.json"
echo "eval.sh: reports in $dir/pipeline.json and $dir/laya.json; the tables:"
python3 tools/decisions/card.py tools/decisions/models "$dir" | sed -n '/^## Measured/,$p'
ls -l tools/decisions/models/*.gguf "$dir"/models/*.gguf | awk '{print $5, $NF}'

