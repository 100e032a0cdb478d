#include "classification_example.h"

#include <string>

#include "mt/error.h"

namespace mt::eval {

ClassificationRow build_tokens_types_paddings(std::span<const int32_t> a,
                                              std::optional<std::span<const int32_t>> b,
                                              int64_t max_seq_length, int32_t cls, int32_t sep,
                                              int32_t pad) {
    MT_CHECK(max_seq_length >= 1, "the sequence length must be at least 1, not ", max_seq_length);
    const size_t length = size_t(max_seq_length);
    ClassificationRow row;
    auto add = [&row](int32_t id, int32_t type) {
        row.ids.push_back(id);
        row.types.push_back(type);
        row.paddings.push_back(1);
    };
    row.ids.reserve(length);
    row.types.reserve(length);
    row.paddings.reserve(length);
    add(cls, 0);
    for (size_t i = 0; i < a.size() && row.ids.size() < length; ++i) add(a[i], 0);
    if (row.ids.size() < length) add(sep, 0);
    if (b)
        for (size_t i = 0; i < b->size() && row.ids.size() < length; ++i) add((*b)[i], 1);
    // Megatron cuts a sequence of max_seq_length or more tokens (counting its closing [SEP]
    // when b is absent) to max_seq_length - 1 and then appends [SEP].
    const size_t full = 2 + a.size() + (b ? b->size() : 0);
    const bool trimmed = full >= length;
    if (trimmed) {
        row.ids.resize(length - 1);
        row.types.resize(length - 1);
        row.paddings.resize(length - 1);
    }
    if (b || trimmed) add(sep, b ? 1 : 0);
    row.ids.resize(length, pad);
    row.types.resize(length, pad);
    row.paddings.resize(length, 0);
    return row;
}

ClassificationSpecialIds classification_special_ids(const Tokenizer& tokenizer) {
    const SpecialIds& s = tokenizer.special_ids();
    auto need = [&tokenizer](const std::optional<int32_t>& id, const char* what) {
        MT_CHECK(id.has_value(), "the ", tokenizer.name(), " tokenizer has no ", what,
                 " token, which the classification tasks need");
        return *id;
    };
    return {need(s.cls, "[CLS]"), need(s.sep, "[SEP]"), need(s.pad, "pad")};
}

ClassificationRow build_tokens_types_paddings_from_text(std::string_view a,
                                                        std::optional<std::string_view> b,
                                                        const Tokenizer& tokenizer,
                                                        int64_t max_seq_length) {
    const ClassificationSpecialIds special = classification_special_ids(tokenizer);
    const std::vector<int32_t> a_ids = tokenizer.encode(a);
    std::optional<std::vector<int32_t>> b_ids;
    if (b) b_ids = tokenizer.encode(*b);
    std::optional<std::span<const int32_t>> b_span;
    if (b_ids) b_span = std::span<const int32_t>(*b_ids);
    return build_tokens_types_paddings(a_ids, b_span, max_seq_length, special.cls, special.sep,
                                       special.pad);
}

}  // namespace mt::eval
