// GptModel: wires the nn modules as Megatron-core's GPTModel does, lists their parameters in
// Megatron's state-dict order, and initialises them from Philox normals.
#include "gpt_model.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "mt/error.h"
#include "mt/model_stage.h"
#include "mt/nn/attention_window.h"
#include "mt/nn/fp8.h"
#include "mt/nn/inference_state.h"
#include "mt/nn/initialization.h"
#include "mt/nn/mamba_mixer.h"
#include "mt/nn/moe/layer.h"
#include "mt/parallel/parallel_state.h"
#include "mt/parallel/pipeline_layers.h"

namespace mt::plugins::gpt {

namespace {

const nn::TransformerArgs& checked(const nn::TransformerArgs& c, DType dtype) {
    MT_CHECK(
        dtype == DType::f32 || dtype == DType::f64 || dtype == DType::bf16 || dtype == DType::f16,
        "GptModel: dtype ", dtype_name(dtype),
        " is not supported (f32, bf16, f16, or f64 for the checks)");
    return c;
}

// The model's tensor-parallel group (its --tensor-model-parallel-size only pads the vocabulary:
// a checkpoint saved at TP2 is built whole in one process).
nn::TensorParallel tensor_parallel(const BuildContext& context) {
    return nn::TensorParallel{&context.parallel.tp(), context.sequence_parallel};
}

// The model's context-parallel group: training splits each sequence over it.
nn::ContextParallel context_parallel(const BuildContext& context) {
    return nn::ContextParallel{&context.parallel.cp()};
}

// A layer's settings on this rank: transformer_layer_config with the expert groups.
nn::TransformerConfig layer_config(const nn::TransformerArgs& config,
                                   const std::optional<HybridArgs>& hybrid,
                                   const BuildContext& context, DType dtype,
                                   const nn::TensorParallel& tp, const nn::ContextParallel& cp) {
    nn::TransformerConfig t = nn::transformer_layer_config(config, dtype, tp, cp);
    if (hybrid) t.mamba = hybrid->mamba;
    const parallel::ParallelState& ps = context.parallel;
    t.moe.experts = {&ps.ep(), &ps.expert_tp(), &ps.expert_tp_ep()};
    t.moe.tp_cp = &ps.tp_cp();
    return t;
}

// Whether the decoder's last layer is a MoE layer: Megatron's multi-token prediction layers take
// its spec (and its FLOPs count them as MoE layers then).
bool last_layer_is_moe(const nn::TransformerArgs& config) {
    const std::vector<bool>& pattern = config.moe_layers.moe;
    return config.moe.enabled() && !pattern.empty() && pattern.back();
}

// The tracker of a MoE model's auxiliary losses, or null.
std::shared_ptr<nn::MoeTracker> moe_tracker_for(const nn::TransformerArgs& config,
                                                const std::optional<HybridArgs>& hybrid) {
    // A hybrid model's MoE layers are its pattern's 'E' layers; multi-token prediction's layers
    // are MoE layers when the decoder's last layer is (Megatron's track_moe_metrics counts them).
    const int64_t moe_layers = hybrid ? hybrid->count('E')
                                      : config.moe_layers.count() +
                                            (last_layer_is_moe(config) ? config.mtp_num_layers : 0);
    if (!config.moe.enabled() || moe_layers == 0) return nullptr;
    return std::make_shared<nn::MoeTracker>(config.moe.router, moe_layers,
                                            config.num_layers + config.mtp_num_layers);
}

// A hybrid model's layers as allocated; dense layers; or the MoE pattern's; with
// --window-size, each attention's window.
nn::LayerSpecs layer_specs(const nn::TransformerArgs& config,
                           const std::optional<HybridArgs>& hybrid,
                           std::shared_ptr<nn::MoeTracker> tracker,
                           std::shared_ptr<nn::Fp8Scaling> fp8_scaling) {
    if (hybrid) {
        MT_CHECK(hybrid->count('E') == 0 || config.moe.enabled(), "the hybrid layer pattern ",
                 hybrid->layers, " has MoE layers ('E'), which need --num-experts");
        MT_CHECK(!config.mla.enabled,
                 "not supported yet: --multi-latent-attention in a hybrid model (Megatron's "
                 "hybrid layer specs build standard self-attention whatever the flag says)");
        MT_CHECK(config.mtp_num_layers == 0,
                 "not supported yet: --mtp-num-layers in a hybrid model");
        MT_CHECK(!config.windows.enabled(), "not supported yet: --window-size in a hybrid model");
        MT_CHECK(!config.fp8.config.enabled,
                 "--fp8-format: not supported yet: FP8 in hybrid models");
        return [layers = hybrid->layers, tracker](int64_t i) {
            MT_CHECK(i >= 0 && i < int64_t(layers.size()), "layer ", i,
                     " is outside the hybrid layer pattern of ", layers.size(), " layers");
            switch (layers[size_t(i)]) {
                case 'M':
                    return nn::LayerSpec{{nn::mamba_sublayer()}};
                case '*':
                    return nn::LayerSpec{{nn::self_attention_sublayer()}};
                case 'E':
                    return nn::LayerSpec{{nn::moe_sublayer(tracker, i)}};
                default:
                    return nn::LayerSpec{{nn::dense_mlp_sublayer()}};
            }
        };
    }
    nn::Fp8Args fp8 = config.fp8;
    fp8.config.scaling = std::move(fp8_scaling);
    return nn::with_fp8_layers(
        nn::with_attention_windows(
            config.moe.enabled()
                ? nn::moe_layer_specs(config.moe_layers, std::move(tracker), config.mla.enabled)
                : nn::dense_layer_specs(config.mla.enabled),
            config.windows),
        fp8, config.num_layers);
}

// Integer tensor -> its values as int64 (i64 or i32, any contiguity).
std::vector<int64_t> integers(const Tensor& t, std::string_view key) {
    Tensor c = t.contiguous();
    std::vector<int64_t> out(size_t(c.numel()));
    if (c.dtype() == DType::i64)
        std::copy_n(c.data<int64_t>(), out.size(), out.begin());
    else if (c.dtype() == DType::i32)
        std::copy_n(c.data<int32_t>(), out.size(), out.begin());
    else
        MT_FAIL("GptModel: batch \"", key, "\" must be i64 or i32, got ", t.describe());
    return out;
}

// The batch's position ids when they differ from 0..T-1 on some row (--reset-position-ids),
// else an undefined tensor (the embedding's default). The embedding moves them to its backend.
Tensor custom_positions(const Tensor& ids, int64_t B, int64_t T) {
    MT_CHECK(ids.shape() == Shape({B, T}), "GptModel: position_ids must be [", B, ", ", T,
             "], got ", ids.describe());
    std::vector<int64_t> v = integers(ids, "position_ids");
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t)
            if (v[size_t(b * T + t)] != t) return host_tensor(std::move(v), {B, T});
    return Tensor();
}

// The batch's document starts as i32 when some query's document starts after position 0
// (--reset-attention-mask), else an undefined tensor (plain causal attention). Host memory:
// the attention moves it to its backend.
Tensor custom_document_start(const Tensor& starts, int64_t B, int64_t T) {
    MT_CHECK(starts.shape() == Shape({B, T}), "GptModel: document_start must be [", B, ", ", T,
             "], got ", starts.describe());
    std::vector<int64_t> v = integers(starts, "document_start");
    if (std::all_of(v.begin(), v.end(), [](int64_t s) { return s == 0; })) return Tensor();
    std::vector<int32_t> out(size_t(B * T));
    for (int64_t i = 0; i < B * T; ++i) {
        MT_CHECK(v[size_t(i)] >= 0 && v[size_t(i)] <= i % T, "GptModel: document_start[", i / T,
                 ", ", i % T, "] = ", v[size_t(i)], " is not a position at or before it");
        out[size_t(i)] = int32_t(v[size_t(i)]);
    }
    return host_tensor(std::move(out), {B, T});
}

}  // namespace

