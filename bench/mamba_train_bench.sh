#!/usr/bin/env bash
# Training speed of a Mamba-2 130M-shaped model (24 Mamba layers, hidden 768, 24 heads of 64, one
# group, state 128, GPT-2's vocabulary) with megatron-train --model mamba (fp32 and --bf16) beside
# transformers' Mamba2ForCausalLM torch path (bench/mamba_torch_peer.py) in the same run, same
# threads, on random tokens (megatron-train --mock-data). Prints a markdown table: ms/iteration,
# tokens/s and peak RSS.
#   PYTHON=/path/to/venv/bin/python bench/mamba_train_bench.sh
# PYTHON: an interpreter with torch and transformers; unset, the peer is skipped, saying so.
# THREADS (default 2), ITERS (timed iterations, default 4, after 2 warm-up ones), SEQ (default
# 512), BATCH (default 1) and BUILD_DIR (default build) may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/train_bench_common.sh
build="${BUILD_DIR:-build}"
threads="${THREADS:-2}" iters="${ITERS:-4}" warmup=2 seq="${SEQ:-512}" batch="${BATCH:-1}"
export OMP_NUM_THREADS="$threads"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# mean of the per-iteration times after the warm-up ones, from Megatron's log lines
row() {  # name ms rss-kb
    awk -v name="$1" -v ms="$2" -v rss="$3" -v tok=$((seq * batch)) 'BEGIN {
        printf "| %s | %.1f | %.1f | %.0f |\n", name, ms, tok / (ms / 1000), rss / 1024 }'
}

echo "| run (B=$batch T=$seq, $threads threads) | ms/iteration | tokens/s | peak RSS (MB) |"
echo "|---|---|---|---|"
for precision in fp32 bf16; do
    flag=""
    [ "$precision" = bf16 ] && flag="--bf16"
    log="$work/log"
    /usr/bin/time -f "%M" -o "$work/rss" "$build/bin/megatron-train" --model mamba \
        --num-layers 24 --hidden-size 768 --num-attention-heads 12 --mamba-num-groups 1 \
        --mamba-state-dim 128 --mamba-head-dim 64 --normalization RMSNorm \
        --position-embedding-type none --disable-bias-linear --seq-length "$seq" \
        --max-position-embeddings "$seq" --micro-batch-size "$batch" --mock-data \
        --tokenizer-type NullTokenizer --vocab-size 50256 --lr 1e-4 \
        --train-iters $((warmup + iters)) --log-interval 1 --eval-iters 0 \
        $flag > "$log" 2>&1 || { cat "$log"; exit 1; }
    row "megatron-train $precision" "$(mean_step_ms "$warmup" < "$log")" "$(cat "$work/rss")"
    if [ -z "${PYTHON:-}" ]; then
        echo "| transformers $precision | PYTHON not set: skipped | | |"
        continue
    fi
    peer=$(/usr/bin/time -f "%M" -o "$work/rss" "$PYTHON" bench/mamba_torch_peer.py \
        --seq "$seq" --batch "$batch" --iters "$iters" --warmup "$warmup" --threads "$threads" \
        $flag | tail -1)
    row "transformers $("$PYTHON" -c 'import transformers; print(transformers.__version__)') + PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)') $precision" \
        "$(echo "$peer" | awk '{print $4}')" "$(cat "$work/rss")"
done
