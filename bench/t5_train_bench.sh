#!/usr/bin/env bash
# T5 pretraining speed of megatron-train --model t5 (fp32 and --bf16) beside megatron-core's own
# T5Model trained with PyTorch (bench/t5_torch_peer.py; fp32, bf16 with torch.autocast) in the
# same run, same threads: T5-220M shapes (examples/t5/train_t5_220m_distributed.sh: 12 + 12
# layers, hidden 768, 12 heads, FFN 3072) at B=2, encoder 256, decoder 64 positions (the
# example's 512 / 128 halved to keep an iteration in seconds on 2 cores). Prints a markdown table:
# ms/iteration, tokens/s (encoder + decoder positions) and peak RSS.
#   MEGATRON_TEST_DATA=../shared/data PYTHON=/path/to/venv/bin/python \
#       MEGATRON_LM=/path/to/Megatron-LM bench/t5_train_bench.sh
# PYTHON (torch) and MEGATRON_LM (a core_v0.13 tree): unset, the peer is skipped, saying so.
# THREADS (default 2), ITERS (timed iterations, default 3, after 2 warm-up ones) and BUILD_DIR
# (default build) may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/train_bench_common.sh
build="${BUILD_DIR:-build}"
data="${MEGATRON_TEST_DATA:?set MEGATRON_TEST_DATA to the shared data directory}"
threads="${THREADS:-2}" iters="${ITERS:-3}" warmup=2
layers=12 hidden=768 heads=12 ffn=3072 enc=256 dec=64 batch=2
export OMP_NUM_THREADS="$threads"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

bert_sentence_corpus "$data" "$build" "$work" "$threads"

row() {  # name ms rss-kb
    awk -v name="$1" -v ms="$2" -v rss="$3" -v tok=$((batch * (enc + dec))) 'BEGIN {
        printf "| %s | %.1f | %.1f | %.0f |\n", name, ms, tok / (ms / 1000), rss / 1024 }'
}

echo "| run | ms/iteration | tokens/s | peak RSS (MB) |"
echo "|---|---|---|---|"
for precision in fp32 bf16; do
    flag=""
    [ "$precision" = bf16 ] && flag="--bf16"
    log="$work/log"
    /usr/bin/time -f "%M" -o "$work/rss" "$build/bin/megatron-train" --model t5 \
        --encoder-num-layers "$layers" --decoder-num-layers "$layers" --hidden-size "$hidden" \
        --num-attention-heads "$heads" --kv-channels $((hidden / heads)) --ffn-hidden-size "$ffn" \
        --encoder-seq-length "$enc" --decoder-seq-length "$dec" --max-position-embeddings "$enc" \
        --micro-batch-size "$batch" --global-batch-size "$batch" \
        --train-iters $((warmup + iters)) --lr 1e-4 --vocab-extra-ids 100 \
        --vocab-file "$vocab" --data-path "$work/corpus_text_sentence" --split 98,1,1 \
        --data-cache-path "$work/cache" --log-interval 1 --eval-iters 0 $flag \
        > "$log" 2>&1 || { cat "$log"; exit 1; }
    row "megatron-train $precision" "$(mean_step_ms "$warmup" < "$log")" "$(cat "$work/rss")"
    if [ -z "${PYTHON:-}" ] || [ -z "${MEGATRON_LM:-}" ]; then
        echo "| megatron-core T5Model (PyTorch) $precision | PYTHON or MEGATRON_LM not set: skipped | | |"
        continue
    fi
    peer=$(PYTHONPATH="$MEGATRON_LM" /usr/bin/time -f "%M" -o "$work/rss" "$PYTHON" \
        bench/t5_torch_peer.py --layers "$layers" --hidden "$hidden" --heads "$heads" \
        --ffn "$ffn" --enc "$enc" --dec "$dec" --batch "$batch" --iters "$iters" \
        --warmup "$warmup" --threads "$threads" $flag 2> /dev/null | tail -1)
    row "megatron-core T5Model (PyTorch) $precision" "$(echo "$peer" | awk '{print $4}')" \
        "$(cat "$work/rss")"
done
