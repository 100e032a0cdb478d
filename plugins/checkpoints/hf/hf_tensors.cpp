#include "hf_tensors.h"

#include <simdjson.h>

#include <functional>
#include <set>

#include "mt/error.h"

namespace mt::plugins::hf {

namespace fs = std::filesystem;

HfTensors::HfTensors(const fs::path& dir) : dir_(dir) {
    if (fs::exists(dir / "model.safetensors")) {
        open(dir / "model.safetensors");
        return;
    }
    const fs::path index = dir / "model.safetensors.index.json";
    simdjson::padded_string text;
    MT_CHECK(!simdjson::padded_string::load(index.string()).get(text), dir.string(),
             ": neither model.safetensors nor model.safetensors.index.json");
    simdjson::dom::parser parser;
    simdjson::dom::object map;
    auto error = parser.parse(text)["weight_map"].get_object().get(map);
    MT_CHECK(!error, index.string(),
             ": needs a 'weight_map' object: ", simdjson::error_message(error));
    std::set<std::string, std::less<>> opened;
    for (auto field : map) {
        std::string_view file;
        MT_CHECK(!field.value.get_string().get(file), index.string(), ": weight_map['", field.key,
                 "'] must be a file name");
        if (opened.insert(std::string(file)).second) open(dir / file);
    }
}

Tensor HfTensors::get(const std::string& name, DType as) const {
    return files_[file_of(name)]->read(name, as);
}

DType HfTensors::dtype(const std::string& name) const {
    return files_[file_of(name)]->find(name)->type();
}

const Shape& HfTensors::shape(const std::string& name) const {
    return files_[file_of(name)]->find(name)->shape;
}

size_t HfTensors::file_of(const std::string& name) const {
    auto it = where_.find(name);
    MT_CHECK(it != where_.end(), dir_.string(), ": the checkpoint has no tensor '", name, "'");
    return it->second;
}

void HfTensors::open(const fs::path& path) {
    files_.push_back(std::make_unique<SafetensorsFile>(path));
    for (const auto& e : files_.back()->entries()) where_[e.name] = files_.size() - 1;
}

}  // namespace mt::plugins::hf
