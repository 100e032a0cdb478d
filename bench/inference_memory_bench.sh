#!/usr/bin/env bash
# Peak resident memory of each megatron-generate rank loading a llama-1b-shaped model (bench/
# hf_inference.py's random weights: 1104M parameters, 4.4 GB of fp32) and generating a few
# tokens: in one process, at TP2 and at PP2 under mpirun, from the Hugging Face folder and from
# a torch_dist checkpoint of it (megatron-convert), beside the rank's share of the weights.
# Prints a markdown table.
#   PYTHON=/path/to/python bench/inference_memory_bench.sh
# PYTHON (torch + transformers) makes the folder when $WORK/hf holds none; WORK (default: a
# temporary folder, removed at exit) keeps the folder and the converted checkpoint for the next
# run. Builds nothing: BUILD_DIR (default build) holds bin/megatron-generate.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/convert_bench_common.sh
convert_bench_setup "${WORK:-}"  # bin, work
if [ ! -f "$work/hf/config.json" ]; then
    : "${PYTHON:?set PYTHON to a python with torch and transformers to make $work/hf}"
    "$PYTHON" bench/hf_inference.py make llama-1b "$work/hf" >&2
fi
if [ ! -f "$work/dist/latest_checkpointed_iteration.txt" ]; then
    "$bin/megatron-convert" --model-type GPT --loader hf --saver torch_dist --load-dir "$work/hf" \
        --save-dir "$work/dist" > /dev/null
fi
weights=$(stat -c %s "$work/hf/model.safetensors")
mpirun=(mpirun --oversubscribe -x OMP_NUM_THREADS=1)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)

# run LABEL FORMAT-DIR RANKS SHARE FLAGS...: one row, the largest rank's peak RSS.
run() {
    local label="$1" dir="$2" ranks="$3" share="$4"
    shift 4
    local launch=()
    [ "$ranks" -gt 1 ] && launch=("${mpirun[@]}" -np "$ranks")
    local out
    out=$("${launch[@]}" /usr/bin/time -f "MT_RSS %M" "$bin/megatron-generate" --load "$dir" \
        --tokenizer-type NullTokenizer --vocab-size 32000 --prompts "1 2 3" --out-seq-length 4 \
        --greedy "$@" 2>&1) || { echo "$out" >&2; exit 1; }
    local rss
    rss=$(echo "$out" | sed -n 's/^MT_RSS //p' | sort -n | tail -1)
    echo "| $label | $ranks | $(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }') |" \
        "$(awk -v b="$weights" -v s="$share" 'BEGIN { printf "%.0f", b / s / 1048576 }') |"
}

echo "model: llama-1b shape, $(awk -v b="$weights" 'BEGIN { printf "%.0f", b / 1048576 }') MiB" \
    "of fp32 weights; machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo
echo "| checkpoint, layout | ranks | peak RSS per rank (MiB) | share of the weights (MiB) |"
echo "|---|---|---|---|"
for format in hf dist; do
    name="Hugging Face folder"
    [ "$format" = dist ] && name="torch_dist"
    run "$name, one process" "$work/$format" 1 1
    run "$name, TP2" "$work/$format" 2 2 --tensor-model-parallel-size 2
    run "$name, PP2" "$work/$format" 2 2 --pipeline-model-parallel-size 2
done
