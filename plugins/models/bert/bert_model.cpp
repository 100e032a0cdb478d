// BertModel: wires the nn modules as Megatron-core's BertModel does (and, for the finetuning
// heads, as its legacy Classification / MultipleChoice models do).
#include "bert_model.h"

#include <algorithm>
#include <string_view>

#include "mt/error.h"
#include "mt/model_stage.h"
#include "mt/nn/attention_mask.h"
#include "mt/nn/initialization.h"
#include "mt/parallel/parallel_state.h"

namespace mt::plugins::bert {

namespace {

nn::TensorParallel tensor_parallel(const BuildContext& context) {
    return nn::TensorParallel{&context.parallel.tp(), context.sequence_parallel};
}

// An integer batch tensor as contiguous host i64, shaped `shape`.
Tensor host_i64(const Tensor& t, std::string_view key, const Shape& shape) {
    MT_CHECK(t.dtype() == DType::i64 && t.device().type == DeviceType::cpu, "BertModel: \"", key,
             "\" must be an i64 host tensor, got ", t.describe());
    MT_CHECK(t.numel() == shape_numel(shape), "BertModel: \"", key, "\" ", t.describe(),
             " does not hold ", shape_str(shape));
    return t.contiguous().view(shape);
}

// Labels with Megatron's -1 ("not scored") as 0: Megatron's cross-entropy gives such rows a
// finite loss that their mask of 0 (scored_mask) removes.
Tensor scored_targets(const Tensor& labels) {
    Tensor targets = Tensor::empty(labels.shape(), DType::i64);
    for (int64_t i = 0; i < labels.numel(); ++i)
        targets.data<int64_t>()[i] = std::max<int64_t>(labels.data<int64_t>()[i], 0);
    return targets;
}

// f(value) of each i64 value, as f32.
template <class F>
Tensor f32_of(const Tensor& values, F f) {
    Tensor out = Tensor::empty(values.shape(), DType::f32);
    for (int64_t i = 0; i < values.numel(); ++i)
        out.data<float>()[i] = f(values.data<int64_t>()[i]);
    return out;
}

Tensor scored_mask(const Tensor& labels) {
    return f32_of(labels, [](int64_t label) { return label < 0 ? 0.0f : 1.0f; });
}

}  // namespace

BertModel::BertModel(const BertConfig& config, const BuildContext& context, DType dtype)
    : config_(config),
      dtype_(dtype),
      backend_(&context.backend),
      tp_(tensor_parallel(context)),
      layer_(nn::transformer_layer_config(config.transformer, dtype, tp_)),
      embedding_group_(context.parallel.embedding()),
      stage_(model_stage(config.transformer.num_layers, context)),
      encoder_("encoder", stage_.layers.count, layer_, nn::dense_layer_specs(),
               config.transformer.recompute, *backend_,
               {stage_.layers.first, stage_.last, "final_layernorm"}) {
    MT_CHECK(
        dtype == DType::f32 || dtype == DType::f64 || dtype == DType::bf16 || dtype == DType::f16,
        "BertModel: dtype ", dtype_name(dtype), " is not supported");
    const nn::TransformerArgs& t = config.transformer;
    MT_CHECK(!t.mup.enabled, "not supported yet: --use-mup with BERT (muP is GPT's here)");
    const bool pipelined = context.parallel.pp().size() > 1;
    const bool tied = !t.untie_embeddings_and_output_weights;
    MT_CHECK(!pipelined || config.task_head == TaskHead::none,
             "not supported yet: --pipeline-model-parallel-size for BERT finetuning (its task "
             "heads)");
    MT_CHECK(context.parallel.cp().size() == 1,
             "not supported yet: --context-parallel-size with BERT (its attention is "
             "bidirectional over padding; the ring attention is causal)");
    MT_CHECK(!tp_.sequence_split() || t.seq_length % tp_.size() == 0,
             "--sequence-parallel: --seq-length (", t.seq_length,
             ") must be a multiple of --tensor-model-parallel-size (", tp_.size(), ")");
    if (stage_.first)
        embedding_.emplace(t.padded_vocab_size, t.hidden_size,
                           t.position_embedding == nn::PositionEmbedding::learned_absolute
                               ? t.max_position_embeddings
                               : 0,
                           float(t.hidden_dropout), dtype, *backend_, tp_, config.num_tokentypes);
    if (stage_.last) {
        switch (config.task_head) {
            case TaskHead::none:
                // Tied on a last stage without the embedding: its own copy of the word
                // embeddings (Megatron's shared_embedding_or_output_weight there).
                lm_head_.emplace(layer_, *backend_);
                output_.emplace(
                    t.padded_vocab_size, t.hidden_size,
                    tied && embedding_ ? &embedding_->word() : nullptr,
                    nn::OutputLoss::default_rows(t.padded_vocab_size / tp_.size()), dtype,
                    *backend_, tp_, true);
                output_->weight().embedding_or_output = true;
                if (config.binary_head) {
                    head_.emplace("binary_head", 2, 0.0f, layer_, *backend_);
                    pooler_.emplace(layer_, *backend_);
                }
                break;
            case TaskHead::classification:
                pooler_.emplace(layer_, *backend_);
                head_.emplace("classification_head", config.num_classes, float(t.hidden_dropout),
                              layer_, *backend_);
                break;
            case TaskHead::multichoice:
                pooler_.emplace(layer_, *backend_);
                head_.emplace("multichoice_head", 1, float(t.hidden_dropout), layer_, *backend_);
                break;
        }
    }
    if (embedding_) embedding_->word().embedding_or_output = true;
    if (tied && pipelined)
        tie_across_stages(embedding_ ? &embedding_->word() : nullptr,
                          output_ ? &output_->weight() : nullptr);
}

std::vector<nn::Parameter*> BertModel::parameters() {
    std::vector<nn::Parameter*> out;
    if (embedding_) embedding_->collect_parameters(out);
    encoder_.collect_parameters(out);
    if (lm_head_) {
        lm_head_->collect_parameters(out);
        output_->collect_parameters(out);
        if (head_) head_->collect_parameters(out);
        if (pooler_) pooler_->collect_parameters(out);
    } else if (pooler_) {
        pooler_->collect_parameters(out);
        head_->collect_parameters(out);
    }
    return out;
}

void BertModel::initialize(uint64_t seed) {
    const nn::TransformerArgs& t = config_.transformer;
    nn::initialize_megatron(*backend_, parameters(),
                            {seed, t.init_method_std, t.num_layers, t.apply_layernorm_1p});
    sync_tied_embeddings(parameters(), embedding_group_, *backend_);
}

StageTensor BertModel::stage_tensor(int64_t micro_batch_size, int64_t seq_length) const {
    // (B, T, H), the sequence split over the tensor-parallel ranks with sequence parallelism.
    const nn::TransformerArgs& t = config_.transformer;
    const int64_t T = seq_length > 0 ? seq_length : t.seq_length;
    return {{micro_batch_size, T / tp_.sequence_shards(), t.hidden_size}, dtype_};
}

Tensor BertModel::encode(const Batch& batch, nn::DropoutContext& dropout,
                         BertActivations* acts) const {
    const Tensor& text = batch_entry(batch, "text", "BertModel");
    MT_CHECK(text.dim() == 2 || (text.dim() == 3 && config_.task_head == TaskHead::multichoice),
             "BertModel: text must be [B, T]",
             config_.task_head == TaskHead::multichoice ? " or [B, choices, T]" : "", ", got ",
             text.describe());
    const int64_t T = text.size(-1), rows = text.numel() / T;
    const Shape shape{rows, T};
    nn::AttentionMask mask;  // bidirectional over each row's tokens (Megatron's padding mask)
    mask.causal = false;
    mask.key_length = nn::key_lengths_from_padding_mask(
        host_i64(batch_entry(batch, "padding_mask", "BertModel"), "padding_mask", shape));
    Tensor h;
    if (embedding_) {
        // pretrain_bert.py passes no token types without the binary head.
        Tensor types;
        if (config_.num_tokentypes > 0)
            types = host_i64(batch_entry(batch, "types", "BertModel"), "types", shape);
        h = embedding_->forward(host_i64(text, "text", shape), dropout,
                                acts ? &acts->embedding : nullptr, Tensor(), types);
    } else {
        h = batch_entry(batch, kStageInput, "BertModel (a pipeline stage after the first)");
        MT_CHECK(h.shape() == stage_tensor(rows, 0).shape,
                 "BertModel: the previous stage's hidden "
                 "states ",
                 h.describe(), " are not ", shape_str(stage_tensor(rows, 0).shape));
    }
    return encoder_.forward(h, dropout, acts ? &acts->encoder : nullptr, mask);
}

Losses BertModel::forward(const Batch& batch, nn::DropoutContext& dropout,
                          std::unique_ptr<Activations>* saved) {
    auto acts = std::make_unique<BertActivations>();
    const Tensor h = encode(batch, dropout, saved ? acts.get() : nullptr);
    if (!stage_.last) {
        MT_CHECK(saved != nullptr,
                 "BertModel: a pipeline stage before the last needs saved activations to leave "
                 "its output in");
        acts->stage_output = h;
        *saved = std::move(acts);
        return {};
    }
    Losses losses = heads_forward(h, batch, dropout, *acts, saved != nullptr);
    if (saved) *saved = std::move(acts);
    return losses;
}

Losses BertModel::heads_forward(const Tensor& h, const Batch& batch, nn::DropoutContext& dropout,
                                BertActivations& acts, bool keep_acts) const {
    BertActivations* keep = keep_acts ? &acts : nullptr;
    const Tensor& text = batch_entry(batch, "text", "BertModel");
    const int64_t T = text.size(-1), rows = text.numel() / T;  // h: a shard of T with SP
    acts.choices = text.dim() == 3 ? text.size(1) : 0;
    const auto reporting = LossTerm::Reporting::micro_batch_mean;
    Losses losses;
    if (config_.task_head != TaskHead::none) {
        const int64_t B = acts.choices > 0 ? rows / acts.choices : rows;
        Tensor logits =
            head_->logits(pooler_->forward(h, keep ? &acts.pooler : nullptr), dropout, &acts.head);
        if (acts.choices > 0) logits = logits.view({B, acts.choices});
        const Tensor labels = host_i64(batch_entry(batch, "label", "BertModel"), "label", {B});
        losses.push_back({"lm loss", head_->losses(logits, scored_targets(labels), acts.head),
                          backend_->contiguous(scored_mask(labels)), reporting});
        return losses;
    }
    // pretrain_bert.py's loss_func: the masked tokens' mean, then the sentence order's.
    const Tensor x = lm_head_->forward(h, keep ? &acts.lm_head : nullptr);
    const Tensor targets =
        scored_targets(host_i64(batch_entry(batch, "labels", "BertModel"), "labels", {rows, T}));
    const Tensor loss_mask =
        f32_of(host_i64(batch_entry(batch, "loss_mask", "BertModel"), "loss_mask", {rows, T}),
               [](int64_t m) { return float(m); });
    losses.push_back({"lm loss", output_->forward(x, targets, keep ? &acts.output : nullptr),
                      backend_->contiguous(loss_mask), reporting});
    if (head_) {
        const Tensor logits =
            head_->logits(pooler_->forward(h, keep ? &acts.pooler : nullptr), dropout, &acts.head);
        const Tensor order =
            host_i64(batch_entry(batch, "is_random", "BertModel"), "is_random", {rows});
        losses.push_back({"sop loss", head_->losses(logits, scored_targets(order), acts.head),
                          backend_->contiguous(scored_mask(order)), reporting});
    }
    return losses;
}

Tensor BertModel::heads_backward(const std::vector<Tensor>& dterms, const BertActivations& acts) {
    const size_t terms = config_.task_head == TaskHead::none ? 1 + size_t(head_.has_value()) : 1;
    MT_CHECK(dterms.size() == terms, "BertModel: backward takes ", terms, " loss gradients, got ",
             dterms.size());
    if (config_.task_head != TaskHead::none) {
        const Tensor dh = pooler_->backward(head_->backward(dterms[0], acts.head), acts.pooler);
        nn::report_grads_ready(*head_, grad_ready_);
        nn::report_grads_ready(*pooler_, grad_ready_);
        return dh;
    }
    Tensor dh = lm_head_->backward(output_->backward(dterms[0], acts.output), acts.lm_head);
    // Its bias (a tied weight is final after the embedding).
    nn::report_grads_ready(*output_, grad_ready_);
    nn::report_grads_ready(*lm_head_, grad_ready_);
    if (head_) {
        const Tensor dpooled =
            pooler_->backward(head_->backward(dterms[1], acts.head), acts.pooler);
        backend_->add(dh, dpooled, dh);
        nn::report_grads_ready(*head_, grad_ready_);
        nn::report_grads_ready(*pooler_, grad_ready_);
    }
    return dh;
}

void BertModel::backward(const std::vector<Tensor>& dterms, const Activations& saved) {
    const auto* acts = dynamic_cast<const BertActivations*>(&saved);
    MT_CHECK(acts != nullptr, "BertModel: backward needs the activations of this model's forward");
    Tensor dh;
    if (stage_.last) {
        dh = heads_backward(dterms, *acts);
    } else {
        MT_CHECK(dterms.empty() && acts->stage_output_grad.defined(),
                 "BertModel: a pipeline stage before the last takes the next stage's gradient "
                 "(stage_output_grad), not loss gradients");
        dh = acts->stage_output_grad;
    }
    dh = encoder_.backward(dh, acts->encoder, grad_ready_);
    if (!embedding_) {
        acts->stage_input_grad = dh;
        return;
    }
    embedding_->backward(dh, acts->embedding);
    nn::report_grads_ready(*embedding_, grad_ready_);
}

Tensor BertModel::predict(const Batch& batch) {
    MT_CHECK(config_.task_head != TaskHead::none,
             "BertModel: predictions need a task head (a pretraining model has none)");
    nn::DropoutContext no_dropout{false, 0, 0};
    const Tensor& text = batch_entry(batch, "text", "BertModel");
    const Tensor h = encode(batch, no_dropout, nullptr);
    const Tensor logits = head_->logits(pooler_->forward(h, nullptr), no_dropout, nullptr);
    return text.dim() == 3 ? logits.view({text.size(0), text.size(1)}) : logits;
}

double BertModel::training_flops(int64_t samples) const {
    const nn::TransformerArgs& t = config_.transformer;
    return nn::megatron_training_flops(layer_, t.num_layers, t.seq_length, t.padded_vocab_size,
                                       samples);
}

}  // namespace mt::plugins::bert
