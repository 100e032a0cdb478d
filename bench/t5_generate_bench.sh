#!/usr/bin/env bash
# T5 encoder-decoder generation speed: a T5-220M-shaped checkpoint (examples/t5/
# train_t5_220m_distributed.sh's shapes: 12 + 12 layers, hidden 768, 12 heads of 64, FFN 3072,
# the BERT vocabulary with 100 sentinels padded to 30720) written by one megatron-train iteration,
# generated from by mt_bench_inference --family t5 (the encoder over a prompt of PROMPT random
# tokens and the decoder's first step, then DECODE greedy steps through the self-attention KV
# cache and the cross-attention keys), beside transformers' T5ForConditionalGeneration of the
# same shapes (bench/t5_generate_peer.py) in the same run, same threads, fp32 and bf16. Prints a
# markdown table of prefill and decode tokens/s at batch 1 and 8.
#   MEGATRON_TEST_DATA=../shared/data PYTHON=/path/to/venv/bin/python bench/t5_generate_bench.sh
# PYTHON (torch + transformers): unset, the peer is skipped, saying so. THREADS (default 2),
# PROMPT (default 256), DECODE (default 64), REPEAT (default 2) and BUILD_DIR (default build)
# may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/train_bench_common.sh
build="${BUILD_DIR:-build}"
data="${MEGATRON_TEST_DATA:?set MEGATRON_TEST_DATA to the shared data directory}"
threads="${THREADS:-2}" prompt="${PROMPT:-256}" decode="${DECODE:-64}" repeat="${REPEAT:-2}"
layers=12 hidden=768 heads=12 ffn=3072
export OMP_NUM_THREADS="$threads"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

bert_sentence_corpus "$data" "$build" "$work" "$threads"
"$build/bin/megatron-train" --model t5 \
    --encoder-num-layers "$layers" --decoder-num-layers "$layers" --hidden-size "$hidden" \
    --num-attention-heads "$heads" --kv-channels $((hidden / heads)) --ffn-hidden-size "$ffn" \
    --encoder-seq-length "$prompt" --decoder-seq-length "$decode" \
    --max-position-embeddings "$prompt" --micro-batch-size 2 --global-batch-size 2 \
    --train-iters 1 --lr 1e-4 --vocab-extra-ids 100 --vocab-file "$vocab" \
    --data-path "$work/corpus_text_sentence" --split 98,1,1 --data-cache-path "$work/cache" \
    --eval-iters 0 --save "$work/ckpt" --save-interval 1 --no-save-optim \
    > "$work/train.log" 2>&1 || { cat "$work/train.log"; exit 1; }

rate() {  # file what batch -> tokens/s
    awk -v w="$2" -v b="batch=$3" '$1 == w && $2 == b { sub("tokens_per_s=", "", $5); print $5 }' "$1"
}

echo "| engine | precision | prefill tokens/s B=1 | decode tokens/s B=1 | prefill tokens/s B=8 | decode tokens/s B=8 |"
echo "|---|---|---|---|---|---|"
for precision in fp32 bf16; do
    flag=""
    [ "$precision" = bf16 ] && flag="--bf16"
    "$build/bin/mt_bench_inference" "$work/ckpt" --family t5 --prompt "$prompt" \
        --decode "$decode" --batch 1,8 --repeat "$repeat" --no-bandwidth $flag > "$work/ours"
    echo "| megatron.cpp | $precision | $(rate "$work/ours" prefill 1) | $(rate "$work/ours" decode 1) |" \
        "$(rate "$work/ours" prefill 8) | $(rate "$work/ours" decode 8) |"
    if [ -z "${PYTHON:-}" ]; then
        echo "| transformers T5 | $precision | PYTHON not set: skipped | | | |"
        continue
    fi
    "$PYTHON" bench/t5_generate_peer.py --threads "$threads" --layers "$layers" \
        --hidden "$hidden" --heads "$heads" --ffn "$ffn" --prompt "$prompt" --decode "$decode" \
        --batch 1 8 --repeat "$repeat" $flag > "$work/peer" 2> /dev/null
    echo "| transformers T5 | $precision | $(rate "$work/peer" prefill 1) | $(rate "$work/peer" decode 1) |" \
        "$(rate "$work/peer" prefill 8) | $(rate "$work/peer" decode 8) |"
done
