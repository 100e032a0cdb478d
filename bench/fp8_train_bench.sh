#!/usr/bin/env bash
# Step time of megatron-train's emulated FP8 recipes beside its own bf16 step, same model, same
# run: a 4-layer, 512-wide GPT on --mock-data, --bf16, micro-batch 4 x 256, and the FP8 recipes
# (--fp8-format hybrid --fp8-recipe tensorwise|delayed|mxfp8|blockwise), ROUNDS alternating
# rounds (default 2), the mean of the iterations after the first two. There is no FP8 peer on a
# CPU (Transformer Engine needs a GPU); BASELINE=/path/to/an/older/megatron-train times that
# binary beside ours, recipe by recipe. Prints a markdown table of seconds per iteration.
#   bench/fp8_train_bench.sh
# MICRO_BATCHES (default 1: the global batch in micro-batches of 4), ITERS (default 6) and
# BUILD_DIR (default build) may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
rounds="${ROUNDS:-2}" iters="${ITERS:-6}" micro_batches="${MICRO_BATCHES:-1}"
model=(--mock-data --tokenizer-type NullTokenizer --vocab-size 4096 --num-layers 4
       --hidden-size 512 --num-attention-heads 8 --seq-length 256 --max-position-embeddings 256
       --micro-batch-size 4 --global-batch-size $((4 * micro_batches)) --train-iters "$iters"
       --lr 1e-4 --bf16 --log-interval 1 --eval-iters 0)
binaries=("ours=$build/bin/megatron-train")
if [ -n "${BASELINE:-}" ]; then
    binaries+=("baseline=$BASELINE")
else
    echo "(BASELINE unset: no older build timed beside)" >&2
fi

# Seconds per iteration: the mean of the logged iterations after the first two.
step_seconds() {
    "$@" 2>&1 | grep -o 'elapsed time per iteration (ms): [0-9.]*' | tail -n +3 |
        awk '{s += $NF} END {if (NR) printf "%.3f", s / NR / 1000; else print "failed"}'
}

declare -A sum
recipes=(bf16 tensorwise delayed mxfp8 blockwise)
for ((round = 1; round <= rounds; ++round)); do
    for recipe in "${recipes[@]}"; do
        flags=()
        [ "$recipe" = bf16 ] || flags=(--fp8-format hybrid --fp8-recipe "$recipe")
        for entry in "${binaries[@]}"; do
            name="${entry%%=*}" bin="${entry#*=}"
            s=$(step_seconds "$bin" "${model[@]}" "${flags[@]}")
            sum[$name/$recipe]=$(awk -v a="${sum[$name/$recipe]:-0}" -v b="$s" 'BEGIN {print a + b}')
        done
    done
done

header="| recipe |" rule="|---|"
for entry in "${binaries[@]}"; do header+=" ${entry%%=*} s/iteration |"; rule+="---|"; done
echo "$header"
echo "$rule"
for recipe in "${recipes[@]}"; do
    row="| $recipe |"
    for entry in "${binaries[@]}"; do
        row+=" $(awk -v a="${sum[${entry%%=*}/$recipe]}" -v n="$rounds" 'BEGIN {printf "%.3f", a / n}') |"
    done
    echo "$row"
done
