#!/usr/bin/env bash
# BERT pretraining speed of megatron-train --model bert (fp32 and --bf16) beside Hugging Face
# transformers' BertForPreTraining on PyTorch (fp32 with SDPA, bf16 with torch.autocast) in the
# same run, same threads: BERT-base shapes (12 layers, hidden 768, 12 heads), B=8, T=128.
# Prints a markdown table: ms/iteration, tokens/s, MFU (6N + 12 L T h FLOPs per token over the
# fp32 sgemm peak, or for bf16 the bf16 dot-product peak) and peak RSS.
#   MEGATRON_TEST_DATA=../shared/data PYTHON=/path/to/venv/bin/python bench/bert_train_bench.sh
# PYTHON: an interpreter with torch and transformers; unset, the peer is skipped, saying so.
# THREADS (default 2), ITERS (timed iterations, default 3, after 2 warm-up ones), SGEMM_PEAK and
# BF16_PEAK (GFLOP/s, default 200 and 450) and BUILD_DIR (default build) may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/train_bench_common.sh
build="${BUILD_DIR:-build}"
data="${MEGATRON_TEST_DATA:?set MEGATRON_TEST_DATA to the shared data directory}"
threads="${THREADS:-2}" iters="${ITERS:-3}" warmup=2
sgemm_peak="${SGEMM_PEAK:-200}" bf16_peak="${BF16_PEAK:-450}"
layers=12 hidden=768 heads=12 seq=128 batch=8
export OMP_NUM_THREADS="$threads"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

bert_sentence_corpus "$data" "$build" "$work" "$threads"


row() {  # name tokens-per-iter peak-gflops ms rss-kb params
    awk -v name="$1" -v tok="$2" -v peak="$3" -v ms="$4" -v rss="$5" -v N="$6" \
        -v L="$layers" -v T="$seq" -v h="$hidden" 'BEGIN {
        tps = tok / (ms / 1000); flops = 6 * N + 12 * L * T * h
        printf "| %s | %.1f | %.1f | %.1f%% | %.0f |\n", name, ms, tps, 100 * tps * flops / (peak * 1e9), rss / 1024 }'
}

echo "| run (BERT-base, B=$batch T=$seq) | ms/iteration | tokens/s | MFU | peak RSS (MB) |"
echo "|---|---|---|---|---|"
for precision in fp32 bf16; do
    flag="" peak="$sgemm_peak"
    [ "$precision" = bf16 ] && flag="--bf16" peak="$bf16_peak"
    log="$work/log"
    /usr/bin/time -f "%M" -o "$work/rss" "$build/bin/megatron-train" --model bert \
        --num-layers $layers --hidden-size $hidden --num-attention-heads $heads \
        --seq-length $seq --max-position-embeddings 512 --micro-batch-size $batch \
        --global-batch-size $batch --train-iters $((warmup + iters)) --lr 1e-4 \
        --vocab-file "$vocab" --data-path "$work/corpus_text_sentence" --split 98,1,1 \
        --data-cache-path "$work/cache" --log-interval 1 --eval-iters 0 \
        $flag > "$log" 2>&1 || { cat "$log"; exit 1; }
    params=$(grep -o 'model parallel rank (0, 0): [0-9]*' "$log" | awk '{print $NF}')
    row "megatron-train --model bert $precision" $((seq * batch)) "$peak" \
        "$(mean_step_ms "$warmup" < "$log")" "$(cat "$work/rss")" "$params"
    if [ -z "${PYTHON:-}" ]; then
        echo "| transformers BertForPreTraining $precision | PYTHON not set: skipped | | | |"
        continue
    fi
    peer=$(/usr/bin/time -f "%M" -o "$work/rss" "$PYTHON" bench/bert_torch_peer.py \
        --layers $layers --hidden $hidden --heads $heads --seq $seq --batch $batch \
        --iters "$iters" --warmup "$warmup" --threads "$threads" $flag | tail -1)
    row "transformers BertForPreTraining (PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)')) $precision" \
        $((seq * batch)) "$peak" "$(echo "$peer" | awk '{print $4}')" "$(cat "$work/rss")" "$params"
done
