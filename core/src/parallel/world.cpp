// Detecting an MPI/srun launch from the environment and picking the world communicator.
#include "mt/parallel/world.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include "mt/error.h"
#include "mt/registry.h"

namespace mt::parallel {

namespace {

const char* env(const char* name) {
    const char* value = std::getenv(name);
    return value && *value ? value : nullptr;
}

std::optional<int> env_int(const char* name) {
    const char* value = env(name);
    if (!value) return std::nullopt;
    char* end = nullptr;
    const long v = std::strtol(value, &end, 10);
    if (end == value || *end != '\0' || v < 0 || v > (1L << 30)) return std::nullopt;
    return static_cast<int>(v);
}

// How a launcher announced this job: its name, the variable that says so, and the world size
// when the launcher states it.
struct Launch {
    const char* launcher = nullptr;
    const char* variable = nullptr;
    std::optional<int> size;
};

std::optional<Launch> detect_launch() {
    if (env("OMPI_COMM_WORLD_SIZE"))
        return Launch{"Open MPI's mpirun", "OMPI_COMM_WORLD_SIZE", env_int("OMPI_COMM_WORLD_SIZE")};
    if (env("PMI_RANK") || env("PMI_SIZE"))
        return Launch{"an MPICH/Hydra mpiexec", env("PMI_SIZE") ? "PMI_SIZE" : "PMI_RANK",
                      env_int("PMI_SIZE")};
    if (env("PMIX_RANK")) return Launch{"a PMIx launcher", "PMIX_RANK", std::nullopt};
    // srun sets SLURM_STEP_ID for the tasks of a step; salloc and sbatch shells have the job's
    // SLURM_* (SLURM_NTASKS included) but no step, and a one-task step needs no communicator.
    if (env("SLURM_STEP_ID") && env("SLURM_PROCID")) {
        std::optional<int> tasks = env_int("SLURM_STEP_NUM_TASKS");
        if (!tasks) tasks = env_int("SLURM_NTASKS");
        if (tasks && *tasks > 1) return Launch{"srun", "SLURM_STEP_NUM_TASKS", tasks};
    }
    return std::nullopt;
}

}  // namespace

bool launched_by_mpi() {
    return detect_launch().has_value();
}

std::unique_ptr<Communicator> make_world_communicator(Registry& registry,
                                                      std::string_view backend) {
    const std::optional<Launch> launch = detect_launch();
    if (!launch) return make_local_communicator();
    std::string_view plugin;
    if (backend == "cpu" || backend == "mpi")
        plugin = "mpi";
    else if (backend == "cuda" || backend == "nccl")
        plugin = "nccl";
    else
        MT_FAIL("no world communicator for backend '", backend,
                "'; backends: cpu (mpi), cuda (nccl)");
    const std::string how =
        str("this process was started by ", launch->launcher, " (", launch->variable, " is set)");
    std::unique_ptr<Communicator> world;
    try {
        world = registry.create_communicator(plugin);
    } catch (const Error& e) {
        MT_FAIL(how, " but the '", plugin, "' communicator could not be made: ", e.what(),
                ". Build megatron.cpp with MPI (libopenmpi-dev, MT_MPI=ON)",
                plugin == "nccl" ? ", CUDA and NCCL" : "",
                ", or start the tool without a launcher to run one process");
    }
    MT_CHECK(!launch->size || world->size() == *launch->size, how, " for ", *launch->size,
             " ranks, but the '", plugin, "' communicator sees a world of ", world->size(),
             " (is the MPI library the launcher's own?)");
    return world;
}

void run_on_ranks(Communicator& world, const std::function<void()>& body) {
    try {
        body();
    } catch (const std::exception& e) {
        if (world.size() > 1) {
            std::fprintf(stderr, "error: rank %d: %s\n", world.rank(), e.what());
            std::fflush(stderr);
            world.abort(1);
        }
        throw;
    }
}

}  // namespace mt::parallel
