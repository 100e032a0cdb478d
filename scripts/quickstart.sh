#!/usr/bin/env bash
# The built-in demo: installs dependencies, builds, then preprocesses a corpus found on any
# Debian machine (the license texts in /usr/share/common-licenses and package copyright
# files) with the GPT-2 byte-level BPE tokenizer, and prints the dataset summary.
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
