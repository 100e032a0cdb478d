#!/usr/bin/env bash
# Preprocess and tokenizer throughput beside the peers, all in one run, printed as markdown.
#   MEGATRON_TEST_DATA=../shared/data bench/preprocess_bench.sh
# Peers (each skipped, saying so, when its variable is unset):
#   MEGATRON_LM=/path/to/Megatron-LM   a checkout (core_v0.13.0) whose tools/preprocess_data.py runs
#   PYTHON=/path/to/python            with Megatron's deps (torch, numpy) and tiktoken installed
# Builds nothing: run scripts/setup.sh first (BUILD_DIR selects the build, default build).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${MEGATRON_TEST_DATA:?set MEGATRON_TEST_DATA to the shared data folder}"
data="$(cd "$MEGATRON_TEST_DATA" && pwd)"
corpus="${1:-$data/corpus/gutenberg_large.jsonl}"
vocab="$data/gpt2/gpt2-vocab.json"
merges="$data/gpt2/gpt2-merges.txt"
bin="${BUILD_DIR:-build}/bin"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mb=$(awk -v b="$(stat -c %s "$corpus")" 'BEGIN { printf "%.2f", b / 1048576 }')

now() { date +%s.%N; }
rate() { awk -v mb="$mb" -v s="$1" 'BEGIN { printf "%.2f", mb / s }'; }

echo "corpus: $corpus ($mb MB), GPT-2 BPE vocab; machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo
echo "| what | workers | seconds | input MB/s |"
echo "|---|---|---|---|"
for w in 1 2; do
    t0=$(now)
    "$bin/megatron-preprocess" --input "$corpus" --output-prefix "$work/ours$w" \
        --tokenizer-type GPT2BPETokenizer --vocab-file "$vocab" --merge-file "$merges" \
        --append-eod --workers "$w" --log-interval 100000 >/dev/null 2>&1
    s=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
    echo "| megatron-preprocess (ours) | $w | $s | $(rate "$s") |"
done
if [ -n "${MEGATRON_LM:-}" ] && [ -n "${PYTHON:-}" ]; then
    for w in 1 2; do
        t0=$(now)
        PYTHONPATH="$MEGATRON_LM" "$PYTHON" "$MEGATRON_LM/tools/preprocess_data.py" \
            --input "$corpus" --output-prefix "$work/meg$w" \
            --tokenizer-type GPT2BPETokenizer --vocab-file "$vocab" --merge-file "$merges" \
            --append-eod --workers "$w" --log-interval 100000 >/dev/null 2>&1
        s=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
        same="differs"
        cmp -s "$work/meg${w}_text_document.bin" "$work/ours${w}_text_document.bin" &&
            cmp -s "$work/meg${w}_text_document.idx" "$work/ours${w}_text_document.idx" &&
            same="byte-identical to ours"
        echo "| Megatron-LM tools/preprocess_data.py ($same) | $w | $s | $(rate "$s") |"
    done
else
    echo "| Megatron-LM preprocess_data.py: skipped (set MEGATRON_LM and PYTHON) | | | |"
fi

echo
echo "Single-thread GPT-2 BPE encode of the same texts (the \"text\" fields):"
echo
echo '```'
"$bin/mt_bench_tokenize" "$corpus" --tokenizer-type GPT2BPETokenizer --vocab-file "$vocab" --merge-file "$merges"
if [ -n "${PYTHON:-}" ]; then
    "$PYTHON" - "$corpus" "$vocab" "$merges" <<'PY'
import json, sys, time
import tiktoken
from tiktoken.load import data_gym_to_mergeable_bpe_ranks
from tiktoken_ext.openai_public import r50k_pat_str
# tiktoken's "gpt2" encoding built from the same (hash-pinned) files, without the network.
ranks = data_gym_to_mergeable_bpe_ranks(sys.argv[3], sys.argv[2],
    "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783")
enc = tiktoken.Encoding("gpt2", pat_str=r50k_pat_str, mergeable_ranks=ranks,
                        special_tokens={"<|endoftext|>": 50256}, explicit_n_vocab=50257)
texts = [json.loads(l)["text"] for l in open(sys.argv[1], encoding="utf-8")]
nbytes = sum(len(t.encode("utf-8")) for t in texts)
t0 = time.perf_counter()
tokens = sum(len(enc.encode_ordinary(t)) for t in texts)
s = time.perf_counter() - t0
print(f"tiktoken {tiktoken.__version__} encode_ordinary: {len(texts)} docs, {nbytes/1048576:.2f} MB, "
      f"{tokens} tokens, {s:.3f} s, {nbytes/1048576/s:.2f} MB/s")
PY
else
    echo "tiktoken: skipped (set PYTHON to a python with tiktoken)"
fi
echo '```'
