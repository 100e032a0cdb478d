# Shared by the megatron-train benchmarks (sourced, not run): the paths, the mpirun launcher, the
# step time Megatron prints, and the bytes a rank reports with --log-rank-stats.

# data: the shared data folder (MEGATRON_TEST_DATA, required); corpus: the text to preprocess
# (CORPUS, default gutenberg_small.jsonl); bin: our binaries (BUILD_DIR, default build).
bench_paths() {
    : "${MEGATRON_TEST_DATA:?set MEGATRON_TEST_DATA to the shared data folder}"
    data="$(cd "$MEGATRON_TEST_DATA" && pwd)"
    corpus="${CORPUS:-$data/corpus/gutenberg_small.jsonl}"
    bin="$(pwd)/${BUILD_DIR:-build}/bin"
}

# mpi: `mpirun -np N` as an array prefix (N given), with Open MPI's --oversubscribe, root's
# --allow-run-as-root and one OpenMP thread per rank.
mpi_launcher() {  # ranks
    mpi=(mpirun -np "$1")
    if mpirun --version 2>&1 | grep -qi "open mpi\|openrte"; then
        mpi+=(--oversubscribe)
        [ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
    fi
    mpi+=(-x OMP_NUM_THREADS=1)
}

# The median of Megatron's "elapsed time per iteration (ms)" in LOG over iterations 3.. .
median_step_ms() {  # log
    grep -o 'elapsed time per iteration (ms): [0-9.]*' "$1" | awk '{ print $NF }' |
        tail -n +3 | sort -g | awk '{ v[NR] = $1 }
            END { if (NR == 0) { print "nan"; exit }
                  print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# vocab: the shared data's uncased BERT vocabulary; WORK/corpus_text_sentence: openwebtext-1000
# split into sentences in its ids (the BERT and T5 benchmarks' data).
bert_sentence_corpus() {  # data build work threads
    vocab="$1/bert/bert-large-uncased-vocab.txt"
    "$2/bin/megatron-preprocess" --input "$1/corpus/openwebtext-1000.jsonl" \
        --output-prefix "$3/corpus" --tokenizer-type BertWordPieceLowerCase --vocab-file "$vocab" \
        --split-sentences --workers "$4" > /dev/null 2>&1
}

# The mean of Megatron's "elapsed time per iteration (ms)" on stdin after WARMUP iterations.
mean_step_ms() {  # warmup < log
    grep -o 'elapsed time per iteration (ms): [0-9.]*' | awk -v w="$1" \
        'NR > w { s += $NF; n++ } END { if (n) printf "%.1f", s / n; else print "nan" }'
}

# The bytes per iteration of the --log-rank-stats groups whose names match REGEX (summed), per
# rank "r0 / r1 / ..." (one value when all ranks agree); "opt" as REGEX: the optimizer state.
rank_bytes() {  # log regex
    awk -v f="$2" '
        / > rank [0-9]+ bytes sent per iteration:/ && f != "opt" {
            line = $0; sub(/.*per iteration: */, "", line)
            n = split(line, p, / \| /); r = $3; v[r] += 0
            for (i = 1; i <= n; ++i) {
                k = split(p[i], w, " ")
                if (w[1] ~ ("^(" f ")$")) v[r] += w[k]
            }
        }
        / > rank [0-9]+ optimizer state:/ && f == "opt" { v[$3] = $(NF - 1) }
        END {
            out = ""; same = 1
            for (r = 0; r in v; ++r) { out = out (r ? " / " : "") v[r]; if (v[r] != v[0]) same = 0 }
            print (same && (0 in v)) ? v[0] : out
        }' "$1"
}

# work: a temporary folder (kept with KEEP=1, else removed on exit) holding $corpus
# preprocessed with GPT-2's vocabulary ($data/gpt2) as $work/corpus_text_document.
make_work_corpus() {
    work="$(mktemp -d)"
    if [ "${KEEP:-0}" = 1 ]; then echo "work folder (kept): $work"; else trap 'rm -rf "$work"' EXIT; fi
    "$bin/megatron-preprocess" --input "$corpus" --output-prefix "$work/corpus" \
        --tokenizer-type GPT2BPETokenizer --vocab-file "$data/gpt2/gpt2-vocab.json" \
        --merge-file "$data/gpt2/gpt2-merges.txt" --append-eod --workers 1 \
        >"$work/preprocess.log" 2>&1
}
