// Launching a tool under mpiexec from a test.
#pragma once

#include <string>

namespace mt::test {

// Whether this build found an mpiexec (the multi-rank tool tests skip without one).
bool mpiexec_available();
// The command-line prefix that runs the following program on `ranks` ranks with
// OMP_NUM_THREADS=1, ending in a space.
//
// Open MPI's mpirun creates its session directory under $TMPDIR and races another mpirun of the
// same user starting at that moment ("A call to mkdir was unable to create the desired
// directory", open-mpi/ompi#8510), which ctest -j does; so every test process gives its
// launches a $TMPDIR of their own, removed when the process ends.
std::string mpiexec_prefix(int ranks);

}  // namespace mt::test
