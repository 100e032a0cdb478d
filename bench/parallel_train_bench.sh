#!/usr/bin/env bash
# Parallel training on one machine, printed as markdown: megatron-train's GPT-2 124M (fp32)
# step time in five layouts of the same 2 cores, with each rank's peak RSS, optimizer state and
# the bytes it sent per iteration through each process group beside the formula for that layout.
#   (a) 1 process x 2 threads            (b) mpirun -np 2 x 1 thread, DP2
#   (c) DP2 + --use-distributed-optimizer (d) TP2          (e) TP2 + --sequence-parallel
#   MEGATRON_TEST_DATA=../shared/data bench/parallel_train_bench.sh
# SMALL=1: a 2-layer, hidden-64, 4-head, seq-64 model instead (a smoke run of about a minute,
# dominated by the 50k-row embedding). LAYERS, HIDDEN, HEADS, SEQ, MBS, GBS override the shape
# (defaults: GPT-2 124M, 12/768/12/256, micro-batch 4, global batch 8). ITERS (default 6)
# iterations per run, the median of iterations 3..ITERS timed. BIND (none or core) skips the
# binding comparison: by default DP2 runs under both --bind-to none and --bind-to core and the
# faster one is used for (c)-(e). CORPUS (default gutenberg_small.jsonl) is preprocessed into a
# temporary folder; KEEP=1 keeps that folder (logs included). BUILD_DIR selects our build.
# Prerequisites: a build with MPI (libopenmpi-dev installed: MT_MPI=AUTO turns it on), Open MPI's
# mpirun (openmpi-bin), GNU time for the peak RSS (apt-get install time; without it the column
# says n/a). Builds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/train_bench_common.sh
bench_paths
if [ "${SMALL:-0}" = 1 ]; then
    layers=${LAYERS:-2} hidden=${HIDDEN:-64} heads=${HEADS:-4} seq=${SEQ:-64}
else
    layers=${LAYERS:-12} hidden=${HIDDEN:-768} heads=${HEADS:-12} seq=${SEQ:-256}
fi
mbs=${MBS:-4} gbs=${GBS:-8} iters=${ITERS:-6}
[ "$iters" -ge 3 ] || { echo "ITERS must be at least 3 (iterations 3.. are timed)" >&2; exit 1; }
max_pos=1024 vocab=50257 tp=2 dp=2
make_work_corpus  # $work, with $work/corpus_text_document

# Every layout gets these; the vocabulary padding flag comes with the layout (see below).
common=(--num-layers "$layers" --hidden-size "$hidden" --num-attention-heads "$heads"
    --seq-length "$seq" --max-position-embeddings "$max_pos" --micro-batch-size "$mbs"
    --global-batch-size "$gbs" --hidden-dropout 0 --attention-dropout 0
    --train-iters "$iters" --log-interval 1 --eval-iters 0 --split "100,0,0"
    --lr 1e-4 --lr-decay-style constant
    --data-path "$work/corpus_text_document" --tokenizer-type GPT2BPETokenizer
    --vocab-file "$data/gpt2/gpt2-vocab.json" --merge-file "$data/gpt2/gpt2-merges.txt"
    --log-rank-stats)
# Megatron pads the vocabulary to a multiple of divisible-by x tp: 256 x 1 and 128 x 2 both
# give the same padded vocabulary (50432 for GPT-2), so every layout trains the same model.
pad1=(--make-vocab-size-divisible-by 256)
pad2=(--make-vocab-size-divisible-by 128)
mpi_launcher 2
have_time=0
[ -x /usr/bin/time ] && have_time=1

# Each rank runs under GNU time, writing its peak RSS (KB) to $work/NAME.rss.RANK.
rss_wrap() {  # name
    if [ "$have_time" = 1 ]; then
        printf '%s\n' bash -c 'exec /usr/bin/time -o "$0.rss.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" -f %M "$@"' "$work/$1"
    fi
}
declare -A cmdline
run() {  # name ranks bind flags...
    local name=$1 ranks=$2 bind=$3
    shift 3
    local wrap=()
    mapfile -t wrap < <(rss_wrap "$name")
    local cmd
    if [ "$ranks" = 1 ]; then
        cmd=(env OMP_NUM_THREADS=2 "${wrap[@]}" "$bin/megatron-train" "${common[@]}" "$@")
        cmdline[$name]="OMP_NUM_THREADS=2 megatron-train COMMON $*"
    else
        cmd=("${mpi[@]}" --bind-to "$bind" "${wrap[@]}" "$bin/megatron-train" "${common[@]}" "$@")
        cmdline[$name]="${mpi[*]} --bind-to $bind megatron-train COMMON $*"
    fi
    if ! "${cmd[@]}" >"$work/$name.log" 2>&1; then
        echo "error: layout $name failed; the end of its log:" >&2
        tail -20 "$work/$name.log" >&2
        exit 1
    fi
}

