#include "token_table.h"

#include "mt/error.h"

namespace mt::plugins::wordpiece {
namespace {

constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;

inline uint64_t fold(uint64_t a, uint64_t b) {
    const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}

}  // namespace

uint64_t TokenTable::hash_key(const uint64_t head[2], std::string_view key) {
    // Multiply-fold mixing (as in wyhash): one 128-bit product per 16 bytes.
    uint64_t h = fold(head[0] ^ kMul, head[1] ^ 0xE7037ED1A0B428DBull ^ key.size());
    for (size_t i = kHeadBytes; i < key.size(); i += 8) {
        uint64_t k = 0;
        std::memcpy(&k, key.data() + i, std::min<size_t>(8, key.size() - i));
        h = fold(h ^ k, kMul);
    }
    return fold(h, 0x8EBC6AF09C88C6E3ull);
}

void TokenTable::insert(std::string_view key, int32_t id) {
    MT_CHECK(id >= 0, "token ids are non-negative, got ", id);
    MT_CHECK(key.size() < UINT32_MAX, "token longer than 4 GiB");
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const Key k(key);
    for (size_t i = k.hash & mask_;; i = (i + 1) & mask_) {
        Slot& s = slots_[i];
        if (s.id < 0) {
            s.head[0] = k.head[0];
            s.head[1] = k.head[1];
            s.length = static_cast<uint32_t>(key.size());
            if (key.size() > kHeadBytes) {
                MT_CHECK(tails_.size() + key.size() < UINT32_MAX, "vocabulary exceeds 4 GiB");
                s.tail = static_cast<uint32_t>(tails_.size());
                tails_.append(key.substr(kHeadBytes));
            }
            s.id = id;
            ++size_;
            if (key.size() > max_key_bytes_) max_key_bytes_ = key.size();
            return;
        }
        if (s.head[0] == k.head[0] && s.head[1] == k.head[1] && s.length == key.size() &&
            (key.size() <= kHeadBytes ||
             tails_.compare(s.tail, key.size() - kHeadBytes, key.substr(kHeadBytes)) == 0)) {
            s.id = id;
            return;
        }
    }
}

void TokenTable::grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
        if (s.id < 0) continue;
        // Rehash from the stored bytes.
        std::string key(reinterpret_cast<const char*>(s.head),
                        std::min<size_t>(s.length, kHeadBytes));
        if (s.length > kHeadBytes) key.append(tails_, s.tail, s.length - kHeadBytes);
        size_t i = Key(key).hash & mask_;
        while (slots_[i].id >= 0) i = (i + 1) & mask_;
        slots_[i] = s;
    }
}

}  // namespace mt::plugins::wordpiece
