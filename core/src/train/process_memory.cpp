#include "mt/train/process_memory.h"

#include <fstream>
#include <sstream>

#include "mt/data/dataset_description.h"

namespace mt::train {

ProcessMemory process_memory() {
    ProcessMemory m;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        std::istringstream fields(line);
        std::string key;
        int64_t kb = 0;
        fields >> key >> kb;
        if (key == "VmRSS:") m.resident_bytes = kb * 1024;
        if (key == "VmHWM:") m.peak_resident_bytes = kb * 1024;
    }
    return m;
}

std::string format_memory_report(int rank, int64_t iteration, const ProcessMemory& memory) {
    auto mb = [](int64_t bytes) { return data::python_float_repr(double(bytes) / 1048576.0); };
    const std::string now = mb(memory.resident_bytes), peak = mb(memory.peak_resident_bytes);
    return "[Rank " + std::to_string(rank) + "] (after " + std::to_string(iteration) +
           " iterations) memory (MB) | allocated: " + now + " | max allocated: " + peak +
           " | reserved: " + now + " | max reserved: " + peak;
}

}  // namespace mt::train
