#!/usr/bin/env bash
# Pipeline and context parallelism on one machine, printed as markdown: megatron-train's GPT-2
# 124M (fp32) on the 2 cores as one process x 2 threads and as 2 ranks x 1 thread:
#   sequence 256, 8 micro-batches of 1:  (a) 1 process   (b) PP2, 1F1B, 6 + 6 layers
#     (c) PP2, 1F1B, 9 + 3 layers (the output layer weighs about 5 layers)
#     (d) PP2 x VP2, interleaved, 3 + 3 | 3 + 3   (e) PP2 x VP2, 4 + 2 | 4 + 2
#   the same at sequence 256 on chunks that weigh the same (--mock-data, NullTokenizer with a
#   4096-id vocabulary: the output layer is 1/12 of a layer): (h) 1 process (i) PP2, 6 + 6
#     (j) PP2 x VP2, 3 + 3 | 3 + 3
#   sequence 2048, 1 micro-batch:        (f) 1 process   (g) CP2
# For each: the step time and tokens/s beside the one-process run; for the pipelines the
# bubble each stage measured in its schedule trace (--schedule-trace-dir: the forward-backward
# time not spent in forwards and backwards, over the time spent in them) beside Megatron's
# (p-1)/m and (p-1)/(v.m); and the bytes each rank sent per iteration through each group
# (--log-rank-stats) beside the formula (docs/benchmarks.md).
#   MEGATRON_TEST_DATA=../shared/data bench/pipeline_train_bench.sh
# LAYOUTS="f g" runs only those layouts (each needs its base: a, h or f; default all).
# SMALL=1: a 4-layer, hidden-64 model at sequences 64 and 256 (a smoke run). ITERS (default 5)
# iterations per run, iterations 3..ITERS timed; KEEP=1 keeps the work folder; BUILD_DIR selects
# the build. Prerequisites: a build with MPI and Open MPI's mpirun. Builds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/train_bench_common.sh
bench_paths
if [ "${SMALL:-0}" = 1 ]; then
    layers=4 hidden=64 heads=4 seq=64 long=256 first=3 vfirst=2
else
    layers=12 hidden=768 heads=12 seq=256 long=2048 first=9 vfirst=8
fi
iters=${ITERS:-5} m=8 vocab=50257
[ "$iters" -ge 3 ] || { echo "ITERS must be at least 3 (iterations 3.. are timed)" >&2; exit 1; }
make_work_corpus  # $work, with $work/corpus_text_document

common=(--num-layers "$layers" --hidden-size "$hidden" --num-attention-heads "$heads"
    --micro-batch-size 1 --hidden-dropout 0 --attention-dropout 0
    --train-iters "$iters" --log-interval 1 --eval-iters 0 --split "100,0,0"
    --lr 1e-4 --lr-decay-style constant --make-vocab-size-divisible-by 128 --log-rank-stats)
text=(--data-path "$work/corpus_text_document" --tokenizer-type GPT2BPETokenizer
    --vocab-file "$data/gpt2/gpt2-vocab.json" --merge-file "$data/gpt2/gpt2-merges.txt")
# MockGPTDataset's ids reach 4095: 4095 + NullTokenizer's EOD = 4096 rows.
mock=(--mock-data --tokenizer-type NullTokenizer --vocab-size 4095)
short=(--seq-length "$seq" --max-position-embeddings "$seq" --global-batch-size "$m" "${text[@]}")
balanced=(--seq-length "$seq" --max-position-embeddings "$seq" --global-batch-size "$m" "${mock[@]}")
longer=(--seq-length "$long" --max-position-embeddings "$long" --global-batch-size 1 "${text[@]}")
mpi_launcher 2

layouts=" ${LAYOUTS:-a b c d e h i j f g} "
wanted() { [[ "$layouts" == *" $1 "* ]]; }
declare -A cmdline
run() {  # name ranks flags...
    local name=$1 ranks=$2
    shift 2
    wanted "$name" || return 0
    local cmd
    if [ "$ranks" = 1 ]; then
        cmd=(env OMP_NUM_THREADS=2 "$bin/megatron-train" "${common[@]}" "$@")
        cmdline[$name]="OMP_NUM_THREADS=2 megatron-train COMMON $*"
    else
        cmd=("${mpi[@]}" --bind-to core "$bin/megatron-train" "${common[@]}" "$@"
            --schedule-trace-dir "$work/$name.trace")
        cmdline[$name]="${mpi[*]} --bind-to core megatron-train COMMON $* --schedule-trace-dir DIR"
    fi
    if ! "${cmd[@]}" >"$work/$name.log" 2>&1; then
        echo "error: layout $name failed; the end of its log:" >&2
        tail -20 "$work/$name.log" >&2
        exit 1
    fi
}

