#!/usr/bin/env bash
# The built-in demo: installs dependencies, builds, preprocesses a corpus found on any Debian
# machine (the license texts in /usr/share/common-licenses and package copyright files) with
# the GPT-2 byte-level BPE tokenizer, prints the dataset summary, then pretrains a tiny GPT on
# it for 30 iterations.
#   scripts/quickstart.sh            # output in ./out/demo_text_document.{bin,idx}
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir="${BUILD_DIR:-build}"
mkdir -p out

# One JSON document per text file; python-free JSON string escaping with sed.
corpus=out/demo_corpus.jsonl
: > "$corpus"
for f in /usr/share/common-licenses/* /usr/share/doc/*/copyright; do
    [ -f "$f" ] || continue
    iconv -f utf-8 -t utf-8 "$f" >/dev/null 2>&1 || continue   # valid UTF-8 only
    printf '{"source": "%s", "text": "%s"}\n' "$f" \
        "$(sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' -e 's/\r//g' "$f" |
           sed -e ':a;N;$!ba;s/\n/\\n/g' | tr -d '\000-\010\013\014\016-\037')" >> "$corpus"
done
echo "demo: corpus of $(wc -l < "$corpus") documents ($(du -h "$corpus" | cut -f1)) in $corpus"

vocab=tests/fixtures/gpt2-tiny
"$build_dir/bin/megatron-preprocess" \
    --input "$corpus" --output-prefix out/demo \
    --tokenizer-type GPT2BPETokenizer \
    --vocab-file "$vocab/vocab.json" --merge-file "$vocab/merges.txt" \
    --append-eod --workers "$(nproc)"

# A few iterations of GPT pretraining on it: a 2-layer model, Megatron's log lines.
"$build_dir/bin/megatron-train" \
    --num-layers 2 --hidden-size 64 --num-attention-heads 4 \
    --seq-length 64 --max-position-embeddings 64 \
    --micro-batch-size 4 --global-batch-size 8 --train-iters 30 \
    --lr 3e-3 --min-lr 3e-4 --lr-decay-style cosine --lr-warmup-iters 3 \
    --tokenizer-type GPT2BPETokenizer \
    --vocab-file "$vocab/vocab.json" --merge-file "$vocab/merges.txt" \
    --data-path out/demo_text_document --split 98,1,1 --data-cache-path out/cache \
    --log-interval 10 --eval-interval 15 --eval-iters 1
