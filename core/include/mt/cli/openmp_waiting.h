// How the inference tools' OpenMP threads wait between parallel regions. libgomp spins up to
// 300,000 times before it sleeps; with another process on one of the cores, a decode step's ~50
// joins spin against a descheduled partner, and prefill and decode keep only 35-50% of their quiet
// speed. With 1,000 spins they keep 50-55%, and lose nothing measurable on a quiet machine in
// prefill, about 10% in decode (bench/load_bench.sh, docs/benchmarks.md, issue 34). libgomp reads
// OMP_WAIT_POLICY and GOMP_SPINCOUNT once, while it loads, before main (and glibc resets the
// environment after an executable's .preinit_array), so choosing for the user means starting
// again with the variable set.
#pragma once

#include "mt/api.h"

namespace mt::cli {

// Unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set (the user's choice stands): sets
// GOMP_SPINCOUNT=1000 and runs this program again with the same arguments (/proc/self/exe).
// Returns only when nothing is to be done or the program cannot be run again (then with the
// environment as it was). Call it first in main, before any thread starts.
MT_API void spin_briefly_unless_chosen(char** argv);

}  // namespace mt::cli
