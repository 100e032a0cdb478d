// The shared corpora's documents and per-document digests of token ids, as the fixture scripts
// that record a tokenizer library's ids over them compute them (tests/fixtures/gpt2bpe and
// tests/fixtures/sentencepiece make_fixtures.py).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace mt::test {

// One document per JSON line's "text" (.jsonl), else one per line with its newline.
std::vector<std::string> corpus_documents(const std::filesystem::path& path);
// FNV-1a 64 over the ids as 4-byte little-endian integers.
uint64_t fnv1a64(const std::vector<int32_t>& ids);
// fnv1a64 as 16 lowercase hex digits.
std::string fnv1a64_hex(const std::vector<int32_t>& ids);

}  // namespace mt::test
