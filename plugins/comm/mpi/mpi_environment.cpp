// MPI's process-wide lifetime. The state lives in leaked heap objects so that it is still
// valid for communicators destroyed during static destruction, in any order.
#include "mpi_environment.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <vector>

namespace mt::plugins::mpi {

namespace {

struct State {
    std::mutex mutex;
    std::vector<CommHandle*> live;
    bool we_initialized = false;
};

State& state() {
    static State* s = new State();  // never destroyed: see the file comment
    return *s;
}

}  // namespace

// At exit (registered after MPI_Init, so it runs before the destructors of anything made
// earlier): free the handles still alive with nothing pending, then finalise. Never throws.
void finalize_at_exit() {
    int done = 0;
    if (MPI_Finalized(&done) != MPI_SUCCESS || done) return;
    State& s = state();
    {
        std::lock_guard lock(s.mutex);
        for (CommHandle* handle : s.live)
            if (handle->pending_ == 0 && handle->comm_ != MPI_COMM_NULL)
                MPI_Comm_free(&handle->comm_);
        s.live.clear();
    }
    if (s.we_initialized) MPI_Finalize();
}

void ensure_initialized() {
    State& s = state();
    std::lock_guard lock(s.mutex);
    int done = 0;
    MT_MPI_CHECK("init", MPI_Finalized(&done));
    MT_CHECK(!done, "mpi: MPI was already finalised; no new communicator can be made");
    int initialized = 0;
    MT_MPI_CHECK("init", MPI_Initialized(&initialized));
    if (initialized) return;  // the program (or an earlier call) owns MPI_Init
    int provided = 0;
    MT_MPI_CHECK("init", MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
    MT_CHECK(provided >= MPI_THREAD_FUNNELED, "mpi: the MPI library provides thread level ",
             provided, ", below MPI_THREAD_FUNNELED");
    s.we_initialized = true;
    std::atexit(finalize_at_exit);
}

bool finalized() {
    int done = 0;
    return MPI_Finalized(&done) != MPI_SUCCESS || done;
}

CommHandle::CommHandle(MPI_Comm comm) : comm_(comm) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.live.push_back(this);
}

CommHandle::~CommHandle() {
    State& s = state();
    {
        std::lock_guard lock(s.mutex);
        s.live.erase(std::remove(s.live.begin(), s.live.end(), this), s.live.end());
    }
    if (comm_ != MPI_COMM_NULL && !finalized()) MPI_Comm_free(&comm_);
}

void CommHandle::started() {
    std::lock_guard lock(state().mutex);
    ++pending_;
}

void CommHandle::finished() {
    std::lock_guard lock(state().mutex);
    --pending_;
}

std::string error_text(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
        return "MPI error " + std::to_string(code);
    return std::string(text, length);
}

}  // namespace mt::plugins::mpi
