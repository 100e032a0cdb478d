#!/usr/bin/env bash
# Decoding speed and memory of a Mamba-2 130M-shaped model (24 Mamba layers, hidden 768, 24 heads
# of 64, one group, state 128, a GPT-2-sized vocabulary of 50272 ids (NullTokenizer --vocab-size
# 50271 and its EOD: llama.cpp's converter pads a Mamba-2 vocabulary to a multiple of 16 and
# expects the embedding that long); random weights from one megatron-train
# iteration, written as a Hugging Face Mamba2ForCausalLM folder by megatron-convert --saver hf)
# at 1k and 8k tokens of context: mt_bench_inference --family mamba times the prefill of the
# context and NEW greedy tokens decoded one at a time over the recurrent state, and prints the
# process's resident memory after decoding (the recurrent state is the same size at any context
# length; that memory also holds what prefill's buffers left behind).
#   bench/mamba_decode_bench.sh
# Peer: llama.cpp on the same weights. Convert the folder this script writes to $HF_OUT (when
# set) with llama.cpp's convert_hf_to_gguf.py and give LLAMA_BENCH (its llama-bench binary) and
# MAMBA2_GGUF (the .gguf); unset, the peer is skipped, saying so.
# THREADS (default 2), NEW (default 64), CONTEXTS (default "1024 8192") and BUILD_DIR (default
# build) may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
threads="${THREADS:-2}" new="${NEW:-64}" contexts="${CONTEXTS:-1024 8192}"
export OMP_NUM_THREADS="$threads"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$build/bin/megatron-train" --model mamba --num-layers 24 --hidden-size 768 \
    --num-attention-heads 12 --mamba-num-groups 1 --mamba-state-dim 128 --mamba-head-dim 64 \
    --normalization RMSNorm --position-embedding-type none --disable-bias-linear \
    --tokenizer-type NullTokenizer --vocab-size 50271 --seq-length 64 \
    --max-position-embeddings 64 --micro-batch-size 1 --mock-data --lr 1e-4 --train-iters 1 \
    --eval-iters 0 --save "$work/ckpt" --save-interval 1 > "$work/log" 2>&1 ||
    { cat "$work/log"; exit 1; }
hf="${HF_OUT:-$work/hf}"
"$build/bin/megatron-convert" --model-type Mamba --loader torch_dist --saver hf \
    --load-dir "$work/ckpt" --save-dir "$hf" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }

echo "| run (batch 1, $threads threads) | context | prefill tokens/s | decode tokens/s | resident MB after decoding |"
echo "|---|---|---|---|---|"
for c in $contexts; do
    "$build/bin/mt_bench_inference" "$hf" --family mamba --prompt "$c" --decode "$new" \
        --batch 1 --repeat 1 --no-bandwidth > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
    awk -v c="$c" '
        /^prefill/ { for (i = 1; i <= NF; i++) if ($i ~ /^tokens_per_s=/) p = substr($i, 14) }
        /^decode/ { for (i = 1; i <= NF; i++) {
            if ($i ~ /^tokens_per_s=/) d = substr($i, 14)
            if ($i ~ /^rss_mb=/) r = substr($i, 8) } }
        END { printf "| megatron.cpp fp32 | %d | %s | %s | %s |\n", c, p, d, r }' "$work/log"
    if [ -z "${LLAMA_BENCH:-}" ] || [ -z "${MAMBA2_GGUF:-}" ]; then
        echo "| llama.cpp | $c | LLAMA_BENCH / MAMBA2_GGUF not set: skipped | | |"
        continue
    fi
    # llama-bench: NEW tokens generated after a context of c tokens (-d), its mean tokens/s over
    # its repetitions; then its peak resident memory (the whole run's, not after decoding).
    /usr/bin/time -f "%M" -o "$work/rss" \
        "$LLAMA_BENCH" -m "$MAMBA2_GGUF" -t "$threads" -p 0 -n "$new" -d "$c" -o md
    echo "| llama.cpp peak RSS (MB) | $c | | | $(($(cat "$work/rss") / 1024)) |"
done
