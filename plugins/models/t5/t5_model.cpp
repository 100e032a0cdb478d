// T5Model: wires the nn modules as Megatron-core's T5Model does; the encoder's output reaches
// the decoder's cross-attentions through an EncoderContext, and its gradient comes back the same
// way.
#include "t5_model.h"

#include <algorithm>
#include <string_view>

#include "mt/error.h"
#include "mt/nn/attention_mask.h"
#include "mt/nn/initialization.h"
#include "mt/nn/layer_spec.h"
#include "mt/parallel/parallel_state.h"

namespace mt::plugins::t5 {

namespace {

// An integer batch tensor as contiguous host i64 [B, T] (B rows if `rows` > 0).
Tensor host_i64(const Batch& batch, std::string_view key, int64_t rows = 0) {
    const Tensor& t = batch_entry(batch, key, "T5Model");
    MT_CHECK(t.dtype() == DType::i64 && t.device().type == DeviceType::cpu && t.dim() == 2,
             "T5Model: \"", key, "\" must be an i64 host tensor [B, T], got ", t.describe());
    MT_CHECK(rows == 0 || t.size(0) == rows, "T5Model: \"", key, "\" ", t.describe(), " holds ",
             t.size(0), " rows, the batch ", rows);
    return t.contiguous();
}

// A second tensor shaped as the first: the decoder's labels and masks as its input.
void check_same_shape(const Tensor& a, std::string_view a_name, const Tensor& b,
                      std::string_view b_name) {
    MT_CHECK(a.shape() == b.shape(), "T5Model: \"", b_name, "\" ", b.describe(),
             " is not shaped as \"", a_name, "\" ", a.describe());
}

// A stack's relative position bias over its T positions in `mask`, with a zero gradient
// accumulator (kept in *grad) when the pass has a backward.
void set_bias(nn::AttentionMask& mask, const nn::RelativePositionBias& bias, int64_t T,
              Tensor* grad, Backend& backend) {
    mask.bias = bias.forward(0, T, T);
    if (!grad) return;
    *grad = backend.zeros(mask.bias.shape(), mask.bias.dtype());
    mask.bias_grad = *grad;
}

nn::LayerSpecs decoder_specs() {
    return [](int64_t) {
        return nn::LayerSpec{{nn::self_attention_sublayer(), nn::cross_attention_sublayer(),
                              nn::dense_mlp_sublayer()}};
    };
}

}  // namespace

T5Model::T5Model(const T5Config& config, const BuildContext& context, DType dtype)
    : config_(config),
      backend_(&context.backend),
      tp_{&context.parallel.tp(), context.sequence_parallel},
      layer_(nn::transformer_layer_config(config.transformer, dtype, tp_)),
      embedding_(config.transformer.padded_vocab_size, config.transformer.hidden_size,
                 config.transformer.position_embedding == nn::PositionEmbedding::learned_absolute
                     ? config.transformer.max_position_embeddings
                     : 0,
                 float(config.transformer.hidden_dropout), dtype, *backend_, tp_),
      encoder_("encoder", config.encoder_layers, layer_, nn::dense_layer_specs(),
               config.transformer.recompute, *backend_),
      decoder_("decoder", config.decoder_layers, layer_, decoder_specs(),
               config.transformer.recompute, *backend_),
      output_(config.transformer.padded_vocab_size, config.transformer.hidden_size,
              config.transformer.untie_embeddings_and_output_weights ? nullptr : &embedding_.word(),
              nn::OutputLoss::default_rows(config.transformer.padded_vocab_size / tp_.size()),
              dtype, *backend_, tp_, !config.transformer.untie_embeddings_and_output_weights,
              "lm_head.output_layer") {
    MT_CHECK(
        dtype == DType::f32 || dtype == DType::f64 || dtype == DType::bf16 || dtype == DType::f16,
        "T5Model: dtype ", dtype_name(dtype), " is not supported");
    MT_CHECK(!config.transformer.mup.enabled,
             "not supported yet: --use-mup with T5 (muP is GPT's here)");
    // Megatron-core 0.14 removed the encoder's own pipeline stages; pretrain_t5.py asserts them
    // for any --pipeline-model-parallel-size above 1.
    MT_CHECK(context.parallel.pp().size() == 1,
             "not supported: --pipeline-model-parallel-size with T5 (Megatron-core 0.14 removed "
             "encoder-decoder pipeline parallelism, --encoder-pipeline-model-parallel-size)");
    MT_CHECK(context.parallel.cp().size() == 1,
             "not supported yet: --context-parallel-size with T5 (its attention is bidirectional "
             "or over padding; the ring attention is causal)");
    if (config.relative) {
        const int64_t heads = config.transformer.num_attention_heads;
        encoder_bias_.emplace("encoder_relative_pos_emb", true, *config.relative, heads, dtype,
                              *backend_, tp_);
        decoder_bias_.emplace("decoder_relative_pos_emb", false, *config.relative, heads, dtype,
                              *backend_, tp_);
    }
    output_.weight().embedding_or_output = true;
    embedding_.word().embedding_or_output = true;
    // T5Model registers these modules a second time (its own position_embeddings and
    // output_layer attributes): Megatron's state dicts repeat their tensors under those names.
    if (nn::Parameter* position = embedding_.position())
        position->aliases = {"position_embeddings.weight"};
    std::vector<nn::Parameter*> head;
    output_.collect_parameters(head);
    for (nn::Parameter* p : head)
        p->aliases = {p->name.substr(std::string_view("lm_head.").size())};
}

std::vector<nn::Parameter*> T5Model::parameters() {
    std::vector<nn::Parameter*> out;
    embedding_.collect_parameters(out);
    if (encoder_bias_) {
        encoder_bias_->collect_parameters(out);
        decoder_bias_->collect_parameters(out);
    }
    encoder_.collect_parameters(out);
    decoder_.collect_parameters(out);
    output_.collect_parameters(out);
    return out;
}

void T5Model::initialize(uint64_t seed) {
    const nn::TransformerArgs& t = config_.transformer;
    nn::initialize_megatron(*backend_, parameters(),
                            {seed, t.init_method_std, t.num_layers, t.apply_layernorm_1p});
}

Losses T5Model::forward(const Batch& batch, nn::DropoutContext& dropout,
                        std::unique_ptr<Activations>* saved) {
    auto acts = std::make_unique<T5Activations>();
    T5Activations* keep = saved ? acts.get() : nullptr;
    const Tensor enc_ids = host_i64(batch, "text_enc");
    const int64_t B = enc_ids.size(0);
    const Tensor dec_ids = host_i64(batch, "text_dec", B);
    const Tensor enc_mask = host_i64(batch, "enc_mask", B);
    const Tensor dec_mask = host_i64(batch, "dec_mask", B);
    const Tensor labels = host_i64(batch, "labels", B);
    const Tensor loss_mask = host_i64(batch, "loss_mask", B);
    check_same_shape(enc_ids, "text_enc", enc_mask, "enc_mask");
    check_same_shape(dec_ids, "text_dec", dec_mask, "dec_mask");
    check_same_shape(dec_ids, "text_dec", labels, "labels");
    check_same_shape(dec_ids, "text_dec", loss_mask, "loss_mask");
    for (const auto& [t, name] : {std::pair{&enc_ids, "encoder"}, std::pair{&dec_ids, "decoder"}})
        MT_CHECK(t->size(1) <= config_.transformer.max_position_embeddings, "T5Model: the ", name,
                 " sequence (", t->size(1), ") is longer than --max-position-embeddings (",
                 config_.transformer.max_position_embeddings, ")");

    // The masks pretrain_t5.py builds from the dataset's: padding over each stack's tokens,
    // causal in the decoder's self-attention.
    nn::AttentionMask encoder_mask;
    encoder_mask.causal = false;
    encoder_mask.key_length = nn::key_lengths_from_padding_mask(enc_mask);
    nn::AttentionMask decoder_mask;
    decoder_mask.key_length = nn::key_lengths_from_padding_mask(dec_mask);
    if (encoder_bias_) {
        set_bias(encoder_mask, *encoder_bias_, enc_ids.size(1),
                 keep ? &acts->encoder_bias_grad : nullptr, *backend_);
        set_bias(decoder_mask, *decoder_bias_, dec_ids.size(1),
                 keep ? &acts->decoder_bias_grad : nullptr, *backend_);
    }

    Tensor h = embedding_.forward(enc_ids, dropout, keep ? &acts->encoder_embedding : nullptr);
    const Tensor encoded =
        encoder_.forward(h, dropout, keep ? &acts->encoder : nullptr, encoder_mask);
    const nn::EncoderContext encoder{encoded, encoder_mask.key_length,
                                     keep ? &acts->encoder_grad : nullptr};
    h = embedding_.forward(dec_ids, dropout, keep ? &acts->decoder_embedding : nullptr);
    h = decoder_.forward(h, dropout, keep ? &acts->decoder : nullptr, decoder_mask, &encoder);

    // Labels past the target are -1: scored as id 0 and masked out, as Megatron's cross-entropy
    // gives them a finite loss that loss_mask removes.
    Tensor targets = Tensor::empty(labels.shape(), DType::i64);
    Tensor weights = Tensor::empty(labels.shape(), DType::f32);
    for (int64_t i = 0; i < labels.numel(); ++i) {
        targets.data<int64_t>()[i] = std::max<int64_t>(labels.data<int64_t>()[i], 0);
        weights.data<float>()[i] = float(loss_mask.data<int64_t>()[i]);
    }
    Losses losses;
    losses.push_back({"lm loss", output_.forward(h, targets, keep ? &acts->output : nullptr),
                      backend_->contiguous(weights), LossTerm::Reporting::token_weighted});
    if (saved) *saved = std::move(acts);
    return losses;
}

void T5Model::backward(const std::vector<Tensor>& dlosses, const Activations& saved) {
    const auto* acts = dynamic_cast<const T5Activations*>(&saved);
    MT_CHECK(acts != nullptr, "T5Model: backward needs the activations of this model's forward");
    MT_CHECK(dlosses.size() == 1, "T5Model: backward takes 1 loss gradient, got ", dlosses.size());
    acts->encoder_grad = Tensor();
    Tensor dh = output_.backward(dlosses[0], acts->output);
    nn::report_grads_ready(output_, grad_ready_);  // its bias (the tied weight: the embedding's)
    dh = decoder_.backward(dh, acts->decoder, grad_ready_);
    embedding_.backward(dh, acts->decoder_embedding);
    if (decoder_bias_) {
        decoder_bias_->backward(acts->decoder_bias_grad);
        nn::report_grads_ready(*decoder_bias_, grad_ready_);
    }
    MT_CHECK(acts->encoder_grad.defined(),
             "T5Model: the decoder's backward left no gradient for the encoder's output");
    dh = encoder_.backward(acts->encoder_grad, acts->encoder, grad_ready_);
    embedding_.backward(dh, acts->encoder_embedding);
    if (encoder_bias_) {
        encoder_bias_->backward(acts->encoder_bias_grad);
        nn::report_grads_ready(*encoder_bias_, grad_ready_);
    }
    nn::report_grads_ready(embedding_, grad_ready_);
}

void T5Model::encode(const Tensor& tokens, const Tensor& lengths, nn::InferenceState& state) {
    MT_CHECK(!tp_.sequence_split(), "not supported yet: inference with --sequence-parallel");
    MT_CHECK(tokens.dim() == 2 && tokens.size(0) == state.batch(), "T5Model: encoder tokens ",
             tokens.describe(), " for an inference state of ", state.batch(), " rows");
    MT_CHECK(tokens.size(1) <= config_.transformer.max_position_embeddings,
             "T5Model: the encoder input (", tokens.size(1),
             " tokens) is longer than --max-position-embeddings (",
             config_.transformer.max_position_embeddings, ")");
    MT_CHECK(lengths.dtype() == DType::i32 && lengths.shape() == Shape({tokens.size(0)}),
             "T5Model: encoder lengths must be i32 [", tokens.size(0), "], got ",
             lengths.describe());
    nn::DropoutContext no_dropout{false, 0, 0};
    nn::AttentionMask mask;
    mask.causal = false;
    mask.key_length = lengths;
    if (encoder_bias_) set_bias(mask, *encoder_bias_, tokens.size(1), nullptr, *backend_);
    const Tensor h = embedding_.forward(tokens, no_dropout, nullptr);
    state.encoder = {encoder_.forward(h, no_dropout, nullptr, mask), lengths, nullptr};
}

Tensor T5Model::logits(const Tensor& tokens, nn::InferenceState* state, int64_t keep_last) {
    MT_CHECK(state && state->encoder.states.defined(),
             "T5Model: decoding needs an inference state holding the encoder's output "
             "(encode() first)");
    MT_CHECK(tokens.dim() == 2 && tokens.size(0) == state->batch(), "T5Model: tokens ",
             tokens.describe(), " for an inference state of ", state->batch(), " rows");
    const int64_t B = tokens.size(0), T = tokens.size(1), past = state->length();
    MT_CHECK(keep_last >= 0 && keep_last <= T, "T5Model: keep_last ", keep_last, " is not in [0, ",
             T, "]");
    std::vector<int64_t> at(size_t(B * T));
    for (int64_t i = 0; i < B * T; ++i) at[size_t(i)] = past + i % T;
    nn::DropoutContext no_dropout{false, 0, 0};
    Tensor h = embedding_.forward(tokens, no_dropout, nullptr, host_tensor(std::move(at), {B, T}));
    h = decoder_.forward_cached(
        h, state, &state->encoder,
        decoder_bias_ ? decoder_bias_->forward(past, T, past + T) : Tensor());
    state->advance(T);
    const int64_t kept = keep_last > 0 && keep_last < T ? keep_last : T;
    if (kept < T) h = h.slice(1, T - kept, T);
    return backend_->cast_to(output_.logits(h), nn::upcast_dtype(layer_.dtype));
}

std::unique_ptr<nn::InferenceState> T5Model::make_inference_state(int64_t batch,
                                                                  int64_t capacity) const {
    return decoder_.make_inference_state(batch, capacity);
}

double T5Model::training_flops(int64_t samples) const {
    // Megatron's num_floating_point_operations reads --num-layers and --seq-length whatever the
    // model: the encoder's, for T5.
    const nn::TransformerArgs& t = config_.transformer;
    return nn::megatron_training_flops(layer_, t.num_layers, t.seq_length, t.padded_vocab_size,
                                       samples);
}

}  // namespace mt::plugins::t5
