// How the inference tools' OpenMP threads wait between parallel regions. libgomp spins for a while
// before it sleeps; with another process on one of the cores, a decode step's ~50 joins spin
// against a descheduled partner, and decode and prefill keep only 37-41% of their speed, against
// 61% and 53% when the threads wait passively, for 2-5% when the machine is quiet
// (docs/benchmarks.md, issue 34). libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, while it
// loads, before main (and glibc resets the environment after an executable's .preinit_array), so
// choosing for the user means starting again with the variable set.
#pragma once

#include "mt/api.h"

namespace mt::cli {

// Unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set (the user's choice stands): sets
// OMP_WAIT_POLICY=passive and runs this program again with the same arguments
// (/proc/self/exe). Returns only when nothing is to be done or the program cannot be run again
// (then with the environment as it was). Call it first in main, before any thread starts.
MT_API void wait_passively_unless_chosen(char** argv);

}  // namespace mt::cli
