// TokenTable: an open-addressing hash map from token bytes to id, built once and then only
// read, so WordPiece's many substring look-ups hash a string_view and never allocate.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace mt::plugins::wordpiece {

class TokenTable {
  public:
    // Maps `key` to `id`, replacing an earlier id of the same key (as a Python dict does).
    void insert(std::string_view key, int32_t id);
    // The id of `key`, or -1.
    int32_t find(std::string_view key) const {
        if (key.size() > max_key_bytes_ || slots_.empty()) return -1;
        const Key k(key);
        for (size_t i = k.hash & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.id < 0) return -1;
            if (s.head[0] == k.head[0] && s.head[1] == k.head[1] && s.length == key.size() &&
                (key.size() <= kHeadBytes ||
                 std::memcmp(tails_.data() + s.tail, key.data() + kHeadBytes,
                             key.size() - kHeadBytes) == 0))
                return s.id;
        }
    }
    size_t size() const { return size_; }
    // Longest key in bytes: longer substrings need no look-up.
    size_t max_key_bytes() const { return max_key_bytes_; }
    // Calls fn(key, id) for every entry, in no particular order.
    template <class Fn>
    void for_each(Fn&& fn) const {
        std::string key;
        for (const Slot& s : slots_) {
            if (s.id < 0) continue;
            key.assign(reinterpret_cast<const char*>(s.head),
                       std::min<size_t>(s.length, kHeadBytes));
            if (s.length > kHeadBytes) key.append(tails_, s.tail, s.length - kHeadBytes);
            fn(std::string_view(key), s.id);
        }
    }

  private:
    // The first kHeadBytes of a key live in its slot, zero padded, so a look-up of a short
    // token (nearly all of them) touches one cache line; longer keys keep the rest in tails_.
    static constexpr size_t kHeadBytes = 16;
    static_assert(std::endian::native == std::endian::little, "heads hold key bytes in order");
    struct Key {
        explicit Key(std::string_view key) {
            load_head(key.data(), key.size());
            hash = hash_key(head, key);
        }
        // The first kHeadBytes bytes, zero padded, without a variable-length memcpy call.
        void load_head(const char* p, size_t n) {
            auto load8 = [](const char* q) {
                uint64_t v;
                std::memcpy(&v, q, 8);
                return v;
            };
            auto load4 = [](const char* q) {
                uint32_t v;
                std::memcpy(&v, q, 4);
                return static_cast<uint64_t>(v);
            };
            if (n >= 16) {
                head[0] = load8(p);
                head[1] = load8(p + 8);
            } else if (n > 8) {
                // Bytes [n-8, n) shifted down to drop the ones already in head[0].
                head[0] = load8(p);
                head[1] = load8(p + n - 8) >> (8 * (16 - n));
            } else if (n == 8) {
                head[0] = load8(p);
            } else if (n >= 4) {
                head[0] = load4(p) | (load4(p + n - 4) << (8 * (n - 4)));
            } else if (n > 0) {
                const auto u = [&](size_t k) {
                    return static_cast<uint64_t>(static_cast<uint8_t>(p[k]));
                };
                head[0] = u(0) | (u(n / 2) << (8 * (n / 2))) | (u(n - 1) << (8 * (n - 1)));
            }
        }
        uint64_t head[2] = {0, 0};
        uint64_t hash;
    };
    struct Slot {
        uint64_t head[2] = {0, 0};
        uint32_t length = 0;
        uint32_t tail = 0;  // offset of bytes past kHeadBytes in tails_
        int32_t id = -1;    // -1: empty
        uint32_t unused = 0;
    };
    static uint64_t hash_key(const uint64_t head[2], std::string_view key);
    void grow();

    std::vector<Slot> slots_;
    std::string tails_;
    size_t mask_ = 0;
    size_t size_ = 0;
    size_t max_key_bytes_ = 0;
};

}  // namespace mt::plugins::wordpiece
