#include "torch_layout.h"

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "mt/error.h"

namespace mt::plugins::torch_ckpt {

namespace {

std::string iter_name(int64_t iteration) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "iter_%07lld", static_cast<long long>(iteration));
    return buf;
}

// A sibling of the final iteration directory that loading never looks at (it follows the
// tracker only); the process id keeps two writers apart.
fs::path temporary_dir(const fs::path& dir, int64_t iteration) {
    return dir / (iter_name(iteration) + ".tmp." + std::to_string(::getpid()));
}

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    MT_CHECK(out, "cannot write ", path.string());
    out << text;
    out.close();
    MT_CHECK(out, "cannot write ", path.string());
}

}  // namespace

fs::path iteration_dir(const fs::path& dir, const Latest& latest) {
    return dir / (latest.release ? std::string("release") : iter_name(latest.iteration));
}

fs::path checkpoint_file(const fs::path& dir, const Latest& latest) {
    return iteration_dir(dir, latest) / "mp_rank_00" / kFileName;
}

std::optional<Latest> read_tracker(const fs::path& dir) {
    const fs::path tracker = dir / kTrackerName;
    if (!fs::exists(tracker)) return std::nullopt;
    std::ifstream in(tracker, std::ios::binary);
    MT_CHECK(in, "cannot read ", tracker.string());
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
        text.pop_back();
    if (text == "release") return Latest{0, true};
    size_t used = 0;
    long long value = 0;
    try {
        value = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    MT_CHECK(used == text.size() && used > 0 && value > 0, "invalid metadata file ",
             tracker.string(), ": '", text, "' is neither an iteration > 0 nor 'release'");
    return Latest{value, false};
}

fs::path begin_write(const fs::path& dir, int64_t iteration) {
    const fs::path tmp = temporary_dir(dir, iteration);
    fs::remove_all(tmp);
    fs::create_directories(tmp / "mp_rank_00");
    return tmp / "mp_rank_00" / kFileName;
}

void finish_write(const fs::path& dir, int64_t iteration) {
    const fs::path final_dir = iteration_dir(dir, {iteration, false});
    // Saving an iteration again replaces it by two back-to-back renames (the tracker may
    // already name it), then drops the old copy.
    const fs::path old = final_dir.string() + ".old." + std::to_string(::getpid());
    const bool replacing = fs::exists(final_dir);
    if (replacing) fs::rename(final_dir, old);
    fs::rename(temporary_dir(dir, iteration), final_dir);
    if (replacing) fs::remove_all(old);
    const fs::path tracker = dir / kTrackerName;
    const fs::path tmp = dir / (std::string(kTrackerName) + ".tmp." + std::to_string(::getpid()));
    write_text(tmp, std::to_string(iteration));
    fs::rename(tmp, tracker);
}

}  // namespace mt::plugins::torch_ckpt