GptModel::GptModel(const nn::TransformerArgs& config, const BuildContext& context, DType dtype,
                   std::optional<HybridArgs> hybrid)
    : config_(checked(config, dtype)),
      hybrid_(std::move(hybrid)),
      dtype_(dtype),
      backend_(&context.backend),
      tp_(tensor_parallel(context)),
      cp_(context_parallel(context)),
      pp_(&context.parallel.pp()),
      embedding_group_(context.parallel.embedding()),
      stage_(model_stage(config.num_layers, context)),
      moe_tracker_(moe_tracker_for(config, hybrid_)),
      // Transformer Engine reduces the amaxes over fp8_utils' amax reduction group: the tensor-,
      // data- and context-parallel ranks (of this pipeline stage), a max over each in turn here.
      fp8_scaling_(
          config.fp8.config.enabled
              ? std::make_shared<nn::Fp8Scaling>(
                    config.fp8.delayed_recipe,
                    std::vector<Communicator*>{&context.parallel.tp(), &context.parallel.dp_cp()})
              : nullptr),
      decoder_(
          "decoder", stage_.layers.count, layer_config(config, hybrid_, context, dtype, tp_, cp_),
          layer_specs(config, hybrid_, moe_tracker_, fp8_scaling_), config.recompute, *backend_,
          {stage_.layers.first, stage_.last, hybrid_ ? "final_norm" : "final_layernorm"}) {
    MT_CHECK(config.seq_length % (2 * cp_.size()) == 0 || !cp_.active(), "--context-parallel-size ",
             cp_.size(), ": --seq-length (", config.seq_length,
             ") must be a multiple of 2 x the context-parallel size");
    MT_CHECK(!tp_.sequence_split() || config.seq_length / cp_.size() % tp_.size() == 0,
             "--sequence-parallel: --seq-length (", config.seq_length, ") over ", cp_.size(),
             " context-parallel ranks must be a multiple of --tensor-model-parallel-size (",
             tp_.size(), ")");
    // Transformer Engine's amax buffers are global: an update at one chunk's autocast exit
    // reaches the amaxes another chunk's evaluation left; each chunk keeps its own meters here.
    MT_CHECK(!delayed_fp8() || context.parallel.config().virtual_stages <= 1,
             "--fp8-recipe delayed: not supported yet: FP8's delayed scaling with virtual "
             "pipeline stages");
    const bool tied = !config.untie_embeddings_and_output_weights;
    const bool mtp = stage_.last && config.mtp_num_layers > 0;
    MT_CHECK(config.mtp_num_layers == 0 || !cp_.active(),
             "--mtp-num-layers with --context-parallel-size ", cp_.size(),
             ": Megatron's multi-token prediction does not support context parallelism");
    // Multi-token prediction embeds the tokens ahead on the last stage (Megatron's GPTModel
    // builds its embedding on the first stage and the MTP stage).
    if (stage_.first || mtp)
        embedding_.emplace(config.padded_vocab_size, config.hidden_size,
                           config.position_embedding == nn::PositionEmbedding::learned_absolute
                               ? config.max_position_embeddings
                               : 0,
                           float(config.hidden_dropout), dtype, *backend_, tp_, 0,
                           (config.scale_embeddings ? std::sqrt(double(config.hidden_size)) : 1.0) *
                               config.mup.embedding_mult);
    if (stage_.last)
        // Tied on a last stage without the embedding: its own copy of the word embeddings
        // (Megatron's shared_embedding_or_output_weight on the last stage).
        output_.emplace(config.padded_vocab_size, config.hidden_size,
                        tied && embedding_ ? &embedding_->word() : nullptr,
                        nn::OutputLoss::default_rows(config.padded_vocab_size / tp_.size()),
                        dtype, *backend_, tp_);
    if (output_) output_->set_logit_scale(config.mup.output_mult);
    if (mtp)
        mtp_.emplace(config.mtp_num_layers, config.mtp_loss_scaling_factor,
                     layer_config(config, hybrid_, context, dtype, tp_, cp_),
                     layer_specs(config, hybrid_, moe_tracker_, nullptr)(config.num_layers - 1),
                     *backend_);
    // Megatron's setup_embeddings_and_output_layer: what --decoupled-lr applies to; muP's
    // embedding class is every embedding parameter and the output layer.
    if (embedding_) embedding_->word().embedding_or_output = true;
    if (output_) output_->weight().embedding_or_output = true;
    if (embedding_) {
        std::vector<nn::Parameter*> embedding_params;
        embedding_->collect_parameters(embedding_params);
        for (nn::Parameter* p : embedding_params) p->mup_hidden = false;
    }
    if (output_) output_->weight().mup_hidden = false;
    // The word embeddings shared by the first stage and the last one's output layer (tied) or
    // multi-token prediction.
    if ((tied || config.mtp_num_layers > 0) && pp_->size() > 1) {
        if (stage_.first)
            tie_across_stages(&embedding_->word(), nullptr);
        else if (embedding_)
            tie_across_stages(nullptr, &embedding_->word());
        else if (output_)
            tie_across_stages(nullptr, &output_->weight());
    }
}

