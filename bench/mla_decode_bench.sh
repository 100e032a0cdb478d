#!/usr/bin/env bash
# Multi-latent attention decoding speed and cache size: a GPT with DeepSeek-V3's attention shapes
# at a small width (8 layers, hidden 1024, 16 heads, --q-lora-rank 384, --kv-lora-rank 512,
# --qk-head-dim 128, --qk-pos-emb-head-dim 64, --v-head-dim 128, SwiGLU FFN 2816, RMSNorm,
# untied, a 32000-token vocabulary) written by one megatron-train iteration on mock data,
# generated from by mt_bench_inference (a prompt of PROMPT random tokens, then DECODE greedy
# steps over the cached latents), beside transformers' DeepseekV3ForCausalLM of the same shapes
# with every layer dense (bench/mla_decode_peer.py) in the same run, same threads, fp32 and bf16.
# Prints a markdown table of prefill and decode tokens/s at batch 1 and 8, and the cache's bytes
# per token (ours: layers x (kv-lora-rank + qk-pos-emb-head-dim) numbers, by construction; the
# peer's measured from its cache).
#   PYTHON=/path/to/venv/bin/python bench/mla_decode_bench.sh
# PYTHON (torch + transformers >= 5): unset, the peer is skipped, saying so. THREADS (default 2),
# PROMPT (default 512), DECODE (default 64), REPEAT (default 2) and BUILD_DIR (default build) may
# be set.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
threads="${THREADS:-2}" prompt="${PROMPT:-512}" decode="${DECODE:-64}" repeat="${REPEAT:-2}"
layers=8 hidden=1024 heads=16 ffn=2816 vocab=32000 q_lora=384 kv_lora=512 qk=128 rope=64 v=128
export OMP_NUM_THREADS="$threads"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$build/bin/megatron-train" --num-layers "$layers" --hidden-size "$hidden" \
    --num-attention-heads "$heads" --ffn-hidden-size "$ffn" --multi-latent-attention \
    --q-lora-rank "$q_lora" --kv-lora-rank "$kv_lora" --qk-head-dim "$qk" \
    --qk-pos-emb-head-dim "$rope" --v-head-dim "$v" --qk-layernorm --normalization RMSNorm \
    --swiglu --disable-bias-linear --untie-embeddings-and-output-weights \
    --position-embedding-type rope --seq-length $((prompt + decode)) \
    --max-position-embeddings $((prompt + decode)) --micro-batch-size 1 --global-batch-size 1 \
    --train-iters 1 --lr 1e-4 --mock-data --tokenizer-type NullTokenizer --vocab-size "$vocab" \
    --data-cache-path "$work/cache" --eval-iters 0 --save "$work/ckpt" --save-interval 1 \
    --no-save-optim > "$work/train.log" 2>&1 || { cat "$work/train.log"; exit 1; }

rate() {  # file what batch -> tokens/s
    awk -v w="$2" -v b="batch=$3" '$1 == w && $2 == b { sub("tokens_per_s=", "", $5); print $5 }' "$1"
}
cache_bytes() {  # file batch -> bytes per token
    awk -v b="batch=$2" '$1 == "cache" && $2 == b { sub("bytes_per_token=", "", $3); print $3 }' "$1"
}

echo "| engine | precision | prefill tokens/s B=1 | decode tokens/s B=1 | prefill tokens/s B=8 | decode tokens/s B=8 | cache bytes/token |"
echo "|---|---|---|---|---|---|---|"
for precision in fp32 bf16; do
    flag="" bytes=4
    [ "$precision" = bf16 ] && flag="--bf16" bytes=2
    "$build/bin/mt_bench_inference" "$work/ckpt" --prompt "$prompt" --decode "$decode" \
        --batch 1,8 --repeat "$repeat" --no-bandwidth $flag > "$work/ours"
    echo "| megatron.cpp | $precision | $(rate "$work/ours" prefill 1) | $(rate "$work/ours" decode 1) |" \
        "$(rate "$work/ours" prefill 8) | $(rate "$work/ours" decode 8) |" \
        "$((layers * (kv_lora + rope) * bytes)) |"
    if [ -z "${PYTHON:-}" ]; then
        echo "| transformers DeepseekV3 | $precision | PYTHON not set: skipped | | | | |"
        continue
    fi
    "$PYTHON" bench/mla_decode_peer.py --threads "$threads" --layers "$layers" \
        --hidden "$hidden" --heads "$heads" --ffn "$ffn" --vocab "$vocab" \
        --q-lora-rank "$q_lora" --kv-lora-rank "$kv_lora" --qk-head-dim "$qk" \
        --qk-pos-emb-head-dim "$rope" --v-head-dim "$v" --prompt "$prompt" --decode "$decode" \
        --batch 1 8 --repeat "$repeat" $flag > "$work/peer" 2> /dev/null
    echo "| transformers DeepseekV3 | $precision | $(rate "$work/peer" prefill 1) | $(rate "$work/peer" decode 1) |" \
        "$(rate "$work/peer" prefill 8) | $(rate "$work/peer" decode 8) | $(cache_bytes "$work/peer" 8) |"
done
