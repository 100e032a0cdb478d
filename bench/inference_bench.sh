#!/usr/bin/env bash
# Inference throughput beside the peers, all in one run, printed as markdown: prefill and greedy
# decode tokens/s at batch 1 and 8 for a GPT-2-small-shaped and a ~1B Llama-shaped random fp32
# model, and the memory-bandwidth limit of decode (weight bytes per step / read bandwidth that
# mt_bench_inference measures just before timing the model).
#   PYTHON=... LLAMA_CPP_DIR=... bench/inference_bench.sh [WORK_DIR]
# WORK_DIR (default /tmp/mt-inference-bench, kept for the next run) holds the models: made there
# with transformers when absent (about 5 GB of safetensors, 5 GB more of GGUF).
# Peers (each skipped, saying so, when its variable is unset):
#   PYTHON=/path/to/python       torch + transformers: makes the models, runs bench/hf_inference.py
#   LLAMA_CPP_DIR=/path/to/src   a llama.cpp source tree built in its build/ (llama-bench and
#                                llama-batched-bench); its convert_hf_to_gguf.py (with PYTHON,
#                                which then also needs sentencepiece) makes the f32 GGUF
# DTYPE (default f32; bf16) the weights' dtype everyone runs in (ours --bf16, transformers'
# bfloat16, a bf16 GGUF).
# MODELS (default "gpt2-small llama-1b"; also mixtral-tiny, qwen2.5-0.5b, gemma3-1b) picks the models; THREADS (default: nproc) threads for everyone; REPEAT (default 2) runs per measurement, the
# best kept (llama-bench: the mean); BUILD_DIR selects our build (default build).
# Builds nothing: run scripts/setup.sh first (with the benchmarks on).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(pwd)/${BUILD_DIR:-build}/bin"
work="${1:-/tmp/mt-inference-bench}"
threads="${THREADS:-$(nproc)}"
repeat="${REPEAT:-2}"
prompt=128
decode=64
models="${MODELS:-gpt2-small llama-1b}"
dtype="${DTYPE:-f32}"
case "$dtype" in f32) ours_dtype="" ;; bf16) ours_dtype="--bf16" ;; *) echo "DTYPE: f32 or bf16" >&2; exit 1 ;; esac
mkdir -p "$work"
export OMP_NUM_THREADS="$threads"
llama=""
[ -n "${LLAMA_CPP_DIR:-}" ] && [ -n "${PYTHON:-}" ] && llama="$LLAMA_CPP_DIR/build/bin"

for model in $models; do
    if [ ! -f "$work/$model/model.safetensors" ]; then
        : "${PYTHON:?set PYTHON to a python with torch and transformers to make $work/$model}"
        "$PYTHON" bench/hf_inference.py make "$model" "$work/$model" >&2
    fi
done

# Each model through every engine back to back (the machine's load moves over minutes), results
# in $work; the tables after.
rm -f "$work"/ours-*.txt "$work"/hf-*.txt "$work"/llama-*.csv "$work"/llama-batched-*.txt
for model in $models; do
    "$bin/mt_bench_inference" "$work/$model" --prompt $prompt --decode $decode --batch 1,8 \
        --repeat "$repeat" $ours_dtype >"$work/ours-$model.txt"
    if [ -n "${PYTHON:-}" ]; then
        "$PYTHON" bench/hf_inference.py bench "$work/$model" --threads "$threads" --prompt $prompt \
            --decode $decode --batch 1 8 --repeat "$repeat" --dtype "$dtype" \
            >"$work/hf-$model.txt" 2>/dev/null
    fi
    if [ -n "$llama" ]; then
        gguf="$work/$model-$dtype.gguf"
        if [ ! -f "$gguf" ]; then
            PYTHONPATH="$LLAMA_CPP_DIR/gguf-py" "$PYTHON" bench/hf_inference.py tokenizer \
                "$work/$model" --gpt2-vocab "$LLAMA_CPP_DIR/models/ggml-vocab-gpt-2.gguf" >&2
            # The converter reads a copy whose config.json older llama.cpp builds understand.
            rm -rf "$work/$model-for-gguf"
            cp -r "$work/$model" "$work/$model-for-gguf"
            "$PYTHON" bench/hf_inference.py gguf-config "$work/$model-for-gguf" >&2
            "$PYTHON" "$LLAMA_CPP_DIR/convert_hf_to_gguf.py" "$work/$model-for-gguf" \
                --outtype "$dtype" --outfile "$gguf.tmp" >"$work/convert-$model.log" 2>&1
            mv "$gguf.tmp" "$gguf"
            rm -rf "$work/$model-for-gguf"
        fi
        # Batch 1: llama-bench (pp: one prompt; tg: decoding from an empty context). Batch 8:
        # llama-batched-bench, 8 sequences of $prompt prompt tokens, then $decode steps of 8.
        "$llama/llama-bench" -m "$gguf" -p $prompt -n $decode -t "$threads" -r "$repeat" -o csv \
            >"$work/llama-bench-$model.csv" 2>"$work/llama-bench-$model.log"
        "$llama/llama-batched-bench" -m "$gguf" -c $((8 * (prompt + decode))) -b 2048 -ub 512 \
            -npp $prompt -ntg $decode -npl 8 -t "$threads" -tb "$threads" \
            >"$work/llama-batched-$model.txt" 2>"$work/llama-batched-$model.log"
    fi