std::vector<nn::Parameter*> GptModel::parameters() {
    std::vector<nn::Parameter*> out;
    if (embedding_) embedding_->collect_parameters(out);
    decoder_.collect_parameters(out);
    if (mtp_) mtp_->collect_parameters(out);
    if (output_) output_->collect_parameters(out);
    return out;
}

std::vector<nn::Parameter*> GptModel::buffers() {
    std::vector<nn::Parameter*> out;
    decoder_.collect_buffers(out);
    if (mtp_) mtp_->collect_buffers(out);
    return out;
}

void GptModel::initialize(uint64_t seed) {
    nn::initialize_megatron(*backend_, parameters(),
                            {seed, config_.init_method_std, config_.num_layers,
                             config_.apply_layernorm_1p, config_.mup.width_mult});
    sync_tied_embeddings(parameters(), embedding_group_, *backend_);
}

StageTensor GptModel::stage_tensor(int64_t micro_batch_size, int64_t seq_length) const {
    // (B, T, H), the sequence split over the context-parallel ranks and, with sequence
    // parallelism, over the tensor-parallel ones.
    const int64_t T =
        (seq_length > 0 ? seq_length : config_.seq_length) / cp_.size() / tp_.sequence_shards();
    return {{micro_batch_size, T, config_.hidden_size}, dtype_};
}

