# Shared by the conversion benchmarks (sourced, not run): the binaries, the work folder, and a
# source warmed before a timed conversion.

# bin: our binaries (BUILD_DIR, default build); work: the folder $1 when given (made, kept for
# the next run), else a temporary one removed at exit.
convert_bench_setup() {
    bin="$(cd "${BUILD_DIR:-build}/bin" && pwd)"
    if [ -n "${1:-}" ]; then
        work="$1"
        mkdir -p "$work"
    else
        work="$(mktemp -d)"
        trap 'rm -rf "$work"' EXIT
    fi
}

# The folder $1 read once (its files in the page cache) and the previous run's output written
# back, so that no run pays for another's.
warm_source() {
    cat "$1"/* "$1"/*/* "$1"/*/*/* >/dev/null 2>&1 || true
    sync
}
