#include "hf_weights.h"

#include <cstdio>

#include "hf_json.h"
#include "mt/error.h"
#include "mt/io/atomic_file.h"

namespace mt::plugins::hf {

std::vector<std::vector<TensorToWrite>> plan_shards(const std::vector<TensorToWrite>& tensors,
                                                    uint64_t max_shard_bytes) {
    std::vector<std::vector<TensorToWrite>> shards;
    uint64_t current = 0;  // bytes in shards.back()
    for (const TensorToWrite& entry : tensors) {
        const uint64_t bytes = entry.nbytes();
        if (bytes > max_shard_bytes) {
            shards.push_back({entry});
            current = max_shard_bytes;  // nothing joins an oversized tensor
            continue;
        }
        if (shards.empty() || current + bytes > max_shard_bytes) {
            shards.emplace_back();
            current = 0;
        }
        shards.back().push_back(entry);
        current += bytes;
    }
    if (shards.empty()) shards.emplace_back();
    return shards;
}

std::vector<std::string> write_hf_weights(const std::filesystem::path& dir,
                                          const std::vector<TensorToWrite>& tensors,
                                          uint64_t max_shard_bytes) {
    MT_CHECK(max_shard_bytes > 0, "--saver hf: the shard size must be positive");
    const auto shards = plan_shards(tensors, max_shard_bytes);
    if (shards.size() == 1) {
        write_safetensors(dir / "model.safetensors", shards[0]);
        return {"model.safetensors"};
    }
    std::vector<std::string> names;
    json::Members weight_map;
    uint64_t total_size = 0, total_parameters = 0;
    for (size_t i = 0; i < shards.size(); ++i) {
        char name[64];
        std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
        write_safetensors(dir / name, shards[i]);
        names.push_back(name);
        for (const TensorToWrite& t : shards[i]) {
            weight_map[t.name] = json::text(name);
            total_size += t.nbytes();
            total_parameters += uint64_t(shape_numel(t.shape));
        }
    }
    const std::string index =
        json::object({{"metadata",
                       json::object({{"total_parameters", json::integer(int64_t(total_parameters))},
                                     {"total_size", json::integer(int64_t(total_size))}},
                                    1)},
                      {"weight_map", json::object(weight_map, 1)}},
                     0) +
        "\n";
    io::AtomicFile file(dir / "model.safetensors.index.json");
    file.stream() << index;
    file.commit();
    names.push_back("model.safetensors.index.json");
    return names;
}

}  // namespace mt::plugins::hf