Losses GptModel::forward(const Batch& given, nn::DropoutContext& dropout,
                         std::unique_ptr<Activations>* saved) {
    // Context parallelism: this rank's two chunks of the per-token fields (a previous pipeline
    // stage's hidden states are this rank's chunks already).
    Batch batch = given;
    for (const char* key : {"tokens", "labels", "loss_mask", "position_ids"})
        if (auto it = batch.find(key); it != batch.end())
            it->second = nn::context_parallel_slice(cp_, it->second);
    const Tensor& tokens = batch_entry(batch, "tokens", "GptModel");
    const Tensor& labels = batch_entry(batch, "labels", "GptModel");
    MT_CHECK(tokens.dim() == 2, "GptModel: tokens must be [B, T], got ", tokens.describe());
    MT_CHECK(labels.shape() == tokens.shape(), "GptModel: labels ", labels.describe(),
             " must match tokens ", tokens.describe());
    const int64_t B = tokens.size(0), T = tokens.size(1);
    // Rotary embeddings ignore position_ids, as Megatron core_v0.13 does.
    Tensor positions;
    nn::AttentionMask mask;  // causal, per document with --reset-attention-mask
    if (config_.position_embedding == nn::PositionEmbedding::learned_absolute) {
        if (auto it = batch.find("position_ids"); it != batch.end())
            positions = custom_positions(it->second, B, T);
        else if (cp_.active())
            positions = nn::context_parallel_positions(cp_, B, T);
    }
    if (auto it = given.find("document_start"); it != given.end()) {
        const Tensor& whole = it->second;
        mask.document_start = custom_document_start(whole, B, whole.size(-1));
        MT_CHECK(!cp_.active() || !mask.document_start.defined(),
                 "not supported yet: --reset-attention-mask with --context-parallel-size");
    }

    std::unique_ptr<GptActivations> acts;
    if (saved) acts = std::make_unique<GptActivations>();
    Tensor h;
    if (stage_.first) {
        h = embedding_->forward(tokens, dropout, acts ? &acts->embedding : nullptr, positions);
    } else {
        h = batch_entry(batch, kStageInput, "GptModel (a pipeline stage after the first)");
        // (Every stage reads the micro-batch's tokens: their whole length.)
        const StageTensor expected = stage_tensor(B, given.at("tokens").size(1));
        MT_CHECK(h.shape() == expected.shape, "GptModel: the previous stage's hidden states ",
                 h.describe(), " are not ", shape_str(expected.shape));
    }
    h = decoder_.forward(h, dropout, acts ? &acts->decoder : nullptr, mask);
    // The end of Megatron's fp8_autocast around the layers: a training pass updates the scales.
    if (delayed_fp8() && dropout.training)
        fp8_scaling_->update(true, config_.fp8.config.grad_type());
    if (!output_) {
        MT_CHECK(acts != nullptr,
                 "GptModel: a pipeline stage before the last needs saved "
                 "activations to leave its output in");
        acts->stage_output = h;
        *saved = std::move(acts);
        return {};
    }
    // pretrain_gpt.py's loss_func: the masked tokens' sum over their count, token-weighted.
    Tensor loss_mask;
    if (auto it = batch.find("loss_mask"); it != batch.end()) {
        MT_CHECK(it->second.shape() == labels.shape() && it->second.dtype() == DType::f32,
                 "GptModel: loss_mask must be f32 ", shape_str(labels.shape()), ", got ",
                 it->second.describe());
        loss_mask = backend_->contiguous(it->second);
    } else {
        loss_mask = backend_->empty(labels.shape(), DType::f32);
        backend_->fill(loss_mask, 1.0);
    }
    // Multi-token prediction first, as Megatron's _postprocess runs it.
    Losses mtp_terms;
    if (mtp_)
        mtp_terms = mtp_->forward(h, tokens, labels, loss_mask, *embedding_, *output_, dropout,
                                  acts ? &acts->mtp : nullptr, mask);
    Tensor losses = output_->forward(h, labels, acts ? &acts->output : nullptr);
    if (saved) *saved = std::move(acts);
    Losses out = {{"lm loss", losses, loss_mask, LossTerm::Reporting::token_weighted}};
    for (LossTerm& term : mtp_terms) out.push_back(std::move(term));
    return out;
}

