#include "mpiexec_launch.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "test_support.h"

namespace mt::test {
namespace {

namespace fs = std::filesystem;

// This process's own $TMPDIR for mpiexec, made on first use and removed at exit.
class SessionParent {
  public:
    SessionParent()
        : path_(fs::temp_directory_path() / ("mt-mpiexec-" + std::to_string(::getpid()))) {
        fs::create_directories(path_);
    }
    ~SessionParent() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    const fs::path& path() const { return path_; }

  private:
    fs::path path_;
};

}  // namespace

bool mpiexec_available() {
    return !std::string(MT_TEST_MPIEXEC).empty();
}

std::string mpiexec_prefix(int ranks) {
    static const SessionParent parent;
    return "env TMPDIR=" + shell_quote(parent.path()) + " " + MT_TEST_MPIEXEC + " -n " +
           std::to_string(ranks) + " -x OMP_NUM_THREADS=1 ";
}

}  // namespace mt::test
