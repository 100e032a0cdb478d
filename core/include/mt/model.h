// ModelFamily interface (gpt, bert, t5, mamba, moe plugins): builds a model from Megatron's
// model flags and describes its parameters (Megatron-core names and shard specs), which
// checkpoints, the converter and tensor parallelism all read. Declared now; the training
// issue implements the first family.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mt/api.h"
#include "mt/dtype.h"
#include "mt/tensor.h"

namespace mt {

namespace nn {
struct Parameter;
struct DropoutContext;
class MoeTracker;
class InferenceState;
}  // namespace nn
namespace parallel {
class ParallelState;
}  // namespace parallel
namespace data {
class SampleDataset;
struct DatasetRequest;
}  // namespace data
class Backend;

// Where a model is built: the compute backend its modules allocate and compute on, and the
// rank's process groups (a model allocates only its local shards; tensor-parallel modules talk
// over parallel.tp()). sequence_parallel: --sequence-parallel (activations between the
// tensor-parallel regions split along the sequence). params_dtype: Megatron's params_dtype, the
// dtype of the weights and activations (bf16 with --bf16, f16 with --fp16); gradients of half
// weights accumulate in f32 (Megatron's main_grad).
struct BuildContext {
    Backend& backend;
    const parallel::ParallelState& parallel;
    bool sequence_parallel = false;
    DType params_dtype = DType::f32;
    // The model chunk to build on this pipeline stage (ParallelConfig::virtual_stages of them).
    int virtual_stage = 0;
};

// The context of a one-process CPU run (the CPU backend, every group of size 1), shared by
// whoever builds a model outside a parallel run (inference, conversion, tests).
MT_API const BuildContext& single_process_context();

// How a parameter is split across tensor-parallel ranks.
struct ShardSpec {
    enum class Kind : uint8_t { replicated, column, row, vocab };
    Kind kind = Kind::replicated;
    int partition_dim = 0;   // dimension split across ranks (column: 0, row: 1)
    int64_t num_groups = 1;  // QKV query groups or gate/up halves split group-wise per rank
    // With num_groups > 1: true when each group is split across the ranks (SwiGLU's fc1
    // [gate; up]: rank r holds [gate_r; up_r]); false when each rank holds whole groups (QKV).
    bool split_each_group = false;
    // Parts of unequal sizes along partition_dim (whole sizes, in order), each split across the
    // ranks: rank r holds its slice of every part, concatenated (Mamba's in_proj [z; x; B; C;
    // dt], conv1d [x; B; C]). Empty: the groups above say.
    std::vector<int64_t> part_sizes = {};
    bool operator==(const ShardSpec&) const = default;
};

// Megatron's default no-weight-decay rule (megatron/core/optimizer _get_param_groups): biases
// and 1-D parameters (norms) do not decay.
inline bool megatron_weight_decay(std::string_view name, const Shape& shape) {
    return shape.size() > 1 && !name.ends_with(".bias");
}
// Megatron's is_embedding_or_output_parameter (the parameters --decoupled-lr applies to): the
// word embedding and the untied output layer weight.
inline bool megatron_embedding_or_output(std::string_view name) {
    return name == "embedding.word_embeddings.weight" || name == "output_layer.weight";
}
// An MoE expert's weight (Megatron's allreduce=False, is_expert_parallel): SequentialMLP's
// "...mlp.experts.local_experts.<e>..." or the grouped "...mlp.experts.linear_fc1.weight<e>",
// not the shared experts. Megatron's MoE optimizer keeps these in a chained optimizer of their own.
inline bool megatron_expert_parameter(std::string_view name) {
    return name.find(".mlp.experts.") != std::string_view::npos;
}

// A persistent buffer of Megatron-core's modules (Model::buffers): a router's expert_bias
// (--moe-router-enable-expert-bias). Checkpoints hold it among the parameters, without
// optimizer state.
inline bool megatron_buffer(std::string_view name) {
    return name.ends_with(".router.expert_bias");
}

struct ParameterInfo {
    std::string
        name;     // Megatron-core key, e.g. "decoder.layers.3.self_attention.linear_qkv.weight"
    Shape shape;  // full (unsharded) shape
    DType dtype = DType::f32;
    ShardSpec shard;
    bool weight_decay = true;
    // Other keys checkpoints repeat the tensor under (nn::Parameter::aliases).
    std::vector<std::string> aliases = {};
};

// Model hyper-parameters as Megatron's flags give them: flag name without "--" -> value text
// (empty for a switch that is set).
using ModelArgs = std::map<std::string, std::string, std::less<>>;

// One command-line flag a model family understands, for the tools to offer and parse.
struct FlagInfo {
    std::string name;  // without "--", Megatron's spelling
    std::string help;
    std::optional<std::string> default_value;  // shown by --help; absent: no default
    bool is_switch = false;                    // takes no value
    // Takes any number of values (argparse nargs='*'); ModelArgs holds them joined by spaces.
    bool multiple = false;
    // A switch stored as False under this argparse dest (--disable-bias-linear:
    // add_bias_linear); empty: the dest is the flag's own name, stored True.
    std::string store_false_dest;
    // argparse's dest when it is not the flag's name with '_' for '-' (--fp8-format: fp8).
    std::string dest;
};

// A flag taking a value (with its default, if any) and a switch, as families list them.
inline FlagInfo value_flag(const char* name, const char* help,
                           std::optional<std::string> default_value = {}) {
    FlagInfo f;
    f.name = name;
    f.help = help;
    f.default_value = std::move(default_value);
    return f;
}
inline FlagInfo switch_flag(const char* name, const char* help) {
    FlagInfo f = value_flag(name, help);
    f.is_switch = true;
    return f;
}

// The inputs of one micro-batch by name, as the family's dataset collates them. GPT: "tokens",
// "labels" (i64 [B, T]), "loss_mask" (f32 [B, T]), "position_ids" (i64 [B, T]), optionally
// "document_start" (i32 [B, T]).
using Batch = std::map<std::string, Tensor, std::less<>>;

// batch[key], or an mt::Error naming the key `model` ("GptModel") needs.
MT_API const Tensor& batch_entry(const Batch& batch, std::string_view key, std::string_view model);

// One loss of a micro-batch under the name Megatron's loss_func reports it ("lm loss",
// "sop loss"): unreduced per-element losses and the weight of each element (the loss mask, 1
// where every element counts). The micro-batch's loss is Σ values·mask / Σ mask, and the loss
// backpropagated is the sum of the terms' micro-batch losses times their grad_weight
// (pretrain_bert.py: lm + sop).
struct LossTerm {
    // How the log line and evaluation average the term over a global batch: the tokens of all
    // its micro-batches weighted alike (pretrain_gpt.py reports [loss sum, tokens]), or the mean
    // of the micro-batches' own means (pretrain_bert.py reports each micro-batch's mean).
    enum class Reporting : uint8_t { token_weighted, micro_batch_mean };

