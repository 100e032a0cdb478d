// Megatron's TikTokenizer vocabulary file (--tokenizer-model): a JSON list of {"rank",
// "token_bytes" (base64), "token_str"}, read with the checks of reload_mergeable_ranks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mt::plugins::tiktoken {

// The bytes of ranks 0..n-1, n = min(max_ranks, entries): Megatron cuts the list to
// max_vocab before checking it. mt::Error naming the file and entry where Megatron's asserts
// fail: a path not ending in .json, an entry whose keys are not exactly those three, a rank that
// is not its index, one of the first 256 that is not its own byte, bytes listed twice.
std::vector<std::string> read_tiktoken_ranks(const std::string& path, size_t max_ranks);

}  // namespace mt::plugins::tiktoken
