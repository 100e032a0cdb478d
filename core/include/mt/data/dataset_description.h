// Megatron's dataset "unique description": json.dumps(unique_identifiers, indent=4) and its MD5,
// which name the index cache files; reproduced exactly so Megatron's caches and ours are shared.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"
#include "mt/data/blend_split.h"
#include "mt/tokenizer.h"

namespace mt::data {

// Python's repr(float): shortest round-trip digits, scientific when the exponent is < -4 or
// >= 16 (1e-05, 1e+16), else fixed with at least one fractional digit (0.949, 1.0).
MT_API std::string python_float_repr(double value);

// Hex MD5 digest (RFC 1321) of `data`.
MT_API std::string md5_hex(const std::string& data);

// A JSON value with the few kinds Megatron's descriptions hold; objects keep insertion order.
class MT_API JsonValue {
  public:
    enum class Kind { null, boolean, integer, real, string, array, object };

    JsonValue() = default;  // null
    static JsonValue boolean(bool v);
    static JsonValue integer(int64_t v);
    static JsonValue real(double v);
    static JsonValue string(std::string v);
    static JsonValue array(std::vector<JsonValue> items = {});
    static JsonValue object();

    Kind kind() const { return kind_; }
    // Appends to an object (keys keep their order) or to an array.
    JsonValue& set(const std::string& key, JsonValue value);
    JsonValue& push(JsonValue value);

    // json.dumps(value, indent=4) with Python's defaults (ensure_ascii, ", " / ": ").
    std::string dumps() const;

  private:
    void dump(std::string& out, int depth) const;

    Kind kind_ = Kind::null;
    bool bool_ = false;
    int64_t int_ = 0;
    double real_ = 0.0;
    std::string string_;
    std::vector<JsonValue> items_;
    std::vector<std::string> keys_;
};

// What every MegatronDataset puts first in its unique_identifiers (its subclass adds its own).
struct DatasetIdentity {
    std::string class_name;                   // "GPTDataset", "BERTMaskedWordPieceDataset"
    std::optional<std::string> dataset_path;  // the prefix; none for mock data
    std::optional<int64_t> num_samples;
    Split split = Split::train;
    uint32_t random_seed = 0;
    int64_t sequence_length = 0;
    std::optional<std::string> split_text;  // --split as given
    std::optional<SplitMatrix> split_matrix;
    TokenizerIdentity tokenizer;
};
MT_API JsonValue dataset_identifiers(const DatasetIdentity& identity);

// The tokenizer's part of a dataset description: {"class": ..., "tokenizer_path": [...], the
// options...}, as MegatronTokenizer.unique_identifiers holds it.
MT_API JsonValue tokenizer_json(const TokenizerIdentity& tokenizer);
// The split matrix as Python holds it (the first bookend starts at the int 0); null without one.
MT_API JsonValue split_matrix_json(const std::optional<SplitMatrix>& matrix);

}  // namespace mt::data
