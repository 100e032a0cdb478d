#include "mt/checkpoint/checkpoint_directory.h"

#include <cstdio>
#include <fstream>

#include "mt/error.h"

namespace mt {

std::filesystem::path checkpoint_tracker(const std::filesystem::path& dir) {
    return dir / kCheckpointTrackerName;
}

std::string iteration_dir_name(int64_t iteration) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "iter_%07lld", static_cast<long long>(iteration));
    return buf;
}

std::filesystem::path iteration_dir(const std::filesystem::path& dir,
                                    const LatestCheckpoint& latest) {
    return dir / (latest.release ? std::string("release") : iteration_dir_name(latest.iteration));
}

std::optional<LatestCheckpoint> read_tracker(const std::filesystem::path& dir) {
    const std::filesystem::path tracker = checkpoint_tracker(dir);
    if (!std::filesystem::exists(tracker)) return std::nullopt;
    // A regular file of a few bytes: a device or FIFO there (/dev/zero) would never end.
    MT_CHECK(std::filesystem::is_regular_file(tracker), "invalid metadata file ", tracker.string(),
             ": not a regular file");
    constexpr std::streamsize kLongest = 64;
    std::ifstream in(tracker, std::ios::binary);
    MT_CHECK(in, "cannot read ", tracker.string());
    std::string text(size_t(kLongest) + 1, '\0');
    in.read(text.data(), kLongest + 1);
    text.resize(size_t(in.gcount()));
    MT_CHECK(in.gcount() <= kLongest, "invalid metadata file ", tracker.string(), ": longer than ",
             kLongest, " bytes, not an iteration number");
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
        text.pop_back();
    if (text == "release") return LatestCheckpoint{0, true};
    size_t used = 0;
    long long value = 0;
    try {
        value = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    MT_CHECK(used == text.size() && used > 0 && value > 0, "invalid metadata file ",
             tracker.string(), ": '", text, "' is neither an iteration > 0 nor 'release'");
    return LatestCheckpoint{value, false};
}

}  // namespace mt
