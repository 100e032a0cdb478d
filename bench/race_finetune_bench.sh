#!/usr/bin/env bash
# RACE finetuning speed of megatron-eval --task RACE (BERT-base shapes, sequence 128, two
# questions of four choices per iteration, fp32, from a random BERT) beside Hugging Face
# transformers' BertForMultipleChoice on PyTorch in the same run, same threads. Prints a markdown
# table: ms/iteration and questions/s.
#   MEGATRON_TEST_DATA=../shared/data PYTHON=/path/to/venv/bin/python bench/race_finetune_bench.sh
# PYTHON: an interpreter with torch and transformers; unset, the peer is skipped, saying so.
# THREADS (default 2), ITERS (timed iterations, default 4, after 2 warm-up ones) and BUILD_DIR
# (default build) may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
data="${MEGATRON_TEST_DATA:?set MEGATRON_TEST_DATA to the shared data directory}"
threads="${THREADS:-2}" iters="${ITERS:-4}" warmup=2 batch=2 seq=128
export OMP_NUM_THREADS="$threads"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "| run (RACE, BERT-base, $batch questions x 4 choices, T=$seq, fp32) | ms/iteration | questions/s |"
echo "|---|---|---|"
"$build/bin/megatron-eval" --task RACE --train-data "$data/race/RACE/dev/middle" \
    --valid-data "$data/race/RACE/test/middle" --epochs 1 --exit-interval $((warmup + iters)) \
    --num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length $seq \
    --max-position-embeddings 512 --micro-batch-size $batch --lr 1e-5 --log-interval 1 \
    --tokenizer-type BertWordPieceLowerCase --vocab-file "$data/bert/bert-large-uncased-vocab.txt" \
    > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
ms=$(grep -o 'elapsed time per iteration (ms): [0-9.]*' "$work/log" | awk -v w="$warmup" \
    'NR > w { s += $NF; n++ } END { printf "%.1f", s / n }')
awk -v ms="$ms" -v b=$batch 'BEGIN { printf "| megatron-eval --task RACE | %.1f | %.2f |\n", ms, b / (ms / 1000) }'
if [ -z "${PYTHON:-}" ]; then
    echo "| transformers BertForMultipleChoice | PYTHON not set: skipped | |"
    exit 0
fi
peer=$("$PYTHON" bench/race_torch_peer.py --seq $seq --batch $batch --iters "$iters" \
    --warmup "$warmup" --threads "$threads" | tail -1)
echo "$peer" | awk -v v="$("$PYTHON" -c 'import torch; print(torch.__version__)')" \
    '{ printf "| transformers BertForMultipleChoice (PyTorch %s) | %.1f | %.2f |\n", v, $4, $2 }'
