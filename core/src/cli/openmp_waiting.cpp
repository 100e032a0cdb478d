#include "mt/cli/openmp_waiting.h"

#include <unistd.h>

#include <cstdlib>

namespace mt::cli {

void wait_passively_unless_chosen(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("OMP_WAIT_POLICY");  // not run again (no /proc): libgomp's default, as before
}

}  // namespace mt::cli
