#!/usr/bin/env bash
# Training speed of megatron-train (fp32 and --bf16) beside PyTorch (fp32 with SDPA, bf16 with
# torch.autocast) in the same run, same threads: GPT-2 124M at B=4 T=256 and B=1 T=1024, and a
# 6-layer / 384 model at B=8 T=256. Prints a markdown table: ms/iteration, tokens/s, MFU (model
# FLOPs 6N + 12 L T h per token over the fp32 sgemm peak, or for bf16 the bf16 dot-product peak)
# and peak RSS.
#   MEGATRON_TEST_DATA=../shared/data PYTHON=/path/to/venv/bin/python bench/train_bench.sh
# PYTHON: an interpreter with torch (the latest from PyPI); unset, the peer is skipped, saying so.
# THREADS (default 2), ITERS (timed iterations, default 4, after 2 warm-up ones), SGEMM_PEAK and
# BF16_PEAK (GFLOP/s, default 200 and 450: this machine's measured OpenBLAS sgemm and vdpbf16ps
# rates, see docs/benchmarks.md) and BUILD_DIR (default build) may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/train_bench_common.sh
build="${BUILD_DIR:-build}"
data="${MEGATRON_TEST_DATA:?set MEGATRON_TEST_DATA to the shared data directory}"
threads="${THREADS:-2}" iters="${ITERS:-4}" warmup=2
sgemm_peak="${SGEMM_PEAK:-200}" bf16_peak="${BF16_PEAK:-450}"
export OMP_NUM_THREADS="$threads"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

vocab="$data/gpt2/gpt2-vocab.json" merges="$data/gpt2/gpt2-merges.txt"
"$build/bin/megatron-preprocess" --input "$data/corpus/gutenberg_large.jsonl" \
    --output-prefix "$work/corpus" --tokenizer-type GPT2BPETokenizer --vocab-file "$vocab" \
    --merge-file "$merges" --append-eod --workers "$threads" > /dev/null 2>&1

# mean of the per-iteration times after the warm-up ones, from Megatron's log lines

row() {  # name layers hidden heads seq batch tokens-per-iter peak-gflops ms rss-kb params
    awk -v name="$1" -v L="$2" -v h="$3" -v T="$5" -v tok="$7" -v peak="$8" -v ms="$9" \
        -v rss="${10}" -v N="${11}" 'BEGIN {
        tps = tok / (ms / 1000); flops = 6 * N + 12 * L * T * h
        printf "| %s | %.1f | %.1f | %.1f%% | %.0f |\n", name, ms, tps, 100 * tps * flops / (peak * 1e9), rss / 1024 }'
}

echo "| run | ms/iteration | tokens/s | MFU | peak RSS (MB) |"
echo "|---|---|---|---|---|"
while IFS='|' read -r label layers hidden heads seq batch; do
    tokens=$((seq * batch))
    for precision in fp32 bf16; do
        flag="" peak="$sgemm_peak"
        [ "$precision" = bf16 ] && flag="--bf16" peak="$bf16_peak"
        log="$work/log"
        /usr/bin/time -f "%M" -o "$work/rss" "$build/bin/megatron-train" \
            --num-layers "$layers" --hidden-size "$hidden" --num-attention-heads "$heads" \
            --seq-length "$seq" --max-position-embeddings 1024 --micro-batch-size "$batch" \
            --global-batch-size "$batch" --train-iters $((warmup + iters)) --lr 1e-4 \
            --vocab-file "$vocab" --merge-file "$merges" --data-path "$work/corpus_text_document" \
            --split 98,1,1 --data-cache-path "$work/cache" --log-interval 1 --eval-iters 0 \
            $flag > "$log" 2>&1 || { cat "$log"; exit 1; }
        params=$(grep -o 'model parallel rank (0, 0): [0-9]*' "$log" | awk '{print $NF}')
        row "megatron-train $precision, $label" "$layers" "$hidden" "$heads" "$seq" "$batch" \
            "$tokens" "$peak" "$(mean_step_ms "$warmup" < "$log")" "$(cat "$work/rss")" "$params"
        if [ -z "${PYTHON:-}" ]; then
            echo "| PyTorch $precision, $label | PYTHON not set: skipped | | | |"
            continue
        fi
        peer=$(/usr/bin/time -f "%M" -o "$work/rss" "$PYTHON" bench/torch_train_peer.py \
            --layers "$layers" --hidden "$hidden" --heads "$heads" --seq "$seq" \
            --batch "$batch" --iters "$iters" --warmup "$warmup" --threads "$threads" \
            $flag | tail -1)
        row "PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)') $precision, $label" \
            "$layers" "$hidden" "$heads" "$seq" "$batch" "$tokens" "$peak" \
            "$(echo "$peer" | awk '{print $4}')" "$(cat "$work/rss")" "$params"
    done
done <<'EOF'
GPT-2 124M B=4 T=256|12|768|12|256|4
GPT-2 124M B=1 T=1024|12|768|12|1024|1
6L/384 B=8 T=256|6|384|6|256|8
EOF
