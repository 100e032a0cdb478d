#!/usr/bin/env bash
# Speed quiet and with one core taken (a busy loop this script starts beside the run), for
# libgomp's wait settings: prefill and decode of a Hugging Face folder (mt_bench_inference) and
# bf16 training of a 6-layer / 384 GPT (megatron-train). Prints a markdown table; each cell is
# tokens/s (inference) or the mean ms of iterations 3.. (training). Issue 34, item 5.
#   MEGATRON_TEST_DATA=../shared/data bench/load_bench.sh MODEL_FOLDER
# MODEL_FOLDER: e.g. the gpt2-small folder bench/hf_inference.py make writes (inference_bench.sh
# keeps it in its work folder). THREADS (default 2), SETTINGS (default: libgomp's default,
# OMP_WAIT_POLICY=passive, and GOMP_SPINCOUNT=1000, the inference tools' choice) and BUILD_DIR
# may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/train_bench_common.sh
bench_paths
model="${1:?give a Hugging Face model folder (e.g. bench/hf_inference.py make gpt2-small)}"
threads="${THREADS:-2}"
settings="${SETTINGS:-default OMP_WAIT_POLICY=passive GOMP_SPINCOUNT=1000}"
work="$(mktemp -d)"
busy=""
trap '[ -n "$busy" ] && kill "$busy" 2>/dev/null; rm -rf "$work"' EXIT

"$bin/megatron-preprocess" --input "$corpus" --output-prefix "$work/corpus" \
    --tokenizer-type GPT2BPETokenizer --vocab-file "$data/gpt2/gpt2-vocab.json" \
    --merge-file "$data/gpt2/gpt2-merges.txt" --append-eod --workers "$threads" > /dev/null 2>&1

# "default" clears both variables; the rest are VAR=VALUE. The tools' own choice is overridden
# by either variable, so every setting is what libgomp runs with.
with_setting() {  # setting command...
    local setting="$1"
    shift
    if [ "$setting" = default ]; then
        env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT GOMP_SPINCOUNT=300000 OMP_NUM_THREADS="$threads" "$@"
    else
        env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$setting" OMP_NUM_THREADS="$threads" "$@"
    fi
}
inference() {  # setting -> "prefill decode"
    with_setting "$1" "$bin/mt_bench_inference" "$model" --no-bandwidth --batch 1 --prompt 128 \
        --decode 64 --repeat 2 2>&1 | grep -oE " tokens_per_s=[0-9.]+" | sed 's/.*=//' | tr '\n' ' '
}
training() {  # setting -> mean ms
    with_setting "$1" "$bin/megatron-train" --num-layers 6 --hidden-size 384 \
        --num-attention-heads 6 --seq-length 256 --max-position-embeddings 1024 \
        --micro-batch-size 8 --global-batch-size 8 --train-iters 6 --lr 1e-4 --bf16 \
        --vocab-file "$data/gpt2/gpt2-vocab.json" --merge-file "$data/gpt2/gpt2-merges.txt" \
        --data-path "$work/corpus_text_document" --split 100,0,0 \
        --data-cache-path "$work/cache" --log-interval 1 --eval-iters 0 > "$work/log" 2>&1 ||
        { cat "$work/log" >&2; exit 1; }
    grep -o 'elapsed time per iteration (ms): [0-9.]*' "$work/log" | awk '{ print $NF }' |
        tail -n +3 | awk '{ s += $1 } END { printf "%.0f", s / NR }'
}

echo "| setting | prefill tok/s quiet / busy | decode tok/s quiet / busy | training ms quiet / busy |"
echo "|---|---|---|---|"
for setting in $settings; do
    read -r pq dq <<< "$(inference "$setting")"
    tq=$(training "$setting")
    ( while :; do :; done ) &
    busy=$!
    sleep 0.5
    read -r pb db <<< "$(inference "$setting")"
    tb=$(training "$setting")
    kill "$busy"
    wait "$busy" 2>/dev/null || true
    busy=""
    echo "| $setting | $pq / $pb | $dq / $db | $tq / $tb |"
done
