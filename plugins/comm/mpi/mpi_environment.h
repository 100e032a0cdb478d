// The process's MPI library state: initialised on first use (or borrowed when the program did
// it), finalised at exit after the communicators still alive are freed. Error checks too.
#pragma once

#include <mpi.h>

#include <string>

#include "mt/error.h"

namespace mt::plugins::mpi {

// Initialises MPI unless it already is (MPI_THREAD_SERIALIZED: calls come from one thread at
// a time, not necessarily the main one). The first call that initialises also arranges the
// MPI_Finalize at exit. Throws mt::Error when MPI was already finalised.
void ensure_initialized();
// True once MPI_Finalize ran: handles must not be touched any more.
bool finalized();

// An MPI communicator handle, shared by the Communicator and its unfinished requests so it is
// freed only when the last of them goes (Open MPI 4 crashes progressing a nonblocking
// collective whose communicator was freed). Handles still alive at exit are freed before
// MPI_Finalize unless an operation is pending on them, and not touched again afterwards.
class CommHandle {
  public:
    explicit CommHandle(MPI_Comm comm);  // takes ownership
    ~CommHandle();
    CommHandle(const CommHandle&) = delete;
    CommHandle& operator=(const CommHandle&) = delete;
    MPI_Comm get() const { return comm_; }
    // Bracket a nonblocking operation on this handle.
    void started();
    void finished();

  private:
    friend void finalize_at_exit();
    MPI_Comm comm_;
    int pending_ = 0;
};

// "MPI_ERR_TRUNCATE: message truncated" for an MPI error code.
std::string error_text(int code);

}  // namespace mt::plugins::mpi

// MT_MPI_CHECK(what, call): throws mt::Error naming the operation, the MPI function and MPI's
// own error text when the call returns anything but MPI_SUCCESS. Our communicators use
// MPI_ERRORS_RETURN, so failures come back here instead of aborting the job.
#define MT_MPI_CHECK(what, call)                                                        \
    do {                                                                                \
        const int mt_mpi_rc_ = (call);                                                  \
        if (mt_mpi_rc_ != MPI_SUCCESS) {                                                \
            const std::string_view mt_mpi_call_(#call);                                 \
            MT_FAIL("mpi ", what, ": ", mt_mpi_call_.substr(0, mt_mpi_call_.find('(')), \
                    " failed: ", ::mt::plugins::mpi::error_text(mt_mpi_rc_));           \
        }                                                                               \
    } while (0)
