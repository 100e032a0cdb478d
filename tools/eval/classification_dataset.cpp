#include "classification_dataset.h"

#include <algorithm>

#include "mt/error.h"

namespace mt::eval {

ClassificationDataset::ClassificationDataset(std::vector<ClassificationExample> examples,
                                             bool multiple_choice, data::Split split)
    : examples_(std::move(examples)), multiple_choice_(multiple_choice), split_(split) {
    if (examples_.empty()) return;
    rows_ = int64_t(examples_[0].rows.size());
    MT_CHECK(rows_ > 0, "example 0 has no rows");
    MT_CHECK(multiple_choice_ || rows_ == 1, "a classification example has one row, example 0 has ",
             rows_);
    length_ = int64_t(examples_[0].rows[0].ids.size());
    for (size_t i = 0; i < examples_.size(); ++i) {
        const ClassificationExample& e = examples_[i];
        MT_CHECK(int64_t(e.rows.size()) == rows_, "example ", i, " has ", e.rows.size(),
                 " rows, example 0 has ", rows_);
        for (const ClassificationRow& row : e.rows)
            MT_CHECK(int64_t(row.ids.size()) == length_ && row.types.size() == row.ids.size() &&
                         row.paddings.size() == row.ids.size(),
                     "example ", i, " has a row of ", row.ids.size(), " tokens, example 0 of ",
                     length_);
    }
}

Batch ClassificationDataset::batch(std::span<const int64_t> indices) const {
    const auto B = int64_t(indices.size());
    const Shape shape = multiple_choice_ ? Shape{B, rows_, length_} : Shape{B, length_};
    Batch out;
    Tensor text = Tensor::empty(shape, DType::i64), types = Tensor::empty(shape, DType::i64),
           padding = Tensor::empty(shape, DType::i64), label = Tensor::empty({B}, DType::i64);
    int64_t* at[] = {text.data<int64_t>(), types.data<int64_t>(), padding.data<int64_t>()};
    for (int64_t b = 0; b < B; ++b) {
        const int64_t index = indices[size_t(b)];
        MT_CHECK(index >= 0 && index < size(), "sample ", index, " of a ", split_name(split_),
                 " dataset of ", size());
        const ClassificationExample& e = examples_[size_t(index)];
        for (const ClassificationRow& row : e.rows) {
            const std::vector<int32_t>* fields[] = {&row.ids, &row.types, &row.paddings};
            for (int f = 0; f < 3; ++f)
                at[f] = std::copy(fields[f]->begin(), fields[f]->end(), at[f]);
        }
        label.data<int64_t>()[b] = e.label;
    }
    out["text"] = text;
    out["types"] = types;
    out["padding_mask"] = padding;
    out["label"] = label;
    return out;
}

}  // namespace mt::eval
