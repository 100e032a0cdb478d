// T5MaskedWordPieceDataset of megatron/core/datasets/t5_dataset.py (core_v0.13.0): the sentences
// of a sample run, cut to its target, masked in spans, and rewritten as encoder input, decoder
// input and labels around the sentinels.
#include "mt/data/t5_dataset.h"

#include <algorithm>
#include <utility>

#include "mt/error.h"

namespace mt::data {

T5MaskedWordPieceDataset::T5MaskedWordPieceDataset(std::shared_ptr<const IndexedDataset> data,
                                                   std::string dataset_path, int64_t begin,
                                                   int64_t end, std::optional<int64_t> num_samples,
                                                   Split split, const T5DatasetConfig& config)
    // One [BOS] and one [EOS] come on top of the sentences (in the decoder).
    : MaskedWordPieceDataset(
          class_name(), std::move(data), std::move(dataset_path), begin, end, num_samples, split,
          config, {{"sequence_length_decoder", JsonValue::integer(config.sequence_length_decoder)}},
          2, 1),
      config_(config) {
    MT_CHECK(config_.sequence_length_decoder > 0, class_name(),
             ": the decoder's sequence length (--decoder-seq-length) must be positive, got ",
             config_.sequence_length_decoder);
    MT_CHECK(!config_.sentinel_ids.empty(), class_name(),
             ": the tokenizer has no sentinel tokens (give --vocab-extra-ids, e.g. 100)");
}

T5Sample T5MaskedWordPieceDataset::get(int64_t i) const {
    const SampleRow r = row(i);
    NumpyRandomState rng = random_state(i);
    std::vector<int64_t> tokens;
    for (int64_t s = r.first; s < r.last; ++s) {
        const std::vector<int64_t> sentence = corpus().get(s);
        tokens.insert(tokens.end(), sentence.begin(), sentence.end());
    }
    T5Sample out;
    out.truncated = static_cast<int64_t>(tokens.size()) > r.target ? 1 : 0;
    tokens.resize(std::min<size_t>(tokens.size(), static_cast<size_t>(r.target)));

    // T5's _get_token_mask: always [MASK], with no draw.
    const int64_t mask_id = config_.mask_id;
    const MaskedLmPredictions masked = create_masked_lm_predictions(
        tokens, r.target, rng, masking_options(),
        [mask_id](NumpyRandomState&) { return std::optional<int64_t>(mask_id); });
    MT_CHECK(masked.spans.size() <= config_.sentinel_ids.size(), class_name(), ": sample ", i,
             " masks ", masked.spans.size(), " spans but the tokenizer has ",
             config_.sentinel_ids.size(), " sentinels (--vocab-extra-ids)");

    std::vector<int64_t> decoder_output;
    out.text_dec.push_back(config_.bos_id);
    size_t begin = 0;
    for (size_t k = 0; k < masked.spans.size(); ++k) {
        const MaskedSpan& span = masked.spans[k];
        const int64_t sentinel = config_.sentinel_ids[k];
        out.text_enc.insert(out.text_enc.end(), masked.tokens.begin() + static_cast<long>(begin),
                            masked.tokens.begin() + span.positions.front());
        out.text_enc.push_back(sentinel);
        out.text_dec.push_back(sentinel);
        out.text_dec.insert(out.text_dec.end(), span.labels.begin(), span.labels.end());
        decoder_output.push_back(sentinel);
        decoder_output.insert(decoder_output.end(), span.labels.begin(), span.labels.end());
        begin = static_cast<size_t>(span.positions.back()) + 1;
    }
    out.text_enc.insert(out.text_enc.end(), masked.tokens.begin() + static_cast<long>(begin),
                        masked.tokens.end());
    decoder_output.push_back(config_.eos_id);

    const auto enc_tokens = static_cast<int64_t>(out.text_enc.size());
    const auto dec_tokens = static_cast<int64_t>(out.text_dec.size());
    const int64_t Le = config_.sequence_length, Ld = config_.sequence_length_decoder;
    MT_CHECK(enc_tokens <= Le && dec_tokens <= Ld, class_name(), ": sample ", i, " has ",
             enc_tokens, " encoder and ", dec_tokens, " decoder tokens, more than the lengths ", Le,
             " and ", Ld, " (--encoder-seq-length, --decoder-seq-length)");
    out.text_enc.resize(static_cast<size_t>(Le), config_.pad_id);
    out.text_dec.resize(static_cast<size_t>(Ld), config_.pad_id);
    out.labels = std::move(decoder_output);
    out.labels.resize(static_cast<size_t>(Ld), -1);
    out.enc_mask.assign(static_cast<size_t>(enc_tokens), 1);
    out.enc_mask.resize(static_cast<size_t>(Le), 0);
    out.dec_mask.assign(static_cast<size_t>(dec_tokens), 1);
    out.dec_mask.resize(static_cast<size_t>(Ld), 0);
    out.loss_mask = out.dec_mask;
    return out;
}

Batch T5MaskedWordPieceDataset::batch(std::span<const int64_t> indices) const {
    const auto B = static_cast<int64_t>(indices.size());
    const int64_t Le = config_.sequence_length, Ld = config_.sequence_length_decoder;
    const char* kEncoder[] = {"text_enc", "enc_mask"};
    const char* kDecoder[] = {"text_dec", "labels", "loss_mask", "dec_mask"};
    Batch out;
    for (const char* name : kEncoder) out[name] = Tensor::empty({B, Le}, DType::i64);
    for (const char* name : kDecoder) out[name] = Tensor::empty({B, Ld}, DType::i64);
    out["truncated"] = Tensor::empty({B}, DType::i64);
    for (int64_t k = 0; k < B; ++k) {
        const T5Sample s = get(indices[static_cast<size_t>(k)]);
        std::copy(s.text_enc.begin(), s.text_enc.end(), out["text_enc"].data<int64_t>() + k * Le);
        std::copy(s.enc_mask.begin(), s.enc_mask.end(), out["enc_mask"].data<int64_t>() + k * Le);
        const std::vector<int64_t>* rows[] = {&s.text_dec, &s.labels, &s.loss_mask, &s.dec_mask};
        for (int j = 0; j < 4; ++j)
            std::copy(rows[j]->begin(), rows[j]->end(), out[kDecoder[j]].data<int64_t>() + k * Ld);
        out["truncated"].data<int64_t>()[k] = s.truncated;
    }
    return out;
}

}  // namespace mt::data
