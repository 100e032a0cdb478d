#!/usr/bin/env bash
# The built-in demo, the whole chain on one machine in a few minutes: installs dependencies and
# builds, preprocesses a corpus found on any Debian machine (the license texts in
# /usr/share/common-licenses and the packages' copyright files) with the GPT-2 byte-level BPE
# tokenizer of tests/fixtures/gpt2-tiny, pretrains a tiny GPT on it and saves a checkpoint,
# generates from the checkpoint, scores it LAMBADA-style on lines of the same corpus, converts it
# to a Hugging Face folder, and prints a summary of the outputs with each stage's wall time.
#   scripts/quickstart.sh                           # everything under ./quickstart-out/
#   QUICKSTART_OUT=/tmp/demo scripts/quickstart.sh  # ... under another directory
#   (the default is in the repository; a relative QUICKSTART_OUT is taken from the current
#   directory, a relative BUILD_DIR from the repository, as scripts/setup.sh does)
#   QUICKSTART_SKIP_SETUP=1 scripts/quickstart.sh   # no install/build: use the binaries in
#                                                   # $BUILD_DIR (default build) as they are
#   QUICKSTART_TRAIN_ITERS=20 scripts/quickstart.sh # shorter training (default 200)
# Extra arguments go to scripts/setup.sh (and so to CMake). Re-running starts the chain afresh
# in the same directory (the checkpoint is retrained from scratch; the same seed gives the same
# numbers). Needs nothing outside the repository and Debian's own files.
set -Eeuo pipefail
caller=$PWD
cd "$(dirname "$0")/.."
repo=$PWD

build_dir="${BUILD_DIR:-build}"
case "$build_dir" in /*) ;; *) build_dir="$repo/$build_dir" ;; esac
out="${QUICKSTART_OUT:-quickstart-out}"
case "$out" in /*) ;; *) out="$caller/$out" ;; esac   # relative: to where it was run from
train_iters="${QUICKSTART_TRAIN_ITERS:-200}"
[[ "$train_iters" =~ ^[1-9][0-9]*$ ]] || { echo "quickstart: QUICKSTART_TRAIN_ITERS must be a positive integer, not '$train_iters'" >&2; exit 2; }
bin="$build_dir/bin"
vocab="$repo/tests/fixtures/gpt2-tiny"   # 5000-entry GPT-2 BPE vocabulary, see its SOURCES.md
tokenizer=(--tokenizer-type GPT2BPETokenizer --vocab-file "$vocab/vocab.json" --merge-file "$vocab/merges.txt")
stages=(setup preprocess train generate eval convert)

# ---------------------------------------------------------------- stage bookkeeping
stage_no=0
stage_name=""
stage_start=""
times=()
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
end_stage() {
    [ -n "$stage_name" ] || return 0
    times+=("$(elapsed "$stage_start" "$(now)")")
    echo "[$stage_no/${#stages[@]}] $stage_name: done in ${times[-1]} s"
    stage_name=""
}
stage() {  # stage "description": closes the previous stage and opens the next one
    end_stage
    stage_no=$((stage_no + 1))
    stage_name="${stages[stage_no - 1]}"
    stage_start="$(now)"
    echo
    echo "[$stage_no/${#stages[@]}] $stage_name: $1"
}
on_error() {
    local code=$1
    echo >&2
    if [ -n "$stage_name" ]; then
        echo "quickstart: FAILED at stage [$stage_no/${#stages[@]}] $stage_name (exit code $code); see the messages above" >&2
    else
        echo "quickstart: FAILED (exit code $code); see the messages above" >&2
    fi
    exit "$code"
}
trap 'on_error $?' ERR
show() {  # prints a command (paths relative to the repository) and runs it
    local line="\$" arg
    for arg in "$@"; do
        arg="${arg#"$repo"/}"
        [[ "$arg" =~ ^[A-Za-z0-9_./:=,+-]+$ ]] || arg="'$arg'"
        line+=" $arg"
    done
    echo "$line"
    "$@"
}

total_start="$(now)"
echo "quickstart: outputs go to $out"

# ---------------------------------------------------------------- 1. setup
if [ -n "${QUICKSTART_SKIP_SETUP:-}" ]; then
    stage "skipped (QUICKSTART_SKIP_SETUP is set): using the binaries in $bin"
else
    stage "install the missing Debian packages, configure and build the tools (scripts/setup.sh)"
    # The five tools bring core and the plugins; the tests and benchmarks are the test
    # command's to build.
    BUILD_DIR="$build_dir" \
        SETUP_TARGETS="megatron-preprocess megatron-train megatron-generate megatron-eval megatron-convert" \
        scripts/setup.sh "$@"
fi
for tool in preprocess train generate eval convert; do
    [ -x "$bin/megatron-$tool" ] || { echo "quickstart: $bin/megatron-$tool is missing (build first, or set BUILD_DIR)" >&2; false; }
done
mkdir -p "$out"

# ---------------------------------------------------------------- 2. preprocess
stage "build the demo corpus and tokenize it into Megatron's .bin/.idx"
# One JSON document per text file (valid UTF-8 only), written by perl (Debian's perl-base):
# blank-line separated paragraphs with their lines joined and runs of blanks collapsed, so the
# model learns the words rather than the files' indentation; JSON string escapes.
corpus="$out/demo_corpus.jsonl"
sources=()
for f in /usr/share/common-licenses/* /usr/share/doc/*/copyright; do
    if [ -f "$f" ] && [ -r "$f" ]; then sources+=("$f"); fi
