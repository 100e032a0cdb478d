#include "mt/checkpoint/format_detection.h"

#include <algorithm>
#include <vector>

#include "mt/error.h"
#include "mt/plugin_loader.h"

namespace mt {

std::unique_ptr<CheckpointFormat> detect_checkpoint_format(Registry& registry,
                                                           const std::filesystem::path& dir,
                                                           const std::string& format) {
    MT_CHECK(std::filesystem::is_directory(dir), "--load ", dir.string(), ": no such directory");
    if (!format.empty()) return registry.create_checkpoint(format);
    registry.loader().load_kind("checkpoint");
    std::vector<std::unique_ptr<CheckpointFormat>> formats;
    for (const auto& name : registry.names("checkpoint"))
        formats.push_back(registry.create_checkpoint(name));
    std::stable_sort(formats.begin(), formats.end(), [](const auto& a, const auto& b) {
        return a->detection_order() < b->detection_order();
    });
    std::string tried;
    for (auto& candidate : formats) {
        if (candidate->detect(dir)) return std::move(candidate);
        tried += (tried.empty() ? "" : ", ") + std::string(candidate->name());
    }
    MT_FAIL("--load ", dir.string(), ": no checkpoint format recognises this directory (tried ",
            tried.empty() ? "none: no checkpoint plugins found" : tried, ")");
}

}  // namespace mt
