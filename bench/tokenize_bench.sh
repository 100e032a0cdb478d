#!/usr/bin/env bash
# Single-thread encode throughput of our BPE tokenizers beside the libraries Megatron calls, on the
# same texts in one run, printed as markdown: GPT2BPETokenizer and TikTokenizer beside tiktoken's
# encode_ordinary, GPTSentencePieceTokenizer beside sentencepiece's encode_as_ids,
# HuggingFaceTokenizer beside tokenizers' Tokenizer.encode; core_v0.19's GPT2BPETokenizer and
# BertWordPieceLowerCase beside the transformers tokenizers its classes call (tokenizer(text)).
#   MEGATRON_TEST_DATA=../shared/data PYTHON=/path/to/venv/bin/python bench/tokenize_bench.sh [corpus]
# PYTHON needs tiktoken, sentencepiece, tokenizers and transformers (peers skipped, saying so, without it). Ours is
# mt_bench_tokenize's first pass (empty word caches) and includes nothing but encoding; the
# peers' time is their encode calls alone too. Builds nothing (BUILD_DIR, default build).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${MEGATRON_TEST_DATA:?set MEGATRON_TEST_DATA to the shared data folder}"
data="$(cd "$MEGATRON_TEST_DATA" && pwd)"
corpus="${1:-$data/corpus/gutenberg_large.jsonl}"
bin="${BUILD_DIR:-build}/bin"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fixtures=tests/fixtures/hf_tokenizer
for name in gpt2 llama3ish; do
    mkdir -p "$work/$name"
    for f in "$fixtures/$name"/*; do
        case "$f" in
            *.zst) zstd -qdc "$f" >"$work/$name/$(basename "${f%.zst}")" ;;
            *) cp "$f" "$work/$name/" ;;
        esac
    done
done
tekken="$data/tokenizers/tiktoken/tekken-240718.tiktoken.json"

echo "corpus: $corpus; machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo
echo "| tokenizer | ours MB/s | tokens | peer | peer MB/s | peer tokens | ours / peer |"
echo "|---|---|---|---|---|---|---|"
# row NAME PEER-SPEC OURS-FLAGS...: one line of the table.
row() {
    local name="$1" peer="$2"
    shift 2
    local ours mbs tokens
    ours=$("$bin/mt_bench_tokenize" "$corpus" "$@")
    mbs=$(sed -n 's/.*first pass [0-9.]* s (\([0-9.]*\) MB\/s).*/\1/p' <<<"$ours")
    tokens=$(sed -n 's/.* MB, \([0-9]*\) tokens.*/\1/p' <<<"$ours")
    if [ -z "${PYTHON:-}" ]; then
        echo "| $name | $mbs | $tokens | skipped (set PYTHON) | | | |"
        return
    fi
    local theirs pmbs ptokens label
    theirs=$("$PYTHON" - "$corpus" "$peer" <<'PY'
import json, os, sys, time
corpus, spec = sys.argv[1], sys.argv[2]
kind, arg = spec.split(":", 1)
texts = [json.loads(line)["text"] for line in open(corpus, encoding="utf-8")]
if kind == "tiktoken-gpt2":
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    from tiktoken_ext.openai_public import r50k_pat_str
    vocab, merges = arg.split(",")
    ranks = data_gym_to_mergeable_bpe_ranks(merges, vocab)
    enc = tiktoken.Encoding("gpt2", pat_str=r50k_pat_str, mergeable_ranks=ranks,
                            special_tokens={"<|endoftext|>": 50256})
    encode, label = enc.encode_ordinary, f"tiktoken {tiktoken.__version__}"
elif kind in ("tiktoken-megatron", "tiktoken-megatron-core"):
    # What Megatron's TikTokenizer builds: the first 130072 ranks, the v2 pattern, 1000 special
    # ids; core_v0.13's CustomTikTokenizer encodes ordinary text, core_v0.19's TikTokenTokenizer
    # its 7 special tokens (and fillers) found in the text too.
    import base64, tiktoken
    pattern = json.load(open(arg.replace(".tiktoken.json", ".config.json")))["pattern"]
    vocab = json.load(open(arg))[:131072 - 1000]
    ranks = {base64.b64decode(x["token_bytes"]): x["rank"] + 1000 for x in vocab}
    if kind == "tiktoken-megatron":
        specials = ["<unk>", "<s>", "</s>"]
        encode = lambda t: enc.encode_ordinary(t)
    else:
        specials = ["<unk>", "<s>", "</s>", "<mask>", "<pad>", "<cls>", "<sep>"]
        specials += [f"<SPECIAL_{i}>" for i in range(len(specials), 1000)]
        encode = lambda t: enc.encode(t, allowed_special="all")
    enc = tiktoken.Encoding("tekken", pat_str=pattern, mergeable_ranks=ranks,
                            special_tokens={t: i for i, t in enumerate(specials)})
    label = f"tiktoken {tiktoken.__version__}"
elif kind == "sentencepiece":
    # What Megatron's _GPTSentencePieceTokenizer.tokenize calls.
    import sentencepiece
    sp = sentencepiece.SentencePieceProcessor(model_file=arg)
    encode, label = sp.encode_as_ids, f"sentencepiece {sentencepiece.__version__}"
elif kind in ("transformers-gpt2", "transformers-bert"):
    # What core_v0.19's MegatronHFTokenizer.tokenize calls: tokenizer(text).input_ids of
    # AutoTokenizer.from_pretrained("gpt2" / "bert-large-uncased", vocab_file=...), the hub's
    # folder stood in for by its tokenizer_config.json (as the fixture script does).
    import tempfile, transformers
    hub = tempfile.mkdtemp()
    model_type, config = (("gpt2", {}) if kind == "transformers-gpt2"
                          else ("bert", {"do_lower_case": True}))
    json.dump({"model_type": model_type}, open(os.path.join(hub, "config.json"), "w"))
    json.dump(config, open(os.path.join(hub, "tokenizer_config.json"), "w"))
    files = dict(zip(("vocab_file", "merges_file"), arg.split(",")))
    tok = transformers.AutoTokenizer.from_pretrained(hub, **files)
    tok.model_max_length = 1 << 30  # no warning per long text
    encode, label = (lambda t: tok(t).input_ids), f"transformers {transformers.__version__}"
else:
    import tokenizers
    tok = tokenizers.Tokenizer.from_file(os.path.join(arg, "tokenizer.json"))
    encode, label = (lambda t: tok.encode(t).ids), f"tokenizers {tokenizers.__version__}"
nbytes = sum(len(t.encode("utf-8")) for t in texts)
t0 = time.perf_counter()
tokens = sum(len(encode(t)) for t in texts)
s = time.perf_counter() - t0
print(f"{label}\t{nbytes / 1048576 / s:.2f}\t{tokens}")
PY
)
    IFS=$'\t' read -r label pmbs ptokens <<<"$theirs"
    echo "| $name | $mbs | $tokens | $label | $pmbs | $ptokens | $(awk -v a="$mbs" -v b="$pmbs" 'BEGIN { printf "%.1f", a / b }')x |"
}
row "GPT2BPETokenizer (GPT-2)" "tiktoken-gpt2:$data/gpt2/gpt2-vocab.json,$data/gpt2/gpt2-merges.txt" \
    --tokenizer-type GPT2BPETokenizer --vocab-file "$data/gpt2/gpt2-vocab.json" \
    --merge-file "$data/gpt2/gpt2-merges.txt"
