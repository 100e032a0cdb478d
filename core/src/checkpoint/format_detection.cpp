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
    std::vector<std::string> names = registry.names("checkpoint");
    // Megatron's own formats first: an HF export may sit beside a Megatron checkpoint.
    const std::vector<std::string> preferred = {"torch_dist", "torch", "hf"};
    std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
        auto rank = [&](const std::string& n) {
            return std::find(preferred.begin(), preferred.end(), n) - preferred.begin();
        };
        return rank(a) < rank(b);
    });
    std::string tried;
    for (const auto& name : names) {
        auto candidate = registry.create_checkpoint(name);
        if (candidate->detect(dir)) return candidate;
        tried += (tried.empty() ? "" : ", ") + name;
    }
    MT_FAIL("--load ", dir.string(), ": no checkpoint format recognises this directory (tried ",
            tried.empty() ? "none: no checkpoint plugins found" : tried, ")");
}

}  // namespace mt