void GptModel::backward(const std::vector<Tensor>& dterms, const Activations& saved) {
    const auto* acts = dynamic_cast<const GptActivations*>(&saved);
    MT_CHECK(acts != nullptr, "GptModel: backward needs the activations of this model's forward");
    Tensor dh;
    if (output_) {
        const size_t terms = 1 + size_t(mtp_ ? mtp_->depths() : 0);
        MT_CHECK(dterms.size() == terms, "GptModel: backward takes the gradients of its ", terms,
                 " loss terms, got ", dterms.size());
        for (const Tensor& dlosses : dterms)
            MT_CHECK(dlosses.dtype() == nn::upcast_dtype(dtype_), "GptModel: dlosses must be ",
                     dtype_name(nn::upcast_dtype(dtype_)), ", got ", dlosses.describe());
        dh = output_->backward(dterms[0], acts->output);
        if (mtp_) {
            const Tensor dmtp = mtp_->backward({dterms.begin() + 1, dterms.end()}, acts->mtp,
                                               *embedding_, *output_);
            Tensor sum = backend_->empty(dh.shape(), dh.dtype());
            backend_->add(dh, dmtp, sum);
            dh = sum;
            nn::report_grads_ready(*mtp_, grad_ready_);
        }
        // Its own weight only: a tied one is final after the embedding.
        nn::report_grads_ready(*output_, grad_ready_);
    } else {
        MT_CHECK(dterms.empty() && acts->stage_output_grad.defined(),
                 "GptModel: a pipeline stage before the last takes the next stage's gradient "
                 "(stage_output_grad), not loss gradients");
        dh = acts->stage_output_grad;
    }
    dh = decoder_.backward(dh, acts->decoder, grad_ready_);
    if (delayed_fp8()) fp8_scaling_->update(false, config_.fp8.config.grad_type());
    if (!stage_.first) {
        acts->stage_input_grad = dh;
        if (embedding_) nn::report_grads_ready(*embedding_, grad_ready_);  // multi-token's copy
        return;
    }
    embedding_->backward(dh, acts->embedding);
    nn::report_grads_ready(*embedding_, grad_ready_);
}