row "GPT2BPETokenizer core_v0.19 (GPT-2)" \
    "transformers-gpt2:$data/gpt2/gpt2-vocab.json,$data/gpt2/gpt2-merges.txt" \
    --tokenizer-type GPT2BPETokenizer --vocab-file "$data/gpt2/gpt2-vocab.json" \
    --merge-file "$data/gpt2/gpt2-merges.txt" --tokenizer-classes core_v0.19
row "BertWordPieceLowerCase core_v0.19" "transformers-bert:$data/bert/bert-large-uncased-vocab.txt" \
    --tokenizer-type BertWordPieceLowerCase --vocab-file "$data/bert/bert-large-uncased-vocab.txt" \
    --tokenizer-classes core_v0.19
row "TikTokenizer (Tekken, v2)" "tiktoken-megatron:$tekken" \
    --tokenizer-type TikTokenizer --tokenizer-model "$tekken" --tiktoken-pattern v2
row "TikTokenizer core_v0.19 (Tekken, v2)" "tiktoken-megatron-core:$tekken" \
    --tokenizer-type TikTokenizer --tokenizer-model "$tekken" --tokenizer-classes core_v0.19
for sp in mistral-v1 mistral-v3; do
    model="$data/tokenizers/sentencepiece/$sp.model"
    row "GPTSentencePieceTokenizer ($sp)" "sentencepiece:$model" \
        --tokenizer-type GPTSentencePieceTokenizer --tokenizer-model "$model"
done
row "HuggingFaceTokenizer (Tekken tokenizer.json)" "tokenizers:$data/tokenizers/hf/tekken-240718" \
    --tokenizer-type HuggingFaceTokenizer --tokenizer-model "$data/tokenizers/hf/tekken-240718"
row "HuggingFaceTokenizer (GPT-2 tokenizer.json)" "tokenizers:$work/gpt2" \
    --tokenizer-type HuggingFaceTokenizer --tokenizer-model "$work/gpt2"
row "HuggingFaceTokenizer (Llama-3-style, 3000 tokens)" "tokenizers:$work/llama3ish" \
    --tokenizer-type HuggingFaceTokenizer --tokenizer-model "$work/llama3ish"