# The pipeline bubble over iterations 3.., from the ranks' schedule traces: the time of
# forward-backward not spent in forwards and backwards (waiting for a neighbour), over the
# time spent in them, of all stages together (Megatron's (p-1)/m counts it so), then per stage.
bubble() {  # name
    awk '
        /"cat": "(forward|backward|forward-backward)"/ {
            match($0, /"cat": "[a-z-]+"/); cat = substr($0, RSTART + 8, RLENGTH - 9)
            match($0, /"dur": [0-9.]+/); dur = substr($0, RSTART + 7, RLENGTH - 7) + 0
            match($0, /"iteration": [0-9]+/); it = substr($0, RSTART + 13, RLENGTH - 13) + 0
            match($0, /"tid": [0-9]+/); r = substr($0, RSTART + 7, RLENGTH - 7) + 0
            if (it < 3) next
            if (cat == "forward-backward") span[r] += dur; else busy[r] += dur
        }
        END {
            all_idle = 0; all_busy = 0; per = ""
            for (r = 0; r in span; ++r) {
                all_idle += span[r] - busy[r]; all_busy += busy[r]
                per = per (r ? " / " : "") sprintf("%.3f", (span[r] - busy[r]) / busy[r])
            }
            printf "%.3f (%s)", all_idle / all_busy, per
        }' "$work/$1.trace"/schedule_rank*.json
}

# Bytes each rank should send per iteration, "r0 / r1" per group (formulas in
# docs/benchmarks.md): L layers, hidden h, padded vocabulary V, b = 1, m micro-batches,
# sequence s; pp stages (v chunks each) or cp ranks.
formula() {  # group(pp|emb|cp|dpcp) s m pp v cp vocab
    awk -v g="$1" -v s="$2" -v m="$3" -v p="$4" -v v="$5" -v c="$6" -v vocab="$7" -v L="$layers" \
        -v h="$hidden" '
    function up(n, k) { return int((n + k - 1) / k) * k }
    BEGIN {
        V = up(vocab, 128); out = ""
        ranks = p * c
        # Parameters (GPT-2: 12h^2 + 13h per layer, word and position embeddings, final norm).
        P = V * h + s * h + L * (12 * h * h + 13 * h) + 2 * h
        for (r = 0; r < ranks; ++r) {
            x = 0
            if (g == "pp" && p > 1) {
                # Each micro-batch crosses into the next chunk forward and back: a stage sends
                # every chunk output but the model`s last, every input gradient but the first.
                fwd = v - (r == p - 1); bwd = v - (r == 0)
                x = 4 * m * s * h * (fwd + bwd)
            }
            if (g == "emb" && p > 1) x = 4 * V * h  # the tied word embeddings, first and last
            if (g == "cp" && c > 1) {
                # Per layer and micro-batch: keys and values passed on c-1 times forward and
                # c-1 times backward, their gradients c times: b.(s/c).h each; and the loss
                # tokens of each micro-batch (1 f64).
                x = 4 * m * L * (6 * c - 4) * s / c * h + 8 * m
            }
            # The gradients; the reported loss (sum, tokens, sum of means, micro-batches: 4 f64).
            if (g == "dpcp" && c > 1) x = 4 * P + 32
            out = out (r ? " / " : "") sprintf("%.0f", x)
        }
        # One value when every rank agrees (as rank_bytes prints).
        n = split(out, a, " / "); same = 1
        for (i = 2; i <= n; ++i) if (a[i] != a[1]) same = 0
        print same ? a[1] : out
    }'
}

run a 1 "${short[@]}"
run b 2 "${short[@]}" --pipeline-model-parallel-size 2
run c 2 "${short[@]}" --pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers "$first"
run d 2 "${short[@]}" --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2
run e 2 "${short[@]}" --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 \
    --decoder-first-pipeline-num-layers "$vfirst"
run h 1 "${balanced[@]}"
run i 2 "${balanced[@]}" --pipeline-model-parallel-size 2
run j 2 "${balanced[@]}" --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2
run f 1 "${longer[@]}"
run g 2 "${longer[@]}" --context-parallel-size 2

declare -A label spec
label[a]="(a) 1 process x 2 threads, seq $seq"
label[b]="(b) PP2, 1F1B, $((layers / 2)) + $((layers / 2)) layers"
label[c]="(c) PP2, 1F1B, $first + $((layers - first)) layers"
label[d]="(d) PP2 x VP2, interleaved, $((layers / 4)) + $((layers / 4)) per stage"
label[e]="(e) PP2 x VP2, interleaved, $((vfirst / 2)) + $((vfirst / 2)) | $(((layers - vfirst) / 2)) + $(((layers - vfirst) / 2))"
label[h]="(h) 1 process x 2 threads, seq $seq, vocabulary 4096"
label[i]="(i) PP2, 1F1B, $((layers / 2)) + $((layers / 2)) layers, vocabulary 4096"
label[j]="(j) PP2 x VP2, $((layers / 4)) + $((layers / 4)) per stage, vocabulary 4096"
label[f]="(f) 1 process x 2 threads, seq $long"
label[g]="(g) CP2, seq $long"
spec[b]="$seq $m 2 1 1 $vocab" spec[c]="$seq $m 2 1 1 $vocab" spec[d]="$seq $m 2 2 1 $vocab"
spec[e]="$seq $m 2 2 1 $vocab" spec[i]="$seq $m 2 1 1 4096" spec[j]="$seq $m 2 2 1 4096"
spec[g]="$long 1 1 1 2 $vocab"

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); $(mpirun --version 2>&1 | head -1)"
echo "model: GPT-2 style, $layers layers, hidden $hidden, $heads heads, padded vocabulary" \
    "$(((vocab + 127) / 128 * 128)), fp32, micro-batch 1; $iters iterations, median of 3..$iters"
