#!/usr/bin/env bash
# Coverage-guided fuzzing of the readers (tests/fuzz): configures and builds the libFuzzer
# targets with clang under ASan and UBSan (BUILD_DIR, default build-fuzz), then runs each target
# for SECONDS (default 20) from its seeds: tests/fuzz/seeds/<target>, the committed fixtures of
# its format (torch .pt files and their data.pkl, the .idx/.bin pair), the inputs it found in
# earlier runs (BUILD_DIR/fuzz-corpus/<target>, kept), and first the committed regression
# inputs (tests/fuzz/regressions/<target>, each once). Exits non-zero on a crash, a sanitizer
# report, a leak, an input slower than 10 s or a process over 2 GiB; the input is kept in
# BUILD_DIR/fuzz-artifacts/.
#   scripts/fuzz.sh [SECONDS] [TARGET ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
shift || true
build_dir="${BUILD_DIR:-build-fuzz}"
targets=(pickle zip torch_file torch_checkpoint indexed_dataset api_request gpt2_tokenizer hf_tokenizer
    tiktoken wordpiece preprocess_line hf_checkpoint torch_dist_metadata sentencepiece jsonl_zst
    torch_dist_config hf_tokenizer_config jinja integrity_manifest deepspeed_zero
    deepspeed_universal deepspeed_checkpoint deepspeed_moe_expert deepspeed_moe_optimizer
    deepspeed_moe_zero torch_dist_common torch_dist_buckets)
