// The process's memory as Megatron's report_memory and --log-memory-to-tensorboard report the
// GPU's: on the CPU the resident set is what the run holds, its high-water mark the peak.
#pragma once

#include <cstdint>
#include <string>

#include "mt/api.h"

namespace mt::train {

struct ProcessMemory {
    int64_t resident_bytes = 0;       // VmRSS
    int64_t peak_resident_bytes = 0;  // VmHWM
};

// From /proc/self/status (zeros where it cannot be read).
MT_API ProcessMemory process_memory();

// "[Rank R] (after N iterations) memory (MB) | allocated: A | max allocated: P | reserved: A |
// max reserved: P" with A the resident and P the peak resident megabytes, as Python prints them.
MT_API std::string format_memory_report(int rank, int64_t iteration, const ProcessMemory& memory);

}  // namespace mt::train
