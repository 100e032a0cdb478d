#include "mt/train/schedule_trace.h"
#include "mt/io/durable.h"

#include <cstdio>
#include <fstream>

#include <unistd.h>

#include "mt/error.h"

namespace mt::train {

void ScheduleTrace::record(const char* phase, int64_t micro_batch, int chunk,
                           Clock::time_point begin, Clock::time_point end) {
    using us = std::chrono::duration<double, std::micro>;
    events_.push_back({phase, iteration_, micro_batch, chunk, us(begin - start_).count(),
                       us(end - begin).count()});
}

std::string ScheduleTrace::json(int rank, int stage) const {
    std::string out = "{\"traceEvents\": [\n";
    char line[320];
    std::snprintf(line, sizeof line,
                  "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": "
                  "{\"name\": \"pipeline stage %d\"}}",
                  stage, stage);
    out += line;
    for (const Event& e : events_) {
        // "forward 3", "forward 3 chunk 1" with virtual stages, "forward-backward" (the whole
        // schedule of an iteration: no micro-batch).
        std::string name = e.phase;
        if (e.micro_batch >= 0) name += " " + std::to_string(e.micro_batch);
        if (e.chunk >= 0) name += " chunk " + std::to_string(e.chunk);
        std::snprintf(line, sizeof line,
                      ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, "
                      "\"dur\": %.3f, \"pid\": %d, \"tid\": %d, \"args\": {\"iteration\": %lld, "
                      "\"micro_batch\": %lld, \"chunk\": %d}}",
                      name.c_str(), e.phase, e.begin_us, e.duration_us, stage, rank,
                      static_cast<long long>(e.iteration), static_cast<long long>(e.micro_batch),
                      e.chunk);
        out += line;
    }
    out += "\n]}\n";
    return out;
}

void ScheduleTrace::write(const std::filesystem::path& file, int rank, int stage) const {
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
    const std::filesystem::path tmp = file.string() + ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary);
        out << json(rank, stage);
        MT_CHECK(out.good(), "cannot write the schedule trace ", tmp.string());
    }
    io::rename_path(tmp, file);
}

}  // namespace mt::train
