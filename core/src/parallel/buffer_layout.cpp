// Megatron's ParamAndGradBuffer layout (megatron/core/distributed/param_and_grad_buffer.py).
#include "mt/parallel/buffer_layout.h"

#include <algorithm>
#include <numeric>

#include "mt/error.h"

namespace mt::parallel {

namespace {

int64_t round_up(int64_t n, int64_t multiple) {
    return (n + multiple - 1) / multiple * multiple;
}

}  // namespace

int64_t BufferLayout::numel_unpadded() const {
    int64_t n = 0;
    for (const Bucket& b : buckets) n += b.numel_unpadded;
    return n;
}

int64_t BufferLayout::unpadded_offset(size_t i) const {
    MT_CHECK(i < offsets.size(), "BufferLayout: no parameter ", i, " among ", offsets.size());
    int64_t cut = 0;  // padding of the buckets before parameter i's
    for (size_t b = 0; b < bucket_of[i]; ++b)
        cut += buckets[b].end - buckets[b].begin - buckets[b].numel_unpadded;
    return offsets[i] - cut;
}

BufferLayout buffer_layout(const std::vector<int64_t>& numels, int64_t dp_size,
                           const DataParallelConfig& config, const std::vector<bool>& own_bucket) {
    MT_CHECK(dp_size > 0, "BufferLayout: data-parallel size ", dp_size);
    MT_CHECK(own_bucket.empty() || own_bucket.size() == numels.size(),
             "BufferLayout: ", own_bucket.size(), " own-bucket flags for ", numels.size(),
             " parameters");
    int64_t bucket_size = config.bucket_size;
    if (bucket_size <= 0 && config.overlap_grad_reduce)
        bucket_size = std::max<int64_t>(40000000, 1000000 * dp_size);
    if (!config.overlap_grad_reduce) bucket_size = 0;  // Megatron: one bucket
    const int64_t param_align = config.distributed_optimizer ? 64 : 1;
    const int64_t bucket_align = config.distributed_optimizer ? std::lcm<int64_t>(dp_size, 128) : 1;

    BufferLayout l;
    l.offsets.assign(numels.size(), 0);
    l.bucket_of.assign(numels.size(), 0);
    int64_t offset = 0;
    bool open = false;
    auto close_bucket = [&] {
        BufferLayout::Bucket& b = l.buckets.back();
        b.numel_unpadded = offset - b.begin;
        b.end = round_up(offset, bucket_align);
        offset = b.end;
        open = false;
    };
    for (size_t k = numels.size(); k-- > 0;) {
        // (A closed bucket ends aligned for parameters too: rounding a new one's start is a no-op.)
        offset = round_up(offset, param_align);
        // Megatron closes the bucket before a parameter of its own at that parameter's aligned
        // start: the padding up to it stays in the bucket.
        const bool own = config.distributed_optimizer && !own_bucket.empty() && own_bucket[k];
        if (own && open) close_bucket();
        if (!open) {
            l.buckets.emplace_back();
            l.buckets.back().begin = offset;
            open = true;
        }
        l.offsets[k] = offset;
        l.bucket_of[k] = l.buckets.size() - 1;
        l.buckets.back().params.push_back(k);
        offset += numels[k];
        if (own || (bucket_size > 0 && offset - l.buckets.back().begin >= bucket_size))
            close_bucket();
    }
    if (open) close_bucket();
    l.numel = offset;
    return l;
}

}  // namespace mt::parallel
