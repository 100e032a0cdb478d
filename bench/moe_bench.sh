#!/usr/bin/env bash
# Mixture-of-experts speed beside the peers, in one run: training tokens/s of a Mixtral-shaped
# model (4 layers, hidden 512, 8 experts of FFN 1024, top-2, GQA 8/2, vocabulary 32000; B=4,
# T=256, fp32) for megatron-train with SequentialMLP experts, with --moe-grouped-gemm, and with
# expert parallelism over 2 MPI ranks (allgather and alltoall dispatch, 1 thread each), beside
# transformers' MixtralForCausalLM training step (bench/mixtral_train_peer.py) with the same
# threads; then decode of the same shape through bench/inference_bench.sh (MODELS=mixtral-tiny:
# megatron.cpp, transformers and llama.cpp f32), whose bandwidth limit counts the experts a step
# reads (1 - (1 - 2/8)^batch of them). Prints markdown.
#   PYTHON=/path/to/venv/bin/python [LLAMA_CPP_DIR=...] bench/moe_bench.sh
# PYTHON: torch + transformers (the latest from PyPI); unset, the peers are skipped, saying so.
# LLAMA_CPP_DIR: see bench/inference_bench.sh. THREADS (default 2), ITERS (timed iterations,
# default 4, after 2 warm-up ones), SGEMM_PEAK (GFLOP/s, default 200) and BUILD_DIR may be set
# (the EP2 runs use bench/train_bench_common.sh's mpirun line).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
threads="${THREADS:-2}" iters="${ITERS:-4}" warmup=2
sgemm_peak="${SGEMM_PEAK:-200}"
source bench/train_bench_common.sh
mpi_launcher 2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
seq=256 batch=4

model="--num-layers 4 --hidden-size 512 --num-attention-heads 8 --group-query-attention
    --num-query-groups 2 --ffn-hidden-size 1024 --num-experts 8 --moe-router-topk 2
    --moe-aux-loss-coeff 1e-2 --swiglu --normalization RMSNorm --position-embedding-type rope
    --rotary-base 1000000 --disable-bias-linear --untie-embeddings-and-output-weights
    --seq-length $seq --max-position-embeddings 1024 --micro-batch-size $batch
    --global-batch-size $batch --tokenizer-type NullTokenizer --vocab-size 31999 --mock-data
    --hidden-dropout 0 --attention-dropout 0 --lr 1e-4 --log-interval 1 --eval-iters 0
    --train-iters $((warmup + iters))"

# Mean of the per-iteration times after the warm-up ones, from Megatron's log lines.
# Model FLOPs per token of training: 6 x the parameters a token uses (attention, its 2 of the 8
# experts, the router, the output layer) + the attention scores 12 L T h.
active=$(awk 'BEGIN { h = 512; L = 4; f = 1024; V = 32000; kv = 2 * 64 * 2;
    attn = h * (h + kv) + h * h; expert = 3 * h * f; router = 8 * h;
    print L * (attn + 2 * expert + router) + V * h }')
flops_per_token=$(awk -v n="$active" -v T=$seq 'BEGIN { print 6 * n + 12 * 4 * T * 512 }')
row() {  # name ms
    awk -v name="$1" -v ms="$2" -v tok=$((seq * batch)) -v f="$flops_per_token" \
        -v peak="$sgemm_peak" 'BEGIN { tps = tok / (ms / 1000)
        printf "| %s | %.1f | %.1f | %.1f%% |\n", name, ms, tps, 100 * tps * f / (peak * 1e9) }'
}

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); threads: $threads;" \
    "B=$batch T=$seq fp32; $iters timed iterations after $warmup; MFU over $sgemm_peak GFLOP/s" \
    "with $(awk -v n="$active" 'BEGIN { printf "%.1fM", n / 1e6 }') parameters per token"
echo
echo "| run | ms/iteration | tokens/s | MFU |"
echo "|---|---|---|---|"
for variant in "SequentialMLP experts|" "--moe-grouped-gemm|--moe-grouped-gemm"; do
    label="${variant%%|*}" flags="${variant#*|}"
    OMP_NUM_THREADS=$threads "$build/bin/megatron-train" $model $flags >"$work/log" 2>&1 ||
        { cat "$work/log"; exit 1; }
    row "megatron-train, 1 process x $threads threads, $label" "$(mean_step_ms "$warmup" <"$work/log")"
done
for dispatcher in allgather alltoall; do
    # Each rank a micro-batch of half the samples: the same global batch.
    "${mpi[@]}" "$build/bin/megatron-train" $model \
        --micro-batch-size $((batch / 2)) --expert-model-parallel-size 2 \
        --moe-token-dispatcher-type $dispatcher >"$work/log" 2>&1 ||
        { cat "$work/log"; exit 1; }
    row "megatron-train, EP2: 2 ranks x 1 thread, $dispatcher" "$(mean_step_ms "$warmup" <"$work/log")"
done
if [ -n "${PYTHON:-}" ]; then
    tv=$("$PYTHON" -c 'import torch, transformers; print(f"{transformers.__version__}, torch {torch.__version__}")')
    ms=$(OMP_NUM_THREADS=$threads "$PYTHON" bench/mixtral_train_peer.py --seq $seq --batch $batch \
        --iters "$iters" --warmup $warmup --threads "$threads" | awk '{ print $4 }')
    row "transformers $tv MixtralForCausalLM, $threads threads" "$ms"
else
    echo "| transformers: skipped (set PYTHON) | | | |"
fi
echo
MODELS=mixtral-tiny THREADS=$threads bench/inference_bench.sh "${MOE_WORK_DIR:-/tmp/mt-moe-bench}"
