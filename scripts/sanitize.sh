#!/usr/bin/env bash
# The whole test suite under sanitizers: configures and builds everything in BUILD_DIR
# (default build-asan) with AddressSanitizer and UndefinedBehaviorSanitizer (GCC), then runs
# every ctest test (the multi-rank ones under mpiexec too, each rank sanitized). A sanitizer
# report fails its test: ASan and UBSan stop the process (halt_on_error), LeakSanitizer exits
# non-zero at the end. tests/sanitizers/lsan.supp names the leaks that are Open MPI's own.
#   scripts/sanitize.sh                      # everything, tests that need data skip
#   MEGATRON_TEST_DATA=../shared/data scripts/sanitize.sh
#   scripts/sanitize.sh -R 'Train|Convert'   # extra arguments go to ctest
# Not in CI: the sanitized build alone outlasts CI's half hour on 2 cores from a cold ccache (38
# minutes for the tools and twelve of the test programs). CI runs the libFuzzer targets under the
# same sanitizers instead (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
build_dir="${BUILD_DIR:-build-asan}"
if [ -n "${MEGATRON_TEST_DATA:-}" ]; then
    MEGATRON_TEST_DATA="$(cd "$MEGATRON_TEST_DATA" && pwd)"
    export MEGATRON_TEST_DATA
fi
BUILD_DIR="$build_dir" scripts/setup.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMT_SANITIZE_ADDRESS=ON -DMT_SANITIZE_UNDEFINED=ON -DMT_CUDA=OFF -DMT_BUILD_BENCH=OFF \
    -DMT_BUILD_TESTS=ON
# The slow unwinder: Open MPI's libraries have no frame pointers, and only a whole stack reaches
# the library names the suppressions match.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 1800 "$@"