    std::string name;
    Tensor values;  // f32 (f64 for an f64 model), any shape, on the model's backend
    Tensor mask;    // f32, values' shape, on the model's backend
    Reporting reporting = Reporting::token_weighted;
    // The term's weight in the loss backpropagated (multi-token prediction's
    // --mtp-loss-scaling-factor over its depths).
    double grad_weight = 1.0;
    // Reported in training only, after the model's other losses and the MoE ones, and not part
    // of the iteration's loss (Megatron's trackers: the multi-token prediction losses).
    bool auxiliary = false;
};
using Losses = std::vector<LossTerm>;

// The term called `name`, or an mt::Error naming the terms there are.
MT_API const LossTerm& loss_term(const Losses& losses, std::string_view name);

// What a model's forward keeps for its backward; each model defines its own.
struct Activations {
    virtual ~Activations() = default;
    // Pipeline parallelism (a model built for one stage): the hidden states a non-last stage's
    // forward leaves for the next stage, the gradient of them the next stage sends back (set
    // by the schedule before backward), and the gradient of its input a non-first stage's
    // backward leaves for the previous stage (mutable: backward takes the activations const).
    Tensor stage_output, stage_output_grad;
    mutable Tensor stage_input_grad;
};

// The batch entry under which a non-first pipeline stage's forward gets the previous stage's
// hidden states (Megatron's set_input_tensor).
inline constexpr std::string_view kStageInput = "stage_input";

// What pipeline stages send each other: the hidden states of one micro-batch.
struct StageTensor {
    Shape shape;
    DType dtype = DType::f32;
};

// One model instance: parameters plus forward/backward over a micro-batch.
class MT_API Model {
  public:
    virtual ~Model() = default;
    // Every trainable parameter in Megatron's order (a tied weight appears once).
    virtual std::vector<nn::Parameter*> parameters() = 0;
    // The persistent buffers (Megatron's register_buffer: a router's expert_bias): tensors saved,
    // loaded and converted with the model's parameters but never trained (no grad, no optimizer
    // state). Their Parameter entries carry name, value and shard spec; grad stays undefined.
    virtual std::vector<nn::Parameter*> buffers() { return {}; }
    // Megatron's initialisation: weights N(0, --init-method-std), output projections scaled by
    // 1/sqrt(2·layers), biases 0, norm weights 1; deterministic in `seed`.
    virtual void initialize(uint64_t seed) = 0;
    // The micro-batch's named losses (none on a pipeline stage before the last, which leaves
    // its output in saved->stage_output). With `saved` set, keeps what backward needs.
    virtual Losses forward(const Batch& batch, nn::DropoutContext& dropout,
                           std::unique_ptr<Activations>* saved) = 0;
    // Accumulates (+=) every parameter's grad for dL/d(term k's values) = dlosses[k] (shaped
    // and typed as the values), one tensor per term of the forward, in its order.
    virtual void backward(const std::vector<Tensor>& dlosses, const Activations& saved) = 0;
    // With a hook set, backward reports each parameter as soon as its grad is final for this
    // backward (data parallelism starts reducing full buckets while backward goes on). A family
    // that never reports still trains right: the reductions then all run after backward.
    using GradReadyHook = std::function<void(const nn::Parameter&)>;
    virtual void set_grad_ready_hook(GradReadyHook hook) { (void)hook; }
    // The hidden states this model's pipeline stages exchange for a micro-batch of
    // `micro_batch_size` sequences of `seq_length` tokens (0: the model's --seq-length; a
    // curriculum trains on fewer). The default is an mt::Error "not supported yet".
    virtual StageTensor stage_tensor(int64_t micro_batch_size, int64_t seq_length) const;
    // Floating-point operations of one training iteration over `samples` sequences (forward and
    // backward), by Megatron's formula (training.py num_floating_point_operations).
    virtual double training_flops(int64_t samples) const = 0;