done

# The value of key=VALUE on the line of `what` batch=B in a results file.
field() { # file what batch key
    awk -v w="$2" -v b="batch=$3" -v k="$4=" '$1 == w && $2 == b {
        for (i = 3; i <= NF; ++i) if (index($i, k) == 1) print substr($i, length(k) + 1) }' "$1"
}
num() { awk -v x="$1" 'BEGIN { printf "%.2f", x }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f%%", 100 * a / b }'; }
# Column $3 of llama-bench's pp (prompt) or tg (generation) row in file $1.
lbench() {
    # The header is bare names, the rows quoted values (which may hold commas).
    awk -v what="$2" -v name="$3" 'NR == 1 { n = split($0, h, ","); for (i = 1; i <= n; ++i) col[h[i]] = i; next }
        { split(substr($0, 2, length($0) - 2), v, "\",\"") }
        (what == "pp" && v[col["n_gen"]] == 0) || (what == "tg" && v[col["n_prompt"]] == 0) {
            print v[col[name]] }' "$1"
}
# Column $2 (7: S_PP t/s, 9: S_TG t/s) of llama-batched-bench's batch-8 row in file $1.
lbatched() { awk -F'|' -v c="$2" '$4 + 0 == 8 && $2 + 0 > 0 { gsub(" ", "", $c); print $c }' "$1"; }

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/^Mem:/ { print $2 }') GiB;" \
    "threads: $threads; prompt $prompt random tokens, then $decode greedy decode steps through the" \
    "KV cache; best of $repeat run(s); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
for model in $models; do
    r="$work/ours-$model.txt"
    read_gbs=$(awk '/^bandwidth/ { sub("read_gbs=", "", $2); print $2 }' "$r")
    triad_gbs=$(awk '/^bandwidth/ { sub("triad_gbs=", "", $3); print $3 }' "$r")
    gb=$(awk '/^model/ { sub("step_weight_bytes=", "", $3); printf "%.3f", $3 / 1e9 }' "$r")
    params=$(awk '/^model/ { sub("parameters=", "", $2); printf "%.1fM", $2 / 1e6 }' "$r")
    limit1=$(field "$r" decode 1 bandwidth_limit_tokens_per_s)
    limit8=$(field "$r" decode 8 bandwidth_limit_tokens_per_s)
    d1=$(field "$r" decode 1 tokens_per_s)
    d8=$(field "$r" decode 8 tokens_per_s)
    echo
    echo "### $model ($params parameters, $gb GB of $dtype weights read per decode step)"
    echo
    echo "Memory bandwidth measured just before: read $read_gbs GB/s, STREAM triad $triad_gbs GB/s."
    echo
    echo "| engine | prefill b1 tok/s | prefill b8 tok/s | decode b1 tok/s | decode b8 tok/s |"
    echo "|---|---|---|---|---|"
    echo "| megatron.cpp (ours) | $(field "$r" prefill 1 tokens_per_s) | $(field "$r" prefill 8 tokens_per_s)" \
        "| $d1 ($(pct "$d1" "$limit1") of limit) | $d8 ($(pct "$d8" "$limit8") of limit) |"
    if [ -n "${PYTHON:-}" ]; then
        r="$work/hf-$model.txt"
        tv=$("$PYTHON" -c 'import torch, transformers; print(f"{transformers.__version__}, torch {torch.__version__}")')
        echo "| transformers $tv | $(field "$r" prefill 1 tokens_per_s) | $(field "$r" prefill 8 tokens_per_s)" \
            "| $(field "$r" decode 1 tokens_per_s) | $(field "$r" decode 8 tokens_per_s) |"
    else
        echo "| transformers: skipped (set PYTHON) | | | | |"
    fi
    if [ -n "$llama" ]; then
        c="$work/llama-bench-$model.csv"
        b="$work/llama-batched-$model.txt"
        echo "| llama.cpp build $(lbench "$c" pp build_number) $dtype (b1: llama-bench, b8: llama-batched-bench)" \
            "| $(num "$(lbench "$c" pp avg_ts)") | $(lbatched "$b" 7) | $(num "$(lbench "$c" tg avg_ts)") | $(lbatched "$b" 9) |"
    else
        echo "| llama.cpp: skipped (set LLAMA_CPP_DIR and PYTHON) | | | | |"
    fi
    echo "| memory-bandwidth limit (batch x read GB/s / $gb GB) | | | $limit1 | $limit8 |"
done
echo
echo "Raw outputs: $work (*.txt, *.csv, *.log)."