echo
echo "| layout | ms/iteration | tokens/s | x 1 process | bubble measured: all stages (each stage) | bubble: Megatron's formula |"
echo "|---|---|---|---|---|---|"
for n in a b c d e h i j f g; do
    wanted "$n" || continue
    ms=$(median_step_ms "$work/$n.log")
    case $n in
        a | b | c | d | e) tokens=$((m * seq)) base=a ;;
        h | i | j) tokens=$((m * seq)) base=h ;;
        *) tokens=$long base=f ;;
    esac
    case $n in
        b | c | i) measured=$(bubble "$n") formula=$(awk -v m=$m 'BEGIN { printf "%.3f", 1 / m }') ;;
        d | e | j) measured=$(bubble "$n") formula=$(awk -v m=$m 'BEGIN { printf "%.3f", 1 / (2 * m) }') ;;
        *) measured="-" formula="-" ;;
    esac
    awk -v l="${label[$n]}" -v ms="$ms" -v t="$tokens" -v base="$(median_step_ms "$work/$base.log")" \
        -v mb="$measured" -v fb="$formula" 'BEGIN {
        printf "| %s | %.0f | %.1f | %.3f | %s | %s |\n", l, ms, t / (ms / 1e3), base / ms, mb, fb }'
done

echo
echo "Bytes each rank sent per iteration (--log-rank-stats), measured / formula:"
echo
echo "| layout | pipeline-parallel | embedding | context-parallel | data-context-parallel | model-parallel | world | match |"
echo "|---|---|---|---|---|---|---|---|"
all_match=1
for n in b c d e i j g; do
    wanted "$n" || continue
    read -r s mm p v c voc <<<"${spec[$n]}"
    mpp=$(rank_bytes "$work/$n.log" pipeline-parallel) fpp=$(formula pp "$s" "$mm" "$p" "$v" "$c" "$voc")
    memb=$(rank_bytes "$work/$n.log" embedding) femb=$(formula emb "$s" "$mm" "$p" "$v" "$c" "$voc")
    mcp=$(rank_bytes "$work/$n.log" context-parallel) fcp=$(formula cp "$s" "$mm" "$p" "$v" "$c" "$voc")
    mdc=$(rank_bytes "$work/$n.log" data-context-parallel)
    fdc=$(formula dpcp "$s" "$mm" "$p" "$v" "$c" "$voc")
    mmp=$(rank_bytes "$work/$n.log" model-parallel) mw=$(rank_bytes "$work/$n.log" world)
    match=yes
    [ "$mpp" = "$fpp" ] && [ "$memb" = "$femb" ] && [ "$mcp" = "$fcp" ] && [ "$mdc" = "$fdc" ] ||
        { match=NO; all_match=0; }
    echo "| ${label[$n]} | $mpp / $fpp | $memb / $femb | $mcp / $fcp | $mdc / $fdc | $mmp | $mw | $match |"
done

bubble_verdict() {  # name chunks
    awk -v b="$(bubble "$1" | cut -d' ' -f1)" -v f="$(awk -v m=$m -v v="$2" 'BEGIN { print 1 / (v * m) }')" \
        'BEGIN { printf "%.3f vs %.3f, %s", b, f, (b >= 0.8 * f && b <= 1.2 * f) ? "met" : "missed" }'
}
ratio() { awk -v a="$(median_step_ms "$work/$2.log")" -v m="$(median_step_ms "$work/$1.log")" \
    'BEGIN { printf "%.3f", a / m }'; }
echo
if [ -z "${LAYOUTS:-}" ]; then
    echo "Targets: PP2 with $m micro-batches >= 0.8x one process: (b) $(ratio b a)x, (c) $(ratio c a)x, (i) $(ratio i h)x;" \
        "measured bubble within 20% of the formula: $(bubble_verdict c 1) (c), $(bubble_verdict e 2) (e)," \
        "$(bubble_verdict i 1) (i), $(bubble_verdict j 2) (j);" \
        "bytes equal the formula:" \
        "$([ $all_match = 1 ] && echo met || echo missed)."
fi
if wanted f && wanted g; then echo "CP2 >= 0.95x one process (issue 34): (g) $(ratio g f)x."; fi
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Commands (COMMON = the flags below):"
echo
echo '```'
for n in a b c d e h i j f g; do if wanted "$n"; then echo "${cmdline[$n]}"; fi; done
echo "COMMON: ${common[*]}"
echo '```'
