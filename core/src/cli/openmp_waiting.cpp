#include "mt/cli/openmp_waiting.h"

#include <unistd.h>

#include <cstdlib>

namespace mt::cli {

void spin_briefly_unless_chosen(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
    if (setenv("GOMP_SPINCOUNT", "1000", 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("GOMP_SPINCOUNT");  // not run again (no /proc): libgomp's default, as before
}

}  // namespace mt::cli