[ $# -gt 0 ] && targets=("$@")
# ccache: the debug info names the build folder, which ccache hashes unless told not to; every
# clone's fuzz build then shares the cache.
export CCACHE_NOHASHDIR=true
# clang 14 and its libFuzzer/sanitizer runtimes (Debian 12's), with the project's own packages.
SETUP_EXTRA_PACKAGES="clang libclang-rt-14-dev unzip" BUILD_DIR="$build_dir" \
    SETUP_TARGETS="$(printf 'fuzz_%s ' "${targets[@]}")" \
    scripts/setup.sh -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMT_FUZZ=ON -DMT_CUDA=OFF -DMT_BUILD_TESTS=OFF \
    -DMT_BUILD_BENCH=OFF

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fixtures=tests/fixtures
# Seeds made from the fixtures, per target.
# Fixture files as seeds, named by their paths (many share a name: model_optim_rng.pt).
small_torch_files() { find "$fixtures" -name "${1:-*.pt}" -size -300k | sort; }
seed_from_paths() { while read -r f; do cp "$f" "$1/$(echo "$f" | tr / _)"; done; }
seed_pickle() {
    small_torch_files | while read -r pt; do
        unzip -Z1 "$pt" 2>/dev/null | grep 'data\.pkl$' | while read -r entry; do
            unzip -p "$pt" "$entry" > "$1/$(echo "$pt/$entry" | tr / _)"
        done
    done
}
seed_torch_file() { small_torch_files | seed_from_paths "$1"; }
seed_zip() { seed_torch_file "$1"; }
# two bytes (little-endian) of the first file's length, then the files: the split targets' layout
pack_two() {
    local size
    size=$(stat -c %s "$1")
    { printf "\\x$(printf %02x $((size & 255)))\\x$(printf %02x $((size >> 8)))"
      cat "$1" "$2"; }
}
seed_hf_checkpoint() {
    pack_two "$fixtures/hf/gpt2/config.json" "$fixtures/hf/gpt2/model.safetensors" > "$1/gpt2"
}
seed_torch_dist_buckets() { find "$fixtures/distopt_v019" -path '*dpr_*' -name .metadata | seed_from_paths "$1"; }
seed_torch_dist_metadata() { find "$fixtures/torch_dist" -name .metadata -size -64k | seed_from_paths "$1"; }
seed_torch_checkpoint() { small_torch_files model_optim_rng.pt | seed_from_paths "$1"; }
seed_deepspeed_zero() {  # DeepSpeed's shards (under 1 MiB: the embedding's moments)
    find "$fixtures/megatron_deepspeed" -name '*_optim_states.pt' -size -1024k | sort |
        seed_from_paths "$1"
}
seed_deepspeed_checkpoint() {  # DeepSpeed's model states files (args, param_shapes)
    find "$fixtures/megatron_deepspeed" -name 'mp_rank_*_model_states.pt' -size -300k | sort |
        seed_from_paths "$1"
}
seed_deepspeed_moe_expert() {  # DeepSpeed's expert files
    find "$fixtures/megatron_deepspeed" -name 'layer_*_expert_*_model_states.pt' | sort |
        seed_from_paths "$1"
}
seed_deepspeed_moe_optimizer() {  # its optimizer files per expert-parallel rank
    find "$fixtures/megatron_deepspeed" -name 'expp_rank_*_optim_states.pt' -size -1024k | sort |
        seed_from_paths "$1"
}
seed_deepspeed_moe_zero() {  # the MoE run's ZeRO shards
    find "$fixtures/megatron_deepspeed/deepspeed_gpt_moe_zero" -name 'zero_pp_rank_*' | sort |
        seed_from_paths "$1"
}
seed_deepspeed_universal() {  # a universal checkpoint's per-parameter files
    find "$fixtures/megatron_deepspeed/deepspeed_gpt_universal" -name '*.pt' -path '*/zero/*' |
        sort | seed_from_paths "$1"
}
seed_hf_tokenizer() {
    printf 'Hello world! 12345 caf\xc3\xa9\n  <s> [INST] done' > "$1.text"
    for json in "$fixtures/hf/mixtral/tokenizer.json" "$fixtures/hf_tokenizer/llama3ish/tokenizer.json"; do
        pack_two "$json" "$1.text" > "$1/$(basename "$(dirname "$json")")"
    done
}
seed_tiktoken() {
    printf 'abc abcd xxxxxxxx \xe6\x97\xa5 <s>' > "$1.text"
    pack_two "$fixtures/tiktoken/handmade.tiktoken.json" "$1.text" > "$1/handmade"
}
seed_wordpiece() {
    printf 'Hello, WORLD! caf\xc3\xa9 unaffable \xe4\xb8\xad\xe6\x96\x87 [SEP] [MASK]' > "$1.text"
    pack_two "$fixtures/wordpiece/tiny_vocab.txt" "$1.text" > "$1/tiny_vocab"
}
seed_sentencepiece() {
    printf 'Hello world 12345 caf\xc3\xa9 \xe2\x96\x81x <s> </s>\n\t end' > "$1.text"
    pack_two "$fixtures/sentencepiece/tiny_bpe.model" "$1.text" > "$1/tiny_bpe"
}
seed_jsonl_zst() {  # the preprocess_line seeds as lines of one stream, and alone
    cat tests/fuzz/seeds/preprocess_line/* | zstd -q -c > "$1/lines.zst"
    for f in tests/fuzz/seeds/preprocess_line/*; do zstd -q -c "$f" > "$1/$(basename "$f").zst"; done
}
seed_torch_dist_common() {  # the fixtures' common.pt (tests/fuzz/seeds: ours with Muon)
    find "$fixtures/torch_dist" -name common.pt -size -64k | seed_from_paths "$1"
}
seed_torch_dist_config() { find "$fixtures/torch_dist" -name metadata.json | seed_from_paths "$1"; }
seed_integrity_manifest() { find "$fixtures/integrity_manifest" -name "*.json" | seed_from_paths "$1"; }
seed_hf_tokenizer_config() {
    printf 'Hello world! <s> [INST] caf\xc3\xa9 </s>' > "$1.text"
    find "$fixtures" -name tokenizer_config.json -size -16k | while read -r f; do
        pack_two "$f" "$1.text" > "$1/$(echo "$f" | tr / _)"
    done
}
seed_jinja() {  # each committed chat template with the variables of a conversation with tools
    for f in "$fixtures"/chat_templates/*.jinja; do
        pack_two "$f" tests/fuzz/jinja_context.json > "$1/$(basename "$f" .jinja)"
    done
}
seed_indexed_dataset() {
    for idx in $(find "$fixtures" -name '*.idx' -size -64k); do
        pack_two "$idx" "${idx%.idx}.bin" > "$1/$(basename "${idx%.idx}")"
    done
}

failed=()
for target in "${targets[@]}"; do
    binary="$build_dir/bin/fuzz_$target"
    corpus="$build_dir/fuzz-corpus/$target"
    seeds="$work/$target"
    artifacts="$build_dir/fuzz-artifacts/$target/"
    mkdir -p "$corpus" "$seeds" "$artifacts"
    [ -d "tests/fuzz/seeds/$target" ] && cp "tests/fuzz/seeds/$target"/* "$seeds/"
    if declare -F "seed_$target" >/dev/null; then "seed_$target" "$seeds"; fi
    flags=(-timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts" -print_final_stats=1)
    [ -f "tests/fuzz/$target.dict" ] && flags+=(-dict="tests/fuzz/$target.dict")
    echo "== fuzz_$target: $seconds s"
    status=0
    if [ -d "tests/fuzz/regressions/$target" ]; then
        "$binary" "${flags[@]}" tests/fuzz/regressions/"$target"/* > "$work/$target.log" 2>&1 ||
            status=$?
    fi
    if [ $status -eq 0 ]; then
        "$binary" "${flags[@]}" -max_total_time="$seconds" "$corpus" "$seeds" \
            >> "$work/$target.log" 2>&1 || status=$?
    fi
    # "#N DONE cov: edges ft: features corp: inputs/size exec/s: rate rss: MB"
    grep -E '^#[0-9]+[[:space:]]+DONE' "$work/$target.log" | tail -1 || true
    if [ $status -ne 0 ]; then
        failed+=("$target")
        tail -40 "$work/$target.log"
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]} (inputs under $build_dir/fuzz-artifacts/)" >&2
    exit 1
fi
echo "fuzz: ${#targets[@]} targets ran $seconds s each without a finding"