Tensor GptModel::logits(const Tensor& tokens, nn::InferenceState* state, int64_t keep_last) {
    MT_CHECK(!cp_.active(), "not supported yet: inference with --context-parallel-size");
    MT_CHECK(tokens.dim() == 2, "GptModel: tokens must be [B, T], got ", tokens.describe());
    const int64_t B = tokens.size(0), T = tokens.size(1);
    MT_CHECK(keep_last >= 0 && keep_last <= T, "GptModel: keep_last ", keep_last, " is not in [0, ",
             T, "]");
    if (!state || T <= kPrefillPiece) return piece_logits(tokens, state, keep_last);
    // The last `kept` rows, gathered from the pieces that hold them; every rank makes the same
    // calls (the pipeline stages pass each piece on).
    const int64_t kept = keep_last > 0 ? keep_last : T;
    Tensor out;
    for (int64_t begin = 0; begin < T; begin += kPrefillPiece) {
        const int64_t end = std::min(T, begin + kPrefillPiece);
        const int64_t from = std::max(begin, T - kept), rows = std::max<int64_t>(end - from, 0);
        const Tensor part = piece_logits(tokens.slice(1, begin, end).contiguous(), state,
                                         std::max<int64_t>(rows, 1));
        if (rows == 0 || !part.defined()) continue;  // a stage that returns no logits
        if (!out.defined()) out = Tensor::empty({B, kept, part.size(2)}, part.dtype());
        out.slice(1, from - (T - kept), end - (T - kept)).copy_from(part);
    }
    return out;
}

Tensor GptModel::piece_logits(const Tensor& tokens, nn::InferenceState* state, int64_t keep_last) {
    const int64_t B = tokens.size(0), T = tokens.size(1);
    const int64_t past = state ? state->length() : 0;
    // (The decoder checks that the state holds its layers.)
    MT_CHECK(!state || state->batch() == B, "GptModel: the inference state holds ", state->batch(),
             " rows, the batch has ", B);
    const Tensor positions =
        past > 0 ? learned_positions(std::vector(size_t(B), past), T) : Tensor();
    Tensor h = decoder_.forward_cached(stage_input(tokens, positions), state);
    if (state) state->advance(T);
    return stage_logits(h, keep_last);
}

Tensor GptModel::learned_positions(std::span<const int64_t> pasts, int64_t T) const {
    if (config_.position_embedding != nn::PositionEmbedding::learned_absolute) return Tensor();
    std::vector<int64_t> at;
    for (int64_t past : pasts)
        for (int64_t t = 0; t < T; ++t) at.push_back(past + t);
    return host_tensor(std::move(at), {int64_t(pasts.size()), T});
}

