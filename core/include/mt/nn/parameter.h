// Parameter: one trainable tensor of a module with its gradient, Megatron-core name, tensor-
// parallel shard spec and weight-decay flag; checkpoints, TP and the optimizer read this.
#pragma once

#include <string>
#include <vector>

#include "mt/backend.h"
#include "mt/model.h"
#include "mt/nn/tensor_parallel.h"
#include "mt/tensor.h"

namespace mt::nn {

// How initialize_megatron draws a parameter that Megatron initialises its own way (a Mamba
// mixer's); `megatron`: by its shape and name (normal weights, zero biases, unit norms).
struct ParameterInit {
    enum class Kind : uint8_t {
        megatron,
        uniform,          // U(low, high)
        log_uniform,      // log U(low, high): A_log
        dt_bias,          // softplus^-1 of max(exp U(log low, log high), 1e-4): dt_bias
        residual_normal,  // N(0, init_method_std / sqrt(num_layers)): Mamba's out_proj
        normal,           // N(0, init_method_std) on a vector: the attention sink's offsets
    };
    Kind kind = Kind::megatron;
    double low = 0, high = 0;
};

struct Parameter {
    std::string
        name;      // Megatron-core key, e.g. "decoder.layers.0.self_attention.linear_qkv.weight"
    Tensor value;  // the weight, shaped as Megatron stores it
    // Same shape; backward accumulates (+=), the caller zeroes it. The value's dtype, but f32 for
    // f16 / bf16 values (Megatron's main_grad: --accumulate-allreduce-grads-in-fp32).
    Tensor grad;
    ShardSpec shard;
    bool weight_decay = true;  // Megatron decays weights, not biases or norm parameters
    ParameterInit init;
    // The word embedding or the (untied) output layer weight: Megatron's
    // is_embedding_or_output_parameter, which --decoupled-lr gives a learning rate of its own.
    bool embedding_or_output = false;
    // muP's "hidden matrix-like" class: two dimensions or more, outside the embeddings (word,
    // position) and the output layer, which their model marks (Megatron's
    // is_embedding_parameter). The distributed optimizer's flat pieces keep their parameter's.
    bool mup_hidden = false;
    Shape whole_shape;             // the unsharded tensor's shape (value's when not split)
    int tp_rank = 0, tp_size = 1;  // value is piece tp_rank of tp_size (by shard)
    // Each tensor-parallel rank's grad is a partial sum of a replicated parameter's: norms on
    // sequence shards (--sequence-parallel) see part of the sequence, q/k norms (--qk-layernorm)
    // part of the heads. finalize_grads sums them over the group.
    bool grad_partial_over_tp = false;
    // Pipeline parallelism with tied word embeddings: the first stage's word embeddings and the
    // last stage's copy of them in its output layer. Their grads are summed over the embedding
    // group (first and last stage) so both stay equal.
    bool tied_across_stages = false;
    // An MoE expert's weight (Megatron's allreduce=False): each expert-parallel rank holds other
    // experts, so its grad is summed over the expert-data-parallel group and its norm over the
    // expert model-parallel ranks, not the dense ones.
    bool expert = false;
    // The copy's original ("embedding.word_embeddings.weight"; empty for other parameters):
    // norms, zero counts and checkpoints skip the copy (Megatron's param.shared), which loads
    // from the original's tensors.
    std::string copy_of;
    // Other keys a module's state dict repeats this tensor under: T5Model registers its
    // position embeddings again as "position_embeddings" and its LM head's output layer as
    // "output_layer", so Megatron's checkpoints hold "position_embeddings.weight" and
    // "output_layer.bias" beside the parameters' own keys. Readers take the tensor from its own
    // key and accept these; writers write them too (torch's strict load asks for every key).
    std::vector<std::string> aliases;
    // The weight of a linear whose GEMMs run in FP8 (Linear::use_fp8): with --fp8-param-gather
    // Megatron keeps it as an FP8 tensor quantized from its f32 main param after each step
    // (quantize_param_shard). fp8_main is then that main param, whole, which the linear
    // quantizes (undefined: the value); the value holds the FP8 weight read back, as Megatron's
    // checkpoints save it (the trainer keeps both: Trainer::sync_fp8_params).
    bool fp8 = false;
    Tensor fp8_main;
    // With FP8's delayed scaling: the scale the weight is quantized with (its linear's weight
    // meter, mt/nn/fp8_scaling.h); null with current scaling.
    const float* fp8_scale = nullptr;

    // A copy whose values another rank counts: a replicated tensor on a tensor-parallel rank
    // other than 0 (Megatron's param_is_not_tensor_parallel_duplicate), or a pipeline stage's
    // copy of a tied weight (param.shared). Norms and zero counts skip it.
    bool counted_elsewhere() const {
        return !copy_of.empty() || (tp_rank != 0 && shard.kind == ShardSpec::Kind::replicated);
    }
    // The name its tensors are stored under in checkpoints: a copy loads its original's.
    const std::string& stored_name() const { return copy_of.empty() ? name : copy_of; }
};

// A parameter of `whole_shape` and `dtype` with zero value and zero grad on `backend` (the
// caller initialises); over `tp` it holds this rank's piece by `shard` (mt::Error when the shape
// does not split).
MT_API Parameter make_parameter(Backend& backend, std::string name, const Shape& whole_shape,
                                DType dtype, ShardSpec shard, bool weight_decay,
                                const TensorParallel& tp = {});

// `t` cut to p's tensor-parallel piece when it is the whole tensor of a parameter that holds a
// piece (a checkpoint's tensor, or optimizer state); otherwise `t` itself.
MT_API Tensor piece_of_whole(const Parameter& p, const Tensor& t);

// The dtype Megatron accumulates and reduces in for values of `value_dtype`: f32 for f16 and bf16
// (its fp32 main grads, norm statistics, softmax log-sum-exps and loss), else the dtype itself.
MT_API DType upcast_dtype(DType value_dtype);

// p's entry in a model's parameter list: its name, whole shape, dtype, shard spec and decay.
MT_API ParameterInfo describe(const Parameter& p);

// "prefix.name", or name when prefix is empty (modules compose Megatron keys this way).
MT_API std::string join_name(const std::string& prefix, const std::string& name);

// Tells `grad_ready` (if set: a model's GradReadyHook) that every parameter `module` collects has
// its final gradient.
template <class Module, class Hook>
void report_grads_ready(Module& module, const Hook& grad_ready) {
    if (!grad_ready) return;
    std::vector<Parameter*> params;
    module.collect_parameters(params);
    for (const Parameter* p : params) grad_ready(*p);
}

}  // namespace mt::nn
