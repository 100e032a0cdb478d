#include "task_accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "mt/error.h"

namespace mt::eval {

namespace {

// Row b's first maximum of [B, C] logits (a NaN wins, as torch.argmax has it).
template <class T>
int64_t argmax_row(const T* row, int64_t classes) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) {
        if (std::isnan(row[best])) break;
        if (std::isnan(row[c]) || row[c] > row[best]) best = c;
    }
    return best;
}

}  // namespace

AccuracyCount count_correct(Model& model, const data::SampleDataset& dataset,
                            const LoaderShape& shape, int64_t rank,
                            const std::function<void(int64_t)>& on_batch) {
    const std::vector<int64_t> indices =
        distributed_sampler_indices(dataset.size(), shape.data_parallel, rank, 0);
    const int64_t batches = batches_per_epoch(shape);
    AccuracyCount count;
    for (int64_t b = 0; b < batches; ++b) {
        const int64_t begin = b * shape.micro_batch_size;
        const int64_t end =
            std::min<int64_t>(begin + shape.micro_batch_size, int64_t(indices.size()));
        const Batch batch =
            dataset.batch(std::span<const int64_t>(indices.data() + begin, size_t(end - begin)));
        const Tensor logits = model.predict(batch).contiguous();
        const Tensor& labels = batch.at("label");
        const int64_t rows = end - begin;
        MT_CHECK(logits.dim() == 2 && logits.size(0) == rows, "the task model predicted ",
                 logits.describe(), " for a batch of ", rows, " examples");
        const int64_t classes = logits.size(1);
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t predicted = logits.dtype() == DType::f64
                                          ? argmax_row(logits.data<double>() + r * classes, classes)
                                          : argmax_row(logits.data<float>() + r * classes, classes);
            count.correct += predicted == labels.data<int64_t>()[r];
        }
        count.total += rows;
        if (on_batch) on_batch(rows);
    }
    return count;
}

double accuracy_percent(const AccuracyCount& c) {
    MT_CHECK(c.total > 0, "no examples to measure the accuracy on");
    return double(c.correct) * 100.0 / double(c.total);
}

std::string dataset_accuracy_line(int64_t epoch, const std::string& name, const AccuracyCount& c,
                                  double seconds) {
    char tail[160];
    std::snprintf(tail, sizeof tail, " = %.4f %%, elapsed time (sec): %.3f", accuracy_percent(c),
                  seconds);
    return " > |epoch: " + std::to_string(epoch) + "| metrics for " + name +
           ": correct / total = " + std::to_string(c.correct) + " / " + std::to_string(c.total) +
           tail;
}

std::string overall_accuracy_line(int64_t epoch, const AccuracyCount& c) {
    char tail[64];
    std::snprintf(tail, sizeof tail, " = %.4f %%", accuracy_percent(c));
    return " >> |epoch: " + std::to_string(epoch) +
           "| overall: correct / total = " + std::to_string(c.correct) + " / " +
           std::to_string(c.total) + tail;
}

}  // namespace mt::eval
