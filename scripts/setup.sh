#!/usr/bin/env bash
# Installs megatron.cpp's Debian dependencies (only what is missing) and builds it.
#   scripts/setup.sh                 # deps + Release build in ./build
#   BUILD_DIR=b scripts/setup.sh -DMT_CUDA=OFF   # extra arguments go to cmake
#   SETUP_TARGETS="megatron-train megatron-generate" scripts/setup.sh   # build only these
#                                    # (a tool brings core and every plugin; default: all)
#   SETUP_EXTRA_PACKAGES="clang" scripts/setup.sh   # more Debian packages (scripts/fuzz.sh's)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
    build-essential cmake ninja-build ccache pkg-config zstd
    libboost-program-options-dev libboost-filesystem-dev libboost-dev
    libicu-dev libsimdjson-dev libzstd-dev libopenblas-dev libsentencepiece-dev
    libpcre2-dev
    libopenmpi-dev openmpi-bin
    libgtest-dev libgmock-dev libbenchmark-dev
    ${SETUP_EXTRA_PACKAGES:-}
)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build_dir="${BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
targets=()
for t in ${SETUP_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