// Pipeline stages (Megatron's inference forward_step): the first embeds, each passes its hidden
// states on, the last computes the logits and sends them back to the first, whose rank leads
// the generation; the others return nothing.
Tensor GptModel::stage_input(const Tensor& tokens, const Tensor& positions) {
    MT_CHECK(!delayed_fp8(),
             "--fp8-recipe delayed: not supported yet: inference with FP8's delayed scaling (the "
             "scales Transformer Engine keeps in a checkpoint's _extra_state are not read yet)");
    const int64_t B = tokens.size(0), T = tokens.size(1);
    if (stage_.first) {
        nn::DropoutContext no_dropout{false, 0, 0};
        return embedding_->forward(tokens, no_dropout, nullptr, positions);
    }
    Tensor h = Tensor::empty({B, T, config_.hidden_size}, dtype_);
    pp_->recv(h, pp_->rank() - 1);
    return h;
}

Tensor GptModel::stage_logits(Tensor h, int64_t keep_last) {
    const int64_t B = h.size(0), T = h.size(1);
    const bool first = stage_.first;
    const int stage = pp_->rank(), stages = pp_->size();
    const int64_t kept = keep_last > 0 && keep_last < T ? keep_last : T;
    if (!stage_.last) {
        pp_->send(h.contiguous(), stage + 1);
        if (!first) return Tensor();
        Tensor logits =
            Tensor::empty({B, kept, config_.padded_vocab_size}, nn::upcast_dtype(dtype_));
        pp_->recv(logits, stages - 1);
        return logits;
    }
    if (kept < T) h = h.slice(1, T - kept, T);
    // A bf16 / fp16 model's logits, widened for sampling and log-probabilities.
    Tensor logits = backend_->cast_to(output_->logits(h), nn::upcast_dtype(dtype_));
    if (!first) {
        pp_->send(logits.contiguous(), 0);
        return Tensor();
    }
    return logits;
}

bool GptModel::can_decode_rows() const {
    // (A pipeline stage answers for its own layers.)
    return !cp_.active() && decoder_.decodes_rows();
}

Tensor GptModel::decode_rows(const Tensor& tokens, std::span<nn::InferenceState* const> states,
                             int64_t keep_last) {
    MT_CHECK(can_decode_rows(),
             "not supported yet: continuous batching with context parallelism, or of MoE layers "
             "with --moe-expert-capacity-factor");
    MT_CHECK(tokens.dim() == 2 && tokens.size(0) == int64_t(states.size()) && !states.empty() &&
                 tokens.size(1) > 0,
             "GptModel: decode_rows takes tokens for each of ", states.size(), " states, got ",
             tokens.describe());
    const int64_t T = tokens.size(1);
    MT_CHECK(keep_last >= 0 && keep_last <= T, "GptModel: keep_last ", keep_last, " is not in [0, ",
             T, "]");
    std::vector<int64_t> pasts;  // each row from its own position
    for (nn::InferenceState* state : states) pasts.push_back(state->length());
    Tensor h = decoder_.forward_rows(stage_input(tokens, learned_positions(pasts, T)), states);
    for (nn::InferenceState* state : states) state->advance(T);
    return stage_logits(h, keep_last);
}

std::unique_ptr<nn::InferenceState> GptModel::make_inference_state(int64_t batch,
                                                                   int64_t capacity) const {
    // This stage's layers; with tensor parallelism this rank's key/value heads.
    return decoder_.make_inference_state(batch, capacity);
}

double GptModel::training_flops(int64_t samples) const {
    if (hybrid_ && hybrid_->is_hybrid_model)
        return hybrid_training_flops(config_, *hybrid_, samples);
    const nn::FlopsLayers extra{config_.moe.enabled() ? config_.moe_layers.count() : 0,
                                config_.mtp_num_layers, last_layer_is_moe(config_)};
    return nn::megatron_training_flops(nn::transformer_layer_config(config_, dtype_, tp_),
                                       config_.num_layers, config_.seq_length,
                                       config_.padded_vocab_size, samples, extra);
}

}  // namespace mt::plugins::gpt
