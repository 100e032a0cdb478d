#include "torch_layout.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "mt/error.h"
#include "mt/io/atomic_file.h"
#include "mt/io/durable.h"

namespace mt::plugins::torch_ckpt {

namespace {

std::string iteration_name(int64_t iteration) {
    return iteration == 0 ? std::string("release") : iteration_dir_name(iteration);
}

// A sibling of the final iteration directory that loading never looks at (it follows the
// tracker only); the process id keeps two writers apart.
fs::path temporary_dir(const fs::path& dir, int64_t iteration) {
    return dir / (iteration_name(iteration) + ".tmp." + std::to_string(::getpid()));
}

// What saves killed midway leave (iter_NNNNNNN.tmp.PID, iter_NNNNNNN.old.PID, release.*) whose
// process is gone; a live process's may be a save under way and are kept.
void remove_stale_temporaries(const fs::path& dir) {
    if (!fs::is_directory(dir)) return;
    static const std::regex kTemporary(R"((?:iter_\d{7}|release)\.(?:tmp|old)\.(\d+))");
    std::vector<fs::path> stale;
    for (const auto& entry : fs::directory_iterator(dir)) {
        std::smatch m;
        const std::string name = entry.path().filename().string();
        if (!std::regex_match(name, m, kTemporary)) continue;
        long long pid = 0;
        try {
            pid = std::stoll(m[1].str());
        } catch (const std::exception&) {
            continue;
        }
        if (pid <= 0 || pid > 0x7fffffff) continue;
        if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to tell
        stale.push_back(entry.path());
    }
    for (const fs::path& p : stale) {
        std::error_code ignored;  // another save may be cleaning up too
        fs::remove_all(p, ignored);
    }
}

}  // namespace

std::string rank_dir_name(const CheckpointLayout& layout, int64_t tp_rank, int64_t pp_rank,
                          int64_t ep_rank) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "mp_rank_%02lld", static_cast<long long>(tp_rank));
    std::string name = buf;
    if (layout.pipeline_parallel > 1) {
        std::snprintf(buf, sizeof buf, "_%03lld", static_cast<long long>(pp_rank));
        name += buf;
    }
    if (layout.expert_parallel > 1) {
        std::snprintf(buf, sizeof buf, "_%03lld", static_cast<long long>(ep_rank));
        name += buf;
    }
    return name;
}

fs::path checkpoint_file(const fs::path& dir, const LatestCheckpoint& latest,
                         const CheckpointLayout& layout, int64_t tp_rank, int64_t pp_rank,
                         int64_t ep_rank) {
    return iteration_dir(dir, latest) / rank_dir_name(layout, tp_rank, pp_rank, ep_rank) /
           kFileName;
}

std::optional<CheckpointLayout> read_layout(const fs::path& iteration_dir) {
    if (!fs::is_directory(iteration_dir)) return std::nullopt;
    static const std::regex kRankDir(R"(mp_rank_(\d{2,})(?:_(\d{3,}))?(?:_(\d{3,}))?)");
    CheckpointLayout layout{0, 0, 0};
    bool any = false;
    for (const auto& entry : fs::directory_iterator(iteration_dir)) {
        std::smatch m;
        const std::string name = entry.path().filename().string();
        if (!entry.is_directory() || !std::regex_match(name, m, kRankDir)) continue;
        any = true;
        layout.tensor_parallel = std::max<int64_t>(layout.tensor_parallel, std::stoll(m[1]) + 1);
        if (m[2].matched)
            layout.pipeline_parallel =
                std::max<int64_t>(layout.pipeline_parallel, std::stoll(m[2]) + 1);
        if (m[3].matched)
            layout.expert_parallel =
                std::max<int64_t>(layout.expert_parallel, std::stoll(m[3]) + 1);
    }
    if (!any) return std::nullopt;
    layout.pipeline_parallel = std::max<int64_t>(layout.pipeline_parallel, 1);
    layout.expert_parallel = std::max<int64_t>(layout.expert_parallel, 1);
    for (int64_t pp = 0; pp < layout.pipeline_parallel; ++pp)
        for (int64_t tp = 0; tp < layout.tensor_parallel; ++tp)
            for (int64_t ep = 0; ep < layout.expert_parallel; ++ep) {
                const fs::path rank = iteration_dir / rank_dir_name(layout, tp, pp, ep);
                MT_CHECK(fs::is_directory(rank), iteration_dir.string(),
                         " holds a tensor-parallel ", layout.tensor_parallel,
                         " x pipeline-parallel ", layout.pipeline_parallel,
                         layout.expert_parallel > 1
                             ? " x expert-parallel " + std::to_string(layout.expert_parallel)
                             : std::string(),
                         " checkpoint but ", rank.string(), " is missing");
            }
    return layout;
}

fs::path begin_write(const fs::path& dir, int64_t iteration) {
    MT_CHECK(iteration >= 0, "cannot save a checkpoint at iteration ", iteration);
    remove_stale_temporaries(dir);
    const fs::path tmp = temporary_dir(dir, iteration);
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    return tmp;
}

void finish_write(const fs::path& dir, int64_t iteration) {
    // Synced, then renamed into place or swapped with a copy saved before (the tracker may
    // already name this iteration) in one step.
    io::replace_directory(temporary_dir(dir, iteration),
                          iteration_dir(dir, {iteration, iteration == 0}));
    io::AtomicFile tracker(checkpoint_tracker(dir));
    tracker.stream() << (iteration == 0 ? std::string("release") : std::to_string(iteration));
    tracker.commit();
}

}  // namespace mt::plugins::torch_ckpt
