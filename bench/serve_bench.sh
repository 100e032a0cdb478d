#!/usr/bin/env bash
# Served throughput and latency of megatron-generate's POST /v1/completions under 1, 4 and 16
# concurrent clients (mt_bench_serve_load), beside llama.cpp's llama-server on the same weights
# when given, printed as markdown. Every request: 128 random token ids, 64 greedy tokens. Both
# servers batch continuously over 16 places (--inference-max-requests 16, --parallel 16).
#   PYTHON=... [LLAMA_SERVER=... LLAMA_CPP_DIR=...] bench/serve_bench.sh [WORK_DIR]
# WORK_DIR (default /tmp/mt-serve-bench, kept) holds the models, made there by
# bench/hf_inference.py (PYTHON: torch + transformers) when absent. MODELS (default gpt2-small;
# also llama-1b); THREADS (default nproc) for every server; REQUESTS (default 16) per level,
# split over the clients; BUILD_DIR (default build) our binaries.
# Peer (skipped, saying so, when unset): LLAMA_SERVER=/path/to/llama-server, serving an f32 GGUF
# WORK_DIR/<model>-f32.gguf that bench/inference_bench.sh makes (with LLAMA_CPP_DIR), with
# --parallel 16 (its continuous batching over 16 slots).
# Builds nothing: run scripts/setup.sh first (with the benchmarks on).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(pwd)/${BUILD_DIR:-build}/bin"
work="${1:-/tmp/mt-serve-bench}"
threads="${THREADS:-$(nproc --all)}"
requests="${REQUESTS:-16}"
models="${MODELS:-gpt2-small}"
prompt=128
decode=64
mkdir -p "$work"
export OMP_NUM_THREADS="$threads"

# Waits for "Serving on"/"listening" in a log, at most 600 s.
wait_for() {
    for _ in $(seq 600); do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep 1
    done
    echo "serve_bench: no '$2' in $1" >&2
    return 1
}

# One engine at 1, 4 and 16 clients: a table row each.
load() {
    local engine="$1" port="$2" vocab="$3"
    for clients in 1 4 16; do
        local per=$(( (requests + clients - 1) / clients ))
        "$bin/mt_bench_serve_load" --port "$port" --clients "$clients" --requests "$per" \
            --prompt $prompt --max-tokens $decode --vocab "$vocab" |
            awk -v e="$engine" '{ printf "| %s | %s | %s | %s | %.1f | %.2f | %.2f |\n",
                e, $2, $4, $8, $12, $14, $16 }'
    done
}

echo "machine: $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); threads: $threads; every request $prompt random token ids then $decode greedy tokens; $requests requests per level"
for model in $models; do
    if [ ! -f "$work/$model/model.safetensors" ]; then
        : "${PYTHON:?set PYTHON to a python with torch and transformers to make $work/$model}"
        "$PYTHON" bench/hf_inference.py make "$model" "$work/$model" >&2
    fi
    vocab=$(grep -o '"vocab_size": *[0-9]*' "$work/$model/config.json" | grep -o '[0-9]*$')
    echo
    echo "### $model"
    echo
    echo "| engine | clients | requests | generated tokens | tokens/s | p50 latency s | p99 latency s |"
    echo "|---|---|---|---|---|---|---|"
    port=$(( 20000 + RANDOM % 20000 ))
    "$bin/megatron-generate" --load "$work/$model" --tokenizer-type NullTokenizer \
        --vocab-size $((vocab - 1)) --inference-max-requests 16 --port "$port" --host 127.0.0.1 \
        >"$work/ours-$model.log" 2>&1 &
    server=$!
    wait_for "$work/ours-$model.log" "Serving on"
    load "megatron.cpp (ours)" "$port" "$vocab"
    kill "$server"; wait "$server" 2>/dev/null || true
    if [ -z "${LLAMA_SERVER:-}" ]; then
        echo "| llama-server | (skipped: LLAMA_SERVER is not set) | | | | | |"
    elif [ ! -f "$work/$model-f32.gguf" ]; then
        echo "| llama-server | (skipped: no $work/$model-f32.gguf; bench/inference_bench.sh makes it) | | | | | |"
    else
        port=$(( 20000 + RANDOM % 20000 ))
        "$LLAMA_SERVER" -m "$work/$model-f32.gguf" -t "$threads" --parallel 16 \
            -c $(( 16 * (prompt + decode) )) --port "$port" --host 127.0.0.1 \
            >"$work/llama-$model.log" 2>&1 &
        server=$!
        wait_for "$work/llama-$model.log" "listening|server is listening"
        load "llama-server" "$port" "$vocab"
        kill "$server"; wait "$server" 2>/dev/null || true
    fi
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