done
[ ${#sources[@]} -gt 0 ] || { echo "quickstart: no text files in /usr/share/common-licenses or /usr/share/doc/*/copyright for the demo corpus" >&2; false; }
perl -0777 -ne 'next unless utf8::decode(my $valid = $_);
    s/\r//g; s/[ \t\f\013]+/ /g; s/^ +| +$//mg;
    $_ = join "\n\n", map { s/\n/ /gr } grep { /[A-Za-z]/ } split /\n{2,}/;
    next unless length;
    s/\\/\\\\/g; s/"/\\"/g; s/\n/\\n/g; tr/\000-\037//d;
    print qq({"source": "$ARGV", "text": "$_"}\n)' "${sources[@]}" > "$corpus.tmp"
mv "$corpus.tmp" "$corpus"
echo "demo corpus: $(wc -l < "$corpus") documents ($(du -h "$corpus" | cut -f1)) in $corpus"
show "$bin/megatron-preprocess" --input "$corpus" --output-prefix "$out/demo" \
    "${tokenizer[@]}" --append-eod --workers "$(nproc)"
data="$out/demo_text_document"

# ---------------------------------------------------------------- 3. train
stage "pretrain a tiny GPT-2-style model ($train_iters iterations) and save a checkpoint"
ckpt="$out/checkpoint"
# A re-run trains afresh (same seed, same model) rather than resuming, and rebuilds the sample
# index caches: they are keyed by the dataset's description, not by the .bin just rewritten.
rm -rf "$ckpt" "$out/cache"
show "$bin/megatron-train" \
    --num-layers 4 --hidden-size 128 --num-attention-heads 4 \
    --seq-length 128 --max-position-embeddings 128 \
    --micro-batch-size 8 --global-batch-size 16 --train-iters "$train_iters" \
    --lr 3e-3 --min-lr 3e-4 --lr-decay-style cosine --lr-warmup-iters $(( (train_iters + 9) / 10 )) \
    "${tokenizer[@]}" \
    --data-path "$data" --split 98,1,1 --data-cache-path "$out/cache" \
    --log-interval "$(( train_iters < 10 ? train_iters : 10 ))" --eval-interval "$(( train_iters > 100 ? 100 : train_iters ))" --eval-iters 2 \
    --save "$ckpt"

# ---------------------------------------------------------------- 4. generate
stage "generate from the checkpoint (the tokenizer comes from the checkpoint's args)"
prompts="$out/prompts.txt"
printf '%s\n' "This program is free software" "Permission is hereby granted" > "$prompts"
generations="$out/generations.txt"
show "$bin/megatron-generate" --load "$ckpt" --top_k 10 --temperature 0.8 --seed 1234 \
    --out-seq-length 48 --sample-input-file "$prompts" --sample-output-file "$generations"
cat "$generations"

# ---------------------------------------------------------------- 5. eval
stage "evaluate LAMBADA-style: predict the last word of lines of the demo corpus"
# Not the LAMBADA benchmark (third-party data, see /work/shared/data): 50 lines of the corpus's
# own license texts (so mostly text the model was trained on), ASCII letters only, 10 to 30
# words, trailing punctuation cut so that each ends with a word.
lambada="$out/lambada_demo.jsonl"
LC_ALL=C awk '
    { gsub(/[ \t\r]+/, " "); sub(/^ /, ""); sub(/ $/, ""); sub(/[.,;:]+$/, "") }
    NF >= 10 && NF <= 30 && /^[A-Za-z][A-Za-z0-9 ,;:()-]*[A-Za-z]$/ && !seen[$0]++ && n < 50 {
        n++; print "{\"text\": \"" $0 "\"}" }' "${sources[@]}" > "$lambada"
[ -s "$lambada" ] || { echo "quickstart: no lines for $lambada" >&2; false; }
echo "LAMBADA-style data: $(wc -l < "$lambada") lines of the demo corpus itself (not the LAMBADA benchmark) in $lambada"
eval_json="$out/lambada_demo_results.json"
show "$bin/megatron-eval" --task LAMBADA --valid-data "$lambada" --load "$ckpt" \
    --micro-batch-size 8 --log-interval 2 --output-json "$eval_json"

# ---------------------------------------------------------------- 6. convert
stage "convert the checkpoint to a Hugging Face GPT-2 folder"
hf="$out/hf"
show "$bin/megatron-convert" --model-type GPT --loader torch_dist --load-dir "$ckpt" \
    --saver hf --save-dir "$hf" --vocab-file "$vocab/vocab.json"
[ -f "$hf/config.json" ] && [ -f "$hf/model.safetensors" ] ||
    { echo "quickstart: $hf lacks config.json or model.safetensors" >&2; false; }
end_stage

# ---------------------------------------------------------------- summary
json_field() { grep -o "\"$1\": *[^,}]*" "$eval_json" | sed 's/.*: *//'; }
files_of() { (cd "$1" && ls | tr '\n' ' '); }
echo
echo "quickstart: done in $(elapsed "$total_start" "$(now)") s; outputs in $out"
echo "  corpus        $corpus"
echo "  dataset       $data.bin ($(du -h "$data.bin" | cut -f1)), $data.idx"
echo "  checkpoint    $ckpt (torch_dist, iteration $(cat "$ckpt/latest_checkpointed_iteration.txt"))"
echo "  generations   $generations"
echo "  eval          $eval_json: LAMBADA-style on $(json_field total_examples) lines of the demo corpus:" \
     "$(json_field number_correct) correct, accuracy $(json_field avg_accuracy)"
echo "  Hugging Face  $hf/ ($(files_of "$hf"))"
echo "  stage wall times (s):"
for i in "${!times[@]}"; do
    printf '    [%d/%d] %-11s %6s\n' "$((i + 1))" "${#stages[@]}" "${stages[i]}" "${times[i]}"
done