step_ms() { median_step_ms "$work/$1.log"; }
# Field of the --log-rank-stats lines, per rank "r0 / r1" (one value when all ranks agree); the
# gradients go through the data-and-context-parallel group (the same ranks here).
rank_field() {  # name field(tp|dp|mp|world|opt)
    local regex
    case "$2" in
        tp) regex=tensor-parallel ;;
        dp) regex="data-parallel|data-context-parallel" ;;
        mp) regex=model-parallel ;;
        *) regex="$2" ;;
    esac
    rank_bytes "$work/$1.log" "$regex"
}
rss_mb() {
    if [ "$have_time" = 0 ]; then echo "n/a"; return; fi
    local out="" f
    for f in "$work/$1".rss.*; do
        out+="${out:+ / }$(awk '{ printf "%.0f", $1 / 1024 }' "$f")"
    done
    echo "$out"
}

# The bytes each rank should send per iteration (formulas in docs/benchmarks.md), from the
# model's shape: L layers, hidden h, micro-batch b, sequence s, padded vocabulary V, P learned
# positions, FFN 4h, tied output layer. Prints "tp dp mp world params".
formula() {  # ranks tp dp sp distopt
    awk -v ranks="$1" -v t="$2" -v d="$3" -v sp="$4" -v distopt="$5" -v L="$layers" \
        -v h="$hidden" -v s="$seq" -v b="$mbs" -v gbs="$gbs" -v P="$max_pos" -v vocab="$vocab" '
    function up(n, m) { return int((n + m - 1) / m) * m }
    function gcd(a, c) { return c ? gcd(c, a % c) : a }
    BEGIN {
        V = up(vocab, 128 * 2)  # the padded vocabulary of every layout
        # Parameters on this rank in the model'"'"'s order (the grad buffer takes them reversed).
        n = 0
        prm[++n] = V / t * h; prm[++n] = P * h
        for (l = 0; l < L; ++l) {
            prm[++n] = h; prm[++n] = h                           # input_layernorm
            prm[++n] = h * h / t; prm[++n] = h                   # linear_proj (bias replicated)
            prm[++n] = 3 * h * h / t; prm[++n] = 3 * h / t       # linear_qkv
            prm[++n] = h; prm[++n] = h                           # pre_mlp_layernorm
            prm[++n] = 4 * h * h / t; prm[++n] = 4 * h / t       # linear_fc1
            prm[++n] = 4 * h * h / t; prm[++n] = h               # linear_fc2 (bias replicated)
        }
        prm[++n] = h; prm[++n] = h                               # final_layernorm
        total = 0
        for (i = 1; i <= n; ++i) total += prm[i]
        if (ranks == 1) { printf "0 0 0 0 %.0f\n", total; exit }
        m = gbs / (b * d)                                        # micro-batches per rank
        bsh = b * s * h
        tpb = 0
        if (t > 1) {
            # Per micro-batch: 4 per layer + the embedding forward + the output layer backward,
            # each an all-reduce of b*s*h (sequence parallel: an all-gather of this rank'"'"'s
            # 1/t piece + a reduce-scatter of the whole b*s*h); cross-entropy: 3 of b*s.
            per = (4 * L + 2) * bsh * (sp ? 1 + 1 / t : 1) + 3 * b * s
            tpb = 4 * m * per
            if (sp) tpb += 4 * (4 * L + 2) * h                    # norm grads, once
        }
        dpb = 0
        if (d > 1) {
            if (distopt) {
                # Buffer: every parameter starts at a multiple of 64, the end padded to
                # lcm(dp, 128); reduce-scatter of all of it + all-gather of this rank'"'"'s 1/dp.
                N = 0
                for (i = n; i >= 1; --i) N = up(N, 64) + prm[i]
                N = up(N, d * 128 / gcd(d, 128))
                dpb = 4 * N + 4 * N / d + 8                       # + the grad norm'"'"'s f64
            } else {
                dpb = 4 * total
            }
            dpb += 32                                             # the reported loss, 4 f64
        }
        # mp: the grad norm'"'"'s f64; world: the exit flags every rank agrees on, 2 f64.
        printf "%.0f %.0f %d %d %.0f\n", tpb, dpb, 8, 16, total
    }'
}

# The layouts (run: name, ranks, binding, flags); spec below: ranks tp dp sp distopt.
run a 1 - "${pad1[@]}"
bind="${BIND:-}"
if [ -z "$bind" ]; then
    run b-none 2 none "${pad1[@]}"
    run b-core 2 core "${pad1[@]}"
    bind=$(awk -v n="$(step_ms b-none)" -v c="$(step_ms b-core)" 'BEGIN { print (c < n) ? "core" : "none" }')
    dp_names="b-none b-core"
else
    run "b-$bind" 2 "$bind" "${pad1[@]}"
    dp_names="b-$bind"
