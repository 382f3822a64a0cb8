#!/usr/bin/env bash
# Trains tiny Kev and Laya from scratch with llama-finetune, reproducibly, and writes
# tools/decisions/models/{kev,laya}.gguf plus the model card (models/README.md).
#
#   tools/decisions/train.sh            (about 15-25 minutes on 2 busy cores; CPU only)
#
# Steps: gen.py writes the training text (exactly the prompts llama-server builds from
# pipelines/decide-verify.yaml) and a task vocabulary; kevlaya-tiny-gguf writes two fresh random
# models with that vocabulary; llama-finetune trains each (one thread: OpenMP threads spinning on a
# loaded box made two threads ~7x slower); eos_control.py turns the EOS into a control token for
# serving; eval.sh measures the result into the card. Environment knobs (defaults = the card):
#   SEED KEV_N LAYA_N EPOCHS LR CTX N_EMBD N_LAYER N_FF  LLAMA_BIN (dir with llama-finetune)
#   KEVLAYA_TINY_GGUF (the tool; default build/tools/kevlaya-tiny-gguf)  KEVLAYA_TRAIN_NICE (19)
set -euo pipefail
cd "$(dirname "$0")/../.."
SEED=${SEED:-20} KEV_N=${KEV_N:-4000} LAYA_N=${LAYA_N:-4000} EPOCHS=${EPOCHS:-8} LR=${LR:-3e-4}
CTX=${CTX:-512} N_EMBD=${N_EMBD:-64} N_LAYER=${N_LAYER:-4} N_FF=${N_FF:-192}
LLAMA_BIN=${LLAMA_BIN:-var/llama-server}
TINY=${KEVLAYA_TINY_GGUF:-build/tools/kevlaya-tiny-gguf}
NICE=${KEVLAYA_TRAIN_NICE:-19}
work=var/decisions/train
out=tools/decisions/models
[ -x "$LLAMA_BIN/llama-finetune" ] || tools/llama-server/fetch.sh "$LLAMA_BIN"
[ -x "$TINY" ] || { echo "train.sh: $TINY not found (build first, or set KEVLAYA_TINY_GGUF)" >&2; exit 1; }
mkdir -p "$work" "$out"

python3 tools/decisions/gen.py --pipeline pipelines/decide-verify.yaml --out "$work" \
  --seed "$SEED" --kev "$KEV_N" --laya "$LAYA_N"
cp "$work"/scenarios-heldout.jsonl "$work"/scenarios-train.jsonl "$work"/laya-heldout.jsonl \
  "$work"/verify-only.yaml tools/decisions/scenarios/
n_tokens=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$work/tokens.json")
n_vocab=$((259 + n_tokens + 800))  # specials + bytes, the task vocabulary, SentencePiece fallback pieces

train() {  # NAME
  local m=$1
  "$TINY" model --out "$work/base-$m.gguf" --name "$m" --seed "$SEED" --n-embd "$N_EMBD" \
    --n-layer "$N_LAYER" --n-head 4 --n-head-kv 4 --n-ff "$N_FF" --n-vocab "$n_vocab" --n-ctx "$CTX" \
    --output-scale 0.05 --user-tokens "$work/tokens.json" --eos-text '[[end]]' --no-bos --no-space-prefix
  echo "train.sh: training $m ($EPOCHS epochs, lr $LR, ctx $CTX); log: $work/$m.log"
  nice -n "$NICE" "$LLAMA_BIN/llama-finetune" -m "$work/base-$m.gguf" -f "$work/$m-train.txt" \
    -c "$CTX" -b "$CTX" -ub "$CTX" --epochs "$EPOCHS" -lr "$LR" -s "$SEED" -t 1 \
    -o "$work/$m.gguf" > "$work/$m.log" 2>&1
  python3 tools/decisions/eos_control.py "$work/$m.gguf"
  cp "$work/$m.gguf" "$out/$m.gguf"
}
train kev &
kev_pid=$!
train laya
wait "$kev_pid"

cat > "$work/params.json" <<EOF
{"seed": $SEED, "kev_examples": $KEV_N, "laya_examples": $LAYA_N, "epochs": $EPOCHS, "lr": "$LR",
 "ctx": $CTX, "n_embd": $N_EMBD, "n_layer": $N_LAYER, "n_ff": $N_FF, "n_vocab": $n_vocab,
 "task_tokens": $n_tokens}
EOF
cp "$work/params.json" "$out/params.json"
python3 tools/decisions/card.py "$work" > "$out/README.md"
echo "train.sh: wrote $out/kev.gguf, $out/laya.gguf; measure them with tools/decisions/eval.sh"