    // Inference (dropout off, nothing kept for a backward): logits [B, n, padded vocab] (f32 for
    // an f32, bf16 or f16 model, f64 for an f64 one) for the last n = keep_last positions (0: all
    // T) of tokens i64/i32 [B, T]. With a state, the tokens sit at positions state->length() ..
    // and join it (their keys and values, a recurrent layer's state; its length grows by T);
    // without, at 0 .. T-1. The default throws "not supported".
    virtual Tensor logits(const Tensor& tokens, nn::InferenceState* state, int64_t keep_last = 0);
    // Continuous batching's step: T new tokens (tokens i64 [B, T]) for each of B requests, row
    // b's held in states[b] (a batch-1 state of its own length, made by
    // make_inference_state(1, ...)): logits [B, n, padded vocab] for the last n = keep_last
    // positions of each row (0: all T), each state grown by T. Row b gets what logits() gives
    // that request alone, whatever the other rows are. Whether this model can
    // (can_decode_rows); the default cannot and throws "not supported yet".
    virtual bool can_decode_rows() const { return false; }
    virtual Tensor decode_rows(const Tensor& tokens, std::span<nn::InferenceState* const> states,
                               int64_t keep_last = 0);
    // A task model's outputs for a batch in its family's layout, without dropout or labels
    // (BERT with a classification head: logits f32 [B, classes]; with a multiple-choice head:
    // [B, choices]). The default throws "not supported".
    virtual Tensor predict(const Batch& batch);
    // Encoder-decoder models (T5): whether logits() decodes over an encoded input, which encode()
    // puts in the state first: tokens i64/i32 [B, Te] of which row b's first lengths[b] (i32
    // [B]) are its input, the rest padding. The default has no encoder (and throws).
    virtual bool has_encoder() const { return false; }
    virtual void encode(const Tensor& tokens, const Tensor& lengths, nn::InferenceState& state);
    // An empty inference state (KV cache, recurrent states) shaped for this model: `batch` rows
    // of up to `capacity` positions.
    virtual std::unique_ptr<nn::InferenceState> make_inference_state(int64_t batch,
                                                                     int64_t capacity) const;
    // The bytes the state make_inference_state(batch, capacity) makes would hold (what a
    // continuous batch's memory bound counts): the default makes one and measures it; a model
    // whose states cost more than their memory to make (a model-parallel leader's twins)
    // measures its own part instead.
    virtual int64_t inference_state_bytes(int64_t batch, int64_t capacity) const;
    // The longest prompt + generation Megatron's text generation accepts
    // (--max-position-embeddings), or 0 for no limit.
    virtual int64_t max_positions() const { return 0; }
    // A mixture-of-experts model's auxiliary-loss tracker (its gradient scale, the losses to
    // report), or null.
    virtual nn::MoeTracker* moe_tracker() { return nullptr; }
    // Megatron's set_is_first_microbatch: the schedule's next forward on this model (chunk) is
    // the first micro-batch of a forward-backward pass (FP8 weights are quantized anew).
    virtual void set_is_first_microbatch() {}
    // The model chunks of this pipeline stage, in order (the interleaved schedule runs each
    // chunk's forward and backward itself): this model alone unless it holds several.
    virtual std::vector<Model*> pipeline_chunks() { return {this}; }
};

// The model's parameters and buffers in Megatron's state-dict order (a module's buffers after
// its parameters): what checkpoints hold of it.
MT_API std::vector<nn::Parameter*> state_tensors(Model& model);
// Where Megatron's state dict puts buffer `buffer` among `count` entries named name(i): after the
// last entry of its module ("decoder.layers.0.mlp.router."), else at the end.
MT_API size_t buffer_slot(size_t count, const std::function<const std::string&(size_t)>& name,
                          std::string_view buffer);

class MT_API ModelFamily {
  public:
    virtual ~ModelFamily() = default;
    virtual std::string_view name() const = 0;  // "gpt"
    // The model flags this family reads (--num-layers, --hidden-size, ...).
    virtual std::vector<FlagInfo> flags() const = 0;
    // Every parameter and buffer of the model these arguments describe, in Megatron's
    // state-dict order (state_tensors). The default
    // builds the whole model in one process and lists it (its zero tensors are untouched pages:
    // address space, not memory), so the modules state their parameters once.
    virtual std::vector<ParameterInfo> parameters(const ModelArgs& args) const;
    // The arguments with the values Megatron derives from them filled in (as its arguments.py
    // does: e.g. the FFN size, head dimension, query groups, padded vocabulary), as flag text
    // under the flag names; "padded-vocab-size" is added where the family pads the vocabulary.
    virtual ModelArgs resolved_args(const ModelArgs& args) const = 0;
    // A model with these arguments for this rank of `context`: its local shards allocated
    // (uninitialised: call initialize or load a checkpoint).
    virtual std::unique_ptr<Model> build(const ModelArgs& args,
                                         const BuildContext& context) const = 0;
    // The whole model in one CPU process.
    std::unique_ptr<Model> build(const ModelArgs& args) const {
        return build(args, single_process_context());
    }
    // The --tokenizer-type the family's pretraining script defaults to (its args_defaults:
    // pretrain_gpt.py GPT2BPETokenizer); empty: the flag is required.
    virtual std::string default_tokenizer_type() const { return ""; }
    // The flags this family's datasets read besides the shared data flags (GPT:
    // --reset-position-ids, --eod-mask-loss, ...; BERT: --mask-prob, ...); training only.
    virtual std::vector<FlagInfo> data_flags() const { return {}; }
    // The train, valid and test datasets (null where a split is absent) this family's
    // pretraining script builds (pretrain_gpt.py: GPTDataset; pretrain_bert.py: masked sentence
    // pairs), collated as its model's forward reads them. The default is an mt::Error "not
    // supported yet".
    virtual std::array<std::shared_ptr<data::SampleDataset>, 3> datasets(
        const data::DatasetRequest& request) const;
};

}  // namespace mt