fi
run c 2 "$bind" "${pad1[@]}" --use-distributed-optimizer
run d 2 "$bind" "${pad2[@]}" --tensor-model-parallel-size 2
run e 2 "$bind" "${pad2[@]}" --tensor-model-parallel-size 2 --sequence-parallel

declare -A label spec
label[a]="(a) 1 process x 2 threads"
label[b-none]="(b) DP2, 2 ranks x 1 thread, --bind-to none"
label[b-core]="(b) DP2, 2 ranks x 1 thread, --bind-to core"
label[c]="(c) DP2 + distributed optimizer"
label[d]="(d) TP2"
label[e]="(e) TP2 + sequence parallel"
spec[a]="1 1 1 0 0"
spec[b-none]="2 1 $dp 0 0"
spec[b-core]="2 1 $dp 0 0"
spec[c]="2 1 $dp 0 1"
spec[d]="2 $tp 1 0 0"
spec[e]="2 $tp 1 1 0"
names="a $dp_names c d e"

tokens=$((gbs * seq))
ms_a=$(step_ms a)
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); $(mpirun --version 2>&1 | head -1)"
echo "model: GPT-2 style, $layers layers, hidden $hidden, $heads heads, seq $seq, padded vocabulary" \
    "$(((vocab + 255) / 256 * 256)), fp32;" \
    "micro-batch $mbs, global batch $gbs ($tokens tokens/iteration); $iters iterations, median of 3..$iters;" \
    "parameters $(formula 1 1 1 0 0 | awk '{ print $5 }'); ranks bound with --bind-to $bind"
echo
echo "| layout | ms/iteration | tokens/s | x (a) | peak RSS per rank (MB) | optimizer state per rank (bytes) | x DP2 |"
echo "|---|---|---|---|---|---|---|"
opt_b=$(rank_field "b-$bind" opt)
for n in $names; do
    ms=$(step_ms "$n")
    opt=$(rank_field "$n" opt)
    ratio=$(awk -v o="${opt%% *}" -v b="${opt_b%% *}" 'BEGIN { printf "%.3f", o / b }')
    awk -v l="${label[$n]}" -v ms="$ms" -v a="$ms_a" -v t="$tokens" -v rss="$(rss_mb "$n")" \
        -v opt="$opt" -v r="$ratio" 'BEGIN {
        printf "| %s | %.1f | %.1f | %.3f | %s | %s | %s |\n", l, ms, t / (ms / 1e3), a / ms, rss, opt, r }'
done

echo
echo "Bytes each rank sent per iteration (--log-rank-stats; all-reduce and reduce-scatter count their"
echo "input, all-gather this rank's piece), measured / formula:"
echo
echo "| layout | tensor-parallel | data-parallel | model-parallel | world | match |"
echo "|---|---|---|---|---|---|"
all_match=1
for n in $names; do
    read -r ftp fdp fmp fworld _ <<<"$(formula ${spec[$n]})"
    mtp=$(rank_field "$n" tp) mdp=$(rank_field "$n" dp) mmp=$(rank_field "$n" mp)
    mw=$(rank_field "$n" world)
    match=yes
    [ "$mtp" = "$ftp" ] && [ "$mdp" = "$fdp" ] && [ "$mmp" = "$fmp" ] && [ "$mw" = "$fworld" ] ||
        { match=NO; all_match=0; }
    echo "| ${label[$n]} | $mtp / $ftp | $mdp / $fdp | $mmp / $fmp | $mw / $fworld | $match |"
done

ratio() { awk -v a="$ms_a" -v m="$(step_ms "$1")" 'BEGIN { printf "%.3f", a / m }'; }
verdict() { awk -v v="$1" -v t="$2" -v op="$3" 'BEGIN {
    ok = (op == ">=") ? v >= t : v <= t; print ok ? "met" : "missed" }'; }
r_dp=$(ratio "b-$bind") r_tp=$(ratio d) r_sp=$(ratio e)
opt_c=$(rank_field c opt)
r_opt=$(awk -v o="${opt_c%% *}" -v b="${opt_b%% *}" 'BEGIN { printf "%.3f", o / b }')
echo
echo "Targets: DP2 >= 0.95x (a): ${r_dp}x, $(verdict "$r_dp" 0.95 ">=");" \
    "TP2 >= 0.85x (a): ${r_tp}x, $(verdict "$r_tp" 0.85 ">=") (TP2 + SP: ${r_sp}x);" \
    "distributed optimizer state <= 0.55x DP2's: ${r_opt}x, $(verdict "$r_opt" 0.55 "<=");" \
    "bytes equal the formula: $([ $all_match = 1 ] && echo met || echo missed)."
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Commands (COMMON = the flags below; the rank's GNU time wrapper left out):"
echo
echo '```'
for n in $names; do echo "${cmdline[$n]}"; done
echo "COMMON: ${common[*]}"
echo '```'
