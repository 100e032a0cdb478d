#!/usr/bin/env bash
# Conversion of a DeepSeek-V3-shaped checkpoint (bench/make_deepseek_v3_synthetic.py: the full 61
# layers + the multi-token prediction layer, 256 routed experts per MoE layer, one tensor per
# expert, bf16 safetensors shards, at a reduced width) by megatron-convert: Hugging Face ->
# torch_dist at TP1 (float32 as Megatron's loaders write it, and --bf16) and at TP2 x EP4 (--bf16),
# torch_dist -> Hugging Face from both, and Hugging Face -> torch (core) at TP2 x EP4 and back; seconds, MB/s of the folder's bytes and peak
# resident memory (GNU time's maximum RSS) beside the model's size and the bounded-memory target
# (4 x the largest tensor + 100 MB; the largest in float32 where a run reads or writes float32).
# Printed as markdown.
#   PYTHON=/path/to/python bench/deepseek_convert_bench.sh
#   DSBENCH_DIR=/scratch/ds HIDDEN=256 PYTHON=... bench/deepseek_convert_bench.sh  # keep the folder
# PYTHON (numpy) makes the folder when $DSBENCH_DIR/hf holds none. Megatron-Bridge's converter is
# not run here (it needs a GPU build of megatron-core); the model's size is the reference.
# Builds nothing: BUILD_DIR selects the build (default build) holding bin/megatron-convert.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/convert_bench_common.sh
convert_bench_setup "${DSBENCH_DIR:-}"
hf="$work/hf"
if [ ! -f "$hf/config.json" ]; then
    [ -n "${PYTHON:-}" ] || { echo "PYTHON unset: cannot make the folder in $hf" >&2; exit 1; }
    "$PYTHON" bench/make_deepseek_v3_synthetic.py "$hf" --hidden "${HIDDEN:-256}"
fi
bytes=$(stat -c %s "$hf"/*.safetensors | awk '{ s += $1 } END { print s }')
hidden=$(sed -n 's/.*"hidden_size": \([0-9]*\).*/\1/p' "$hf/config.json")
largest=$((129280 * hidden * 2))  # the bf16 embedding (and output layer)

# run LABEL BOUND SRC CMD...: time CMD (page cache warmed with SRC) under a data-size limit of
# BOUND MiB (ulimit -d: the process's private memory, reserved or touched; the files it maps are
# not counted there, their pages are in the RSS measured), print a table row. OpenBLAS, linked
# but unused by a conversion, runs with one thread (each of its worker threads reserves a 128 MB
# buffer that ulimit -d counts though it is never touched), and malloc with two arenas (one a
# thread: the reserve of each is counted too).
run() {
    local label="$1" bound="$2" src="$3"; shift 3
    warm_source "$src"
    local log="$work/last.log" t0 t1
    t0=$(date +%s.%N)
    if ! (ulimit -d $((bound * 1024)) &&
        OPENBLAS_NUM_THREADS=1 MALLOC_ARENA_MAX=2 /usr/bin/time -v "$@") >"$log" 2>&1; then
        cp "$log" "$work/failed.log"
        echo "| $label | failed: $(grep -m1 error "$log" | cut -c1-200) | | | |"
        return
    fi
    t1=$(date +%s.%N)
    local s rss
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log")
    echo "| $label | $s | $(awk -v b="$bytes" -v s="$s" 'BEGIN { printf "%.0f", b / 1e6 / s }') |" \
        "$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }') | $bound |"
}

echo "model: $hf, $(awk -v b="$bytes" 'BEGIN { printf "%.0f", b / 1048576 }') MiB of bf16" \
    "weights, largest tensor $((largest / 1048576)) MiB; bound 4 x largest + 100 MB =" \
    "$(((4 * largest + 100000000) / 1048576)) MiB; machine: $(nproc) cores," \
    "$(lscpu | sed -n 's/^Model name: *//p'); load: $(uptime | sed 's/.*load average: //')"
echo
bound_bf16=$(((4 * largest + 100000000) / 1048576))
bound_f32=$(((8 * largest + 100000000) / 1048576))
echo "| conversion | seconds | MB/s | peak RSS (MiB) | bound (MiB) |"
echo "|---|---|---|---|---|"
convert=("$bin/megatron-convert" --model-type GPT)
rm -rf "$work/dist1" "$work/dist1_bf16" "$work/dist2x4" "$work/back" "$work/back_bf16" \
    "$work/torch2x4" "$work/back_torch"
run "HF → torch_dist TP1 (float32)" "$bound_f32" "$hf" "${convert[@]}" --loader hf \
    --saver torch_dist --load-dir "$hf" --save-dir "$work/dist1"
run "HF → torch_dist TP1 --bf16" "$bound_bf16" "$hf" "${convert[@]}" --loader hf \
    --saver torch_dist --bf16 --load-dir "$hf" --save-dir "$work/dist1_bf16"
run "HF → torch_dist TP2 × EP4 --bf16" "$bound_bf16" "$hf" "${convert[@]}" --loader hf \
    --saver torch_dist --bf16 --load-dir "$hf" --save-dir "$work/dist2x4" \
    --target-tensor-parallel-size 2 --target-expert-parallel-size 4
run "torch_dist TP1 (bf16) → HF" "$bound_bf16" "$work/dist1_bf16" "${convert[@]}" \
    --loader torch_dist --saver hf --load-dir "$work/dist1_bf16" --save-dir "$work/back_bf16"
run "torch_dist TP1 (float32) → HF --bf16" "$bound_f32" "$work/dist1" "${convert[@]}" \
    --loader torch_dist --saver hf --bf16 --load-dir "$work/dist1" --save-dir "$work/back"
run "HF → torch TP2 × EP4 --bf16" "$bound_bf16" "$hf" "${convert[@]}" --loader hf --saver core \
    --bf16 --load-dir "$hf" --save-dir "$work/torch2x4" --target-tensor-parallel-size 2 \
    --target-expert-parallel-size 4
run "torch TP2 × EP4 (bf16) → HF" "$bound_bf16" "$work/torch2x4" "${convert[@]}" --loader core \
    --saver hf --load-dir "$work/torch2x4" --save-dir "$work/back_torch"
