#!/usr/bin/env bash
# The test command: installs dependencies, builds, and runs the whole ctest suite.
#   scripts/test.sh                  # tests that need third-party data skip, saying so
#   MEGATRON_TEST_DATA=../shared/data scripts/test.sh
#   BUILD_DIR=build-cpu scripts/test.sh -DMT_CUDA=OFF   # extra arguments go to cmake
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${MEGATRON_TEST_DATA:-}" ] && [ ! -d "$MEGATRON_TEST_DATA" ]; then
    echo "test: WARNING: MEGATRON_TEST_DATA=$MEGATRON_TEST_DATA is not a directory; ignoring it"
    unset MEGATRON_TEST_DATA
fi
if [ -n "${MEGATRON_TEST_DATA:-}" ]; then
    MEGATRON_TEST_DATA="$(cd "$MEGATRON_TEST_DATA" && pwd)"
    export MEGATRON_TEST_DATA
    echo "test: third-party data from $MEGATRON_TEST_DATA"
else
    echo "test: MEGATRON_TEST_DATA is not set; tests that need third-party data will skip"
fi
scripts/setup.sh -DMT_BUILD_TESTS=ON "$@"
build_dir="${BUILD_DIR:-build}"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 900
