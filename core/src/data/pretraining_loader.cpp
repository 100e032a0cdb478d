#include "mt/data/pretraining_loader.h"

#include <algorithm>

#include "mt/error.h"

namespace mt::data {

PretrainingLoader::PretrainingLoader(const GPTSampleDataset& dataset, int64_t micro_batch_size,
                                     int data_parallel_rank, int data_parallel_size,
                                     int64_t consumed_samples)
    : dataset_(dataset),
      micro_batch_size_(micro_batch_size),
      rank_(data_parallel_rank),
      world_(data_parallel_size),
      consumed_(consumed_samples) {
    MT_CHECK(dataset.size() > 0, "no sample to consume: the dataset is empty");
    MT_CHECK(consumed_samples < dataset.size(), "no samples left to consume: ", consumed_samples,
             " consumed of ", dataset.size());
    MT_CHECK(micro_batch_size > 0, "--micro-batch-size must be positive, got ", micro_batch_size);
    MT_CHECK(data_parallel_size > 0 && data_parallel_rank >= 0 &&
                 data_parallel_rank < data_parallel_size,
             "data-parallel rank ", data_parallel_rank, " outside a group of ", data_parallel_size);
}

bool PretrainingLoader::next(GPTBatch& batch) {
    const int64_t chunk = micro_batch_size_ * world_;
    if (consumed_ + chunk > dataset_.size()) return false;
    const int64_t first = consumed_ + rank_ * micro_batch_size_;
    for (int64_t b = 0; b < micro_batch_size_; ++b) {
        GPTSample s = dataset_.get(first + b);
        const int64_t len = static_cast<int64_t>(s.tokens.size());
        if (b == 0) {
            batch.tokens = Tensor::empty({micro_batch_size_, len}, DType::i64);
            batch.labels = Tensor::empty({micro_batch_size_, len}, DType::i64);
            batch.loss_mask = Tensor::empty({micro_batch_size_, len}, DType::f32);
            batch.position_ids = Tensor::empty({micro_batch_size_, len}, DType::i64);
            batch.document_start = Tensor::empty({micro_batch_size_, len}, DType::i32);
        }
        MT_CHECK(batch.tokens.size(1) == len, "sample ", first + b, " has ", len,
                 " tokens, the batch ", batch.tokens.size(1));
        std::copy(s.tokens.begin(), s.tokens.end(), batch.tokens.data<int64_t>() + b * len);
        std::copy(s.labels.begin(), s.labels.end(), batch.labels.data<int64_t>() + b * len);
        std::copy(s.loss_mask.begin(), s.loss_mask.end(), batch.loss_mask.data<float>() + b * len);
        std::copy(s.position_ids.begin(), s.position_ids.end(),
                  batch.position_ids.data<int64_t>() + b * len);
        std::copy(s.document_start.begin(), s.document_start.end(),
                  batch.document_start.data<int32_t>() + b * len);
    }
    consumed_ += chunk;
    return true;
}

}  // namespace mt::data
