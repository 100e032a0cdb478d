// Launcher detection from the environment and the world communicator it leads to, without
// starting MPI: a launched process gets the registry's "mpi" communicator (a stand-in here)
// and fails clearly when that is missing or sees another world size.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "mt/communicator.h"
#include "mt/parallel/world.h"
#include "mt/registry.h"
#include "test_support.h"

namespace {

using mt::test::error_of;

// Clears every variable the detection reads for one test and restores them afterwards.
class CommWorld : public testing::Test {
  protected:
    void SetUp() override {
        for (const char* name : kNames) {
            if (const char* v = std::getenv(name)) saved_[name] = v;
            unsetenv(name);
        }
    }
    void TearDown() override {
        for (const char* name : kNames) unsetenv(name);
        for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
    }
    static void set(const char* name, const char* value) { setenv(name, value, 1); }

  private:
    static constexpr const char* kNames[] = {"OMPI_COMM_WORLD_SIZE",
                                             "OMPI_COMM_WORLD_RANK",
                                             "PMIX_RANK",
                                             "PMI_RANK",
                                             "PMI_SIZE",
                                             "SLURM_PROCID",
                                             "SLURM_NTASKS",
                                             "SLURM_STEP_ID",
                                             "SLURM_STEP_NUM_TASKS"};
    std::map<std::string, std::string> saved_;
};

TEST_F(CommWorld, NothingSetMeansOneProcess) {
    EXPECT_FALSE(mt::parallel::launched_by_mpi());
    mt::Registry registry;
    auto world = mt::parallel::make_world_communicator(registry, "cpu");
    EXPECT_EQ(world->name(), "local");
    EXPECT_EQ(world->size(), 1);
    EXPECT_EQ(mt::parallel::make_world_communicator(registry, "cuda")->name(), "local");
}

TEST_F(CommWorld, MpiLaunchers) {
    set("OMPI_COMM_WORLD_SIZE", "2");
    EXPECT_TRUE(mt::parallel::launched_by_mpi());
    unsetenv("OMPI_COMM_WORLD_SIZE");
    set("PMIX_RANK", "0");
    EXPECT_TRUE(mt::parallel::launched_by_mpi());
    unsetenv("PMIX_RANK");
    set("PMI_RANK", "1");
    EXPECT_TRUE(mt::parallel::launched_by_mpi());
    unsetenv("PMI_RANK");
    set("PMI_SIZE", "4");
    EXPECT_TRUE(mt::parallel::launched_by_mpi());
}

TEST_F(CommWorld, SrunStepsButNotSallocShells) {
    // salloc/sbatch: the job's variables, no step.
    set("SLURM_PROCID", "0");
    set("SLURM_NTASKS", "4");
    EXPECT_FALSE(mt::parallel::launched_by_mpi());
    // srun -n 4: a step of four tasks.
    set("SLURM_STEP_ID", "0");
    set("SLURM_STEP_NUM_TASKS", "4");
    EXPECT_TRUE(mt::parallel::launched_by_mpi());
    // srun -n 1 inside a 4-task allocation: one process, no communicator needed.
    set("SLURM_STEP_NUM_TASKS", "1");
    EXPECT_FALSE(mt::parallel::launched_by_mpi());
}

TEST_F(CommWorld, LaunchedProcessGetsTheMpiCommunicator) {
    set("OMPI_COMM_WORLD_SIZE", "1");
    mt::Registry registry;
    bool made = false;
    registry.communicators().add("mpi", [&] {
        made = true;
        return mt::make_local_communicator();  // a world of one, as mpirun -np 1 gives
    });
    auto world = mt::parallel::make_world_communicator(registry, "cpu");
    EXPECT_TRUE(made);
    EXPECT_EQ(world->size(), 1);
}

TEST_F(CommWorld, LaunchedProcessWithoutThePluginFails) {
    set("OMPI_COMM_WORLD_SIZE", "4");
    mt::Registry registry;
    registry.communicators().add(
        "mpi", []() -> std::unique_ptr<mt::Communicator> { MT_FAIL("cannot load libmpi"); });
    std::string msg = error_of([&] { mt::parallel::make_world_communicator(registry, "cpu"); });
    EXPECT_NE(msg.find("started by Open MPI's mpirun"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cannot load libmpi"), std::string::npos) << msg;
    EXPECT_NE(msg.find("without a launcher"), std::string::npos) << msg;
    msg = error_of([&] { mt::parallel::make_world_communicator(registry, "tpu"); });
    EXPECT_NE(msg.find("no world communicator for backend 'tpu'"), std::string::npos) << msg;
}

TEST_F(CommWorld, WorldSizeMustMatchTheLauncher) {
    // An MPI library that is not the launcher's starts every rank as a world of one: N
    // independent runs. That must fail, not train N copies.
    set("PMI_SIZE", "4");
    mt::Registry registry;
    registry.communicators().add("mpi", [] { return mt::make_local_communicator(); });
    std::string msg = error_of([&] { mt::parallel::make_world_communicator(registry, "mpi"); });
    EXPECT_NE(msg.find("for 4 ranks"), std::string::npos) << msg;
    EXPECT_NE(msg.find("a world of 1"), std::string::npos) << msg;
}

}  // namespace
