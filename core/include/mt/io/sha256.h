// SHA-256 (FIPS 180-4), fed in pieces: Megatron's checkpoint integrity manifest names every file
// by its digest (hashlib.sha256's hexdigest).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "mt/api.h"

namespace mt::io {

class MT_API Sha256 {
  public:
    Sha256();
    void update(const void* data, size_t size);
    // The lowercase hex digest of everything fed; the hash is spent afterwards.
    std::string hex_digest();

  private:
    void compress(const uint8_t* block);
    std::array<uint32_t, 8> state_;
    std::array<uint8_t, 64> pending_{};
    size_t pending_size_ = 0;
    uint64_t total_bytes_ = 0;
};

// The hex SHA-256 of a file's bytes, read in 1 MiB pieces; an mt::Error naming the file when it
// cannot be read.
MT_API std::string sha256_of_file(const std::filesystem::path& path);

}  // namespace mt::io
