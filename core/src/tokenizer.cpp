#include "mt/tokenizer.h"

#include <string>
#include <unordered_map>

#include "mt/error.h"

namespace mt {

int32_t Tokenizer::require(const std::optional<int32_t>& id, const char* what) const {
    MT_CHECK(id.has_value(), name(), " has no ", what, " token");
    return *id;
}

TokenizerIdentity Tokenizer::dataset_identity() const {
    MT_FAIL("--tokenizer-type ", name(), ": not supported yet: training data read with the ",
            name(), " tokenizer (its dataset cache identity)");
}

std::vector<std::string> Tokenizer::vocabulary() const {
    MT_FAIL("--tokenizer-type ", name(), ": not supported yet: the ", name(),
            " tokenizer's vocabulary text (inv_vocab)");
}

std::vector<int32_t> sentinel_ids(const Tokenizer& tokenizer) {
    std::unordered_map<std::string, int32_t> id_of;
    const std::vector<std::string> pieces = tokenizer.vocabulary();
    for (size_t id = 0; id < pieces.size(); ++id) id_of.emplace(pieces[id], int32_t(id));
    std::vector<int32_t> out;
    for (size_t n = 0;; ++n) {
        const auto it = id_of.find("<extra_id_" + std::to_string(n) + ">");
        if (it == id_of.end()) return out;
        out.push_back(it->second);
    }
}

}  // namespace mt
