// CRC-32 (IEEE 802.3, the ZIP checksum) without a zlib dependency: the torch zip writer checksums
// every record it streams, and the reader can verify records on request.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mt/api.h"

namespace mt::io {

// Continues the checksum `crc` (0 for a fresh one) over `size` bytes at `data`.
MT_API uint32_t crc32_update(uint32_t crc, const void* data, size_t size);

}  // namespace mt::io
