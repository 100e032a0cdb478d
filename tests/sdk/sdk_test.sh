#!/usr/bin/env bash
# The plugin SDK end to end: installs this build into a temporary prefix, builds
# examples/plugins/byte_tokenizer against it out of tree (find_package(megatron_cpp) +
# mt_add_plugin), then runs the installed megatron-preprocess with --plugin-dir and checks the
# tokens it wrote, --list-plugins, the plugin's exports, and the plugin once installed.
#   sdk_test.sh SOURCE_DIR BUILD_DIR WORK_DIR CMAKE CXX_COMPILER
# Exit 77 (ctest: skipped) when cmake or ninja is missing.
set -euo pipefail
src=$1 build=$2 work=$3 cmake=$4 cxx=$5

skip() { echo "mt-sdk-test: SKIPPED: $*"; exit 77; }
fail() { echo "mt-sdk-test: FAILED: $*" >&2; exit 1; }
command -v "$cmake" >/dev/null 2>&1 || skip "cmake ($cmake) not found"
ninja=$(command -v ninja || command -v ninja-build || true)
[ -n "$ninja" ] || skip "ninja not found (the example is built with -G Ninja)"

# Everything under WORK_DIR, recreated each run; only this test uses it.
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd -P)  # canonical, as the loader and ldd report paths
prefix=$work/prefix example_build=$work/example-build data=$work/data
mkdir -p "$data"
unset MT_PLUGIN_PATH

# 1. Install the build tree (needs the whole build: ctest runs after `ninja`).
if ! "$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1; then
    cat "$work/install.log"
    fail "cmake --install $build failed (is the build complete? run ninja -C $build first)"
fi
for f in bin/megatron-preprocess include/mt/plugin.h include/mt/version.h \
         lib/cmake/megatron_cpp/megatron_cppConfig.cmake lib/cmake/megatron_cpp/MtPlugin.cmake \
         lib/mt/plugins/libmt_tokenizer_null.so; do
    [ -e "$prefix/$f" ] || fail "the install has no $f"
done
ls "$prefix"/lib/libmt_core.so.* >/dev/null 2>&1 ||
    fail "the install has no versioned libmt_core.so.*"

# 2. Configure and build the example plugin against the installed SDK only.
if ! "$cmake" -S "$src/examples/plugins/byte_tokenizer" -B "$example_build" -G Ninja \
        -DCMAKE_MAKE_PROGRAM="$ninja" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_INSTALL_PREFIX="$prefix" \
        >"$work/example-configure.log" 2>&1; then
    cat "$work/example-configure.log"
    fail "configuring the example against $prefix failed"
fi
if ! "$cmake" --build "$example_build" >"$work/example-build.log" 2>&1; then
    cat "$work/example-build.log"
    fail "building the example failed"
fi
plugin=$example_build/libmt_tokenizer_byte.so
[ -f "$plugin" ] || fail "the example build has no $plugin"
# The exports map applies out of tree too: the C entry is the only symbol the plugin defines.
if command -v nm >/dev/null 2>&1; then
    exported=$(nm -D --defined-only "$plugin" | awk '{print $3}' | sort -u | tr '\n' ' ')
    [ "$exported" = "mt_plugin_entry " ] ||
        fail "the plugin exports '$exported', not only mt_plugin_entry"
fi

# 3. The installed tool, run from the prefix: its libmt_core comes from <prefix>/lib (RPATH).
tool=$prefix/bin/megatron-preprocess
if command -v ldd >/dev/null 2>&1; then
    core=$(env -u LD_LIBRARY_PATH ldd "$tool" | awk '/libmt_core/ {print $3}')
    if [ -n "$core" ] && [ -e "$core" ]; then core=$(realpath "$core"); fi
    case "$core" in
        "$prefix"/lib/libmt_core.so.*) ;;
        *) fail "installed megatron-preprocess loads libmt_core from '$core', not $prefix/lib" ;;
    esac
fi
list=$(env -u LD_LIBRARY_PATH "$tool" --plugin-dir "$example_build" --list-plugins)
echo "$list"
grep -q "^tokenizer/byte 1.0.0  $plugin\$" <<<"$list" || fail "--list-plugins does not list $plugin"
grep -q "provides: ByteTokenizer" <<<"$list" || fail "--list-plugins: ByteTokenizer missing"
grep -q "^tokenizer/null .* $prefix/lib/mt/plugins/libmt_tokenizer_null.so" <<<"$list" ||
    fail "--list-plugins: the installed plugins are not found under $prefix/lib/mt/plugins"

# 4. Preprocess with the plugin: each byte is a token, 256 ends a document (--append-eod).
printf '%s\n' '{"text": "h\u00e9llo"}' '{"text": "ab"}' >"$data/corpus.jsonl"
preprocess() {
    env -u LD_LIBRARY_PATH "$tool" --input "$data/corpus.jsonl" --output-prefix "$1" \
        --tokenizer-type ByteTokenizer --append-eod --workers 1 "${@:2}"
}
preprocess "$data/out" --plugin-dir "$example_build"
check_output() {
    local bin=$1_text_document.bin idx=$1_text_document.idx
    [ -f "$bin" ] && [ -f "$idx" ] || fail "no $bin / $idx"
    # 'hé' is h, then é in UTF-8 (0xC3 0xA9); 257 ids -> uint16 tokens.
    local tokens expected="104 195 169 108 108 111 256 97 98 256"
    tokens=$(od -An -v -tu2 "$bin" | xargs)
    [ "$tokens" = "$expected" ] || fail "$bin holds tokens '$tokens', expected '$expected'"
    # .idx: 9-byte magic "MMIDIDX\0\0", u64 version, u8 dtype (8 = uint16), u64 sequences,
    # u64 documents, then int32 sequence lengths.
    [ "$(head -c 9 "$idx" | od -An -tx1 | xargs)" = "4d 4d 49 44 49 44 58 00 00" ] ||
        fail "$idx: bad magic"
    [ "$(od -An -j17 -N1 -tu1 "$idx" | xargs)" = 8 ] || fail "$idx: dtype is not uint16"
    [ "$(od -An -j18 -N8 -tu8 "$idx" | xargs)" = 2 ] || fail "$idx: not 2 sequences"
    [ "$(od -An -j34 -N8 -td4 "$idx" | xargs)" = "7 3" ] || fail "$idx: lengths are not 7 3"
}
check_output "$data/out"

# 5. Installed into the same prefix, the tools find the plugin without --plugin-dir.
"$cmake" --install "$example_build" >"$work/example-install.log" 2>&1 ||
    { cat "$work/example-install.log"; fail "cmake --install of the example failed"; }
[ -f "$prefix/lib/mt/plugins/libmt_tokenizer_byte.so" ] || fail "the example did not install"
preprocess "$data/installed"
check_output "$data/installed"

echo "mt-sdk-test: OK (SDK in $prefix, plugin $plugin)"
