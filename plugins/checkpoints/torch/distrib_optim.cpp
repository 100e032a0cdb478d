#include "distrib_optim.h"

#include <cstring>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/error.h"
#include "mt/model.h"
#include "mt/parallel/buffer_layout.h"

namespace mt::plugins::torch_ckpt {

namespace {

using io::PyKind;
using io::PyValue;

constexpr const char* kMoments[] = {"exp_avg", "exp_avg_sq"};

// The state's model entries that are parameters (in order), which the buffers hold: not the
// model's buffers (a router's expert_bias).
std::vector<size_t> parameter_entries(const CheckpointState& state) {
    std::vector<size_t> out;
    for (size_t i = 0; i < state.model.size(); ++i)
        if (!megatron_buffer(state.model[i].first)) out.push_back(i);
    return out;
}

// One optimizer's gradient buffer: its parameters (state.model indices, in order), each with its
// optimizer state (o.params indices), and the data-parallel size it is sharded over.
struct BufferPart {
    std::vector<size_t> model, params;
    int64_t dp = 1;
};

// The state's buffers: one, or under expert parallelism Megatron's chain of two (the dense
// parameters' over the data-parallel ranks, the experts' over the expert-data-parallel ranks).
std::vector<BufferPart> buffer_parts(const CheckpointState& state, const std::string& where) {
    MT_CHECK(!bool_arg(state.args, "use_legacy_models"), "not supported yet: ", where,
             ": the distributed optimizer's state of a legacy (non-core) model");
    const OptimizerCheckpoint& o = *state.optimizer;
    const std::vector<size_t> entries = parameter_entries(state);
    MT_CHECK(o.params.size() == entries.size(), where, ": ", o.params.size(),
             " parameters have optimizer state but the model has ", entries.size());
    bool chained = false;
    for (const OptimizerParamState& p : o.params) chained = chained || p.expert_parallel;
    const int64_t dp = int_arg(state.args, "data_parallel_size").value_or(1);
    std::vector<BufferPart> parts(chained ? 2 : 1);
    parts[0].dp = dp;
    if (chained) {  // the ranks holding the same experts: tp x cp x dp / (ep x etp)
        const int64_t tp = int_arg(state.args, "tensor_model_parallel_size").value_or(1);
        const int64_t cp = int_arg(state.args, "context_parallel_size").value_or(1);
        const int64_t ep = int_arg(state.args, "expert_model_parallel_size").value_or(1);
        const int64_t etp = int_arg(state.args, "expert_tensor_parallel_size").value_or(tp);
        MT_CHECK(tp * cp * dp % (ep * etp) == 0, where, ": the args' ranks (tensor ", tp,
                 " x context ", cp, " x data ", dp, ") do not split into expert parallel ", ep,
                 " x expert tensor parallel ", etp);
        parts[1].dp = tp * cp * dp / (ep * etp);
    }
    for (size_t j = 0; j < entries.size(); ++j) {
        MT_CHECK(o.params[j].name == state.model[entries[j]].first, where, ": optimizer state ", j,
                 " is ", o.params[j].name, ", the model tensor ", state.model[entries[j]].first);
        BufferPart& part = parts[chained && o.params[j].expert_parallel ? 1 : 0];
        part.model.push_back(entries[j]);
        part.params.push_back(j);
    }
    return parts;
}

// The weights' dtype (one for all: the distributed optimizer's buffer holds them).
DType model_dtype(const NamedTensors& model, const std::string& where) {
    const DType d = model.empty() ? DType::f32 : model[0].second.dtype();
    for (const auto& [name, t] : model)
        MT_CHECK(t.dtype() == d, "not supported yet: ", where,
                 ": the distributed optimizer's state of a model of several dtypes (", name, " is ",
                 dtype_name(t.dtype()), ", others ", dtype_name(d), ")");
    return d;
}

// The part's parameters, as local tensors.
NamedTensors part_model(const CheckpointState& state, const BufferPart& part) {
    NamedTensors out;
    for (size_t i : part.model) out.emplace_back(state.model[i].first, state.model[i].second.local);
    return out;
}

// The layout the saving run built for `model` (whole or local tensors of one dtype, a pipeline
// stage's) over `dp` data-parallel ranks. With several stages tying the word embeddings to the
// output layer, the first stage's embeddings and the last stage's copy take buckets of their own.
parallel::BufferLayout saved_layout(const NamedTensors& model, const CheckpointArgs& args,
                                    int64_t dp) {
    parallel::DataParallelConfig config;
    config.distributed_optimizer = true;
    config.overlap_grad_reduce = bool_arg(args, "overlap_grad_reduce");
    config.bucket_size = int_arg(args, "ddp_bucket_size").value_or(0);
    const bool shared = int_arg(args, "pipeline_model_parallel_size").value_or(1) > 1 &&
                        !bool_arg(args, "untie_embeddings_and_output_weights");
    std::vector<int64_t> numels;
    std::vector<bool> own_bucket;
    for (const auto& [name, t] : model) {
        numels.push_back(t.numel());
        own_bucket.push_back(shared && (name == "embedding.word_embeddings.weight" ||
                                        name == "output_layer.weight"));
    }
    return parallel::buffer_layout(numels, dp, config, own_bucket);
}

// The part's k-th parameter's piece of a world tensor.
Tensor piece(const Tensor& world, const parallel::BufferLayout& l, size_t k, const Shape& shape) {
    const int64_t begin = l.unpadded_offset(k);
    return world.slice(0, begin, begin + shape_numel(shape)).view(shape);
}

// get_parameter_state_dp_zero's dict of one optimizer's buffer.
PyValue buffer_state_to_py(const CheckpointState& state, const BufferPart& part) {
    const OptimizerCheckpoint& o = *state.optimizer;
    const NamedTensors model = part_model(state, part);
    std::vector<BufferMoments> moments;
    for (size_t k : part.params) {
        const OptimizerParamState& p = o.params[k];
        moments.push_back({p.exp_avg, p.exp_avg_sq, p.main_param});
    }
    const BufferBuckets buffer = buffer_world(model, moments, state.args, part.dp);
    const DType dtype = model_dtype(model, kDistribOptimName);
    PyValue tensors = PyValue::dict();
    tensors.dict_ref().set("param", PyValue::tensor(buffer.world.param));
    tensors.dict_ref().set(kMoments[0], PyValue::tensor(buffer.world.exp_avg));
    tensors.dict_ref().set(kMoments[1], PyValue::tensor(buffer.world.exp_avg_sq));
    tensors.dict_ref().set("numel_unpadded", PyValue::integer(buffer.world.param.numel()));
    PyValue by_dtype = PyValue::dict();
    by_dtype.dict_ref().set(buffer_dtype_key(dtype), std::move(tensors));
    PyValue root = PyValue::dict();
    root.dict_ref().set("buckets_coalesced", PyValue::boolean(true));
    root.dict_ref().set(PyValue::integer(0), std::move(by_dtype));
    return root;
}

// Sets the moments (and masters) of the part's parameters from one optimizer's dict.
void buffer_state_from_py(const PyValue& root, CheckpointState& state, const BufferPart& part,
                          const std::string& file) {
    OptimizerCheckpoint& o = *state.optimizer;
    MT_CHECK(root.kind() == PyKind::dict, file, ": a Python ", io::py_kind_name(root.kind()),
             ", not a dict");
    const PyValue* coalesced = root.find("buckets_coalesced");
    MT_CHECK(coalesced && coalesced->kind() == PyKind::boolean && coalesced->as_bool(), file,
             ": not supported yet: the layout before Megatron coalesced the buckets "
             "(no 'buckets_coalesced': True; megatron-core's --ckpt-convert-update-legacy-dist-"
             "opt-format rewrites it)");
    const PyValue* buffers = nullptr;
    int64_t count = 0;
    for (const auto& [k, v] : root.dict_ref().items) {
        if (k.kind() != PyKind::integer) continue;
        ++count;
        if (k.as_int() == 0) buffers = &v;
    }
    MT_CHECK(buffers && count == 1, file, ": ", count,
             " gradient buffers; not supported yet: other than one per optimizer (mixed-dtype "
             "buffers, or a model chunk's each)");
    MT_CHECK(buffers->kind() == PyKind::dict && buffers->dict_ref().items.size() == 1, file,
             ": buffer 0 is not one dtype's state");
    // Named rather than a structured binding, which clang 14 (the fuzz build) cannot capture.
    const auto& entry = buffers->dict_ref().items.front();
    const PyValue& dtype_key = entry.first;
    const PyValue& tensors = entry.second;
    const NamedTensors model = part_model(state, part);
    const DType dtype = model_dtype(model, file);
    MT_CHECK(io::repr(dtype_key) == io::repr(buffer_dtype_key(dtype)), file,
             ": not supported yet: a gradient buffer of ", io::short_repr(dtype_key), " for ",
             dtype_name(dtype),
             " weights (the buffer must hold the model's dtype and fp32 gradients)");
    MT_CHECK(tensors.kind() == PyKind::dict, file, ": the buffer's state is a Python ",
             io::py_kind_name(tensors.kind()), ", not a dict");
    const PyValue* numel = tensors.find("numel_unpadded");
    MT_CHECK(numel && numel->kind() == PyKind::integer, file, ": numel_unpadded is ",
             numel ? io::short_repr(*numel) : std::string("missing"), ", not an integer");
    auto world = [&](const char* key) {
        const PyValue* v = tensors.find(key);
        MT_CHECK(v && v->kind() == PyKind::tensor, file, ": no tensor '", key, "'");
        const Tensor& t = v->as_tensor();
        MT_CHECK(t.dtype() == DType::f32 && t.shape() == Shape{numel->as_int()}, file, ": '", key,
                 "' is ", t.describe(), ", expected f32 [numel_unpadded] = [", numel->as_int(),
                 "]");
        return t;
    };
    const std::vector<BufferMoments> moments = buffer_moments(
        {world("param"), world(kMoments[0]), world(kMoments[1])}, model, state.args, part.dp, file);
    for (size_t k = 0; k < part.model.size(); ++k) {
        OptimizerParamState& p = o.params[part.params[k]];
        p.exp_avg = moments[k].exp_avg;
        p.exp_avg_sq = moments[k].exp_avg_sq;
        if (moments[k].main_param.defined()) p.main_param = moments[k].main_param;
    }
}

}  // namespace

PyValue buffer_dtype_key(DType param_dtype) {
    return PyValue::tuple(
        {io::torch_dtype_global(param_dtype), io::torch_dtype_global(DType::f32)});
}

BufferBuckets buffer_world(const NamedTensors& model, const std::vector<BufferMoments>& state,
                           const CheckpointArgs& args, int64_t dp) {
    MT_CHECK(model.size() == state.size(), "the distributed optimizer's state of ", state.size(),
             " parameters for ", model.size());
    const DType dtype = model_dtype(model, "the distributed optimizer's buffer");
    const parallel::BufferLayout l = saved_layout(model, args, dp);
    const int64_t n = l.numel_unpadded();
    BufferBuckets out;
    out.world = {Tensor::zeros({n}, DType::f32), Tensor::zeros({n}, DType::f32),
                 Tensor::zeros({n}, DType::f32)};
    for (size_t k = 0; k < model.size(); ++k) {
        const auto& [name, t] = model[k];
        // "param" holds the f32 weights the optimizer updates: a bf16 / f16 model's masters.
        const Tensor& main = dtype == DType::f32 ? t : state[k].main_param;
        MT_CHECK(main.defined(), "the distributed optimizer's state: no f32 master weights of the ",
                 dtype_name(dtype), " parameter ", name);
        piece(out.world.param, l, k, t.shape()).copy_from(main);
        piece(out.world.exp_avg, l, k, t.shape()).copy_from(state[k].exp_avg);
        piece(out.world.exp_avg_sq, l, k, t.shape()).copy_from(state[k].exp_avg_sq);
    }
    for (const parallel::BufferLayout::Bucket& b : l.buckets) {
        out.numel.push_back(b.end - b.begin);
        out.numel_unpadded.push_back(b.numel_unpadded);
    }
    return out;
}

std::vector<BufferMoments> buffer_moments(const BufferWorld& world, const NamedTensors& model,
                                          const CheckpointArgs& args, int64_t dp,
                                          const std::string& file) {
    const DType dtype = model_dtype(model, file);
    const parallel::BufferLayout l = saved_layout(model, args, dp);
    const int64_t n = l.numel_unpadded();
    for (const Tensor* t : {&world.param, &world.exp_avg, &world.exp_avg_sq})
        MT_CHECK(t->dtype() == DType::f32 && t->dim() == 1 && t->numel() == world.param.numel(),
                 file, ": the buffer's tensors are ", world.param.describe(), ", ",
                 world.exp_avg.describe(), " and ", world.exp_avg_sq.describe(),
                 ", not f32 [numel_unpadded] each");
    MT_CHECK(world.param.numel() == n, file, ": numel_unpadded is ", world.param.numel(),
             " but the model's parameters take ", n,
             " elements in the gradient buffer (a different model, or bucket settings the args "
             "do not say)");
    // An fp32 run's weights are its masters, a bf16 / f16 run's the masters rounded (Megatron
    // copies them after each step): a layout other than the saving run's shows.
    const bool check = dtype != DType::f32 || (!bool_arg(args, "fp16") && !bool_arg(args, "bf16"));
    std::vector<BufferMoments> out;
    for (size_t k = 0; k < model.size(); ++k) {
        const auto& [name, t] = model[k];
        const Shape& shape = t.shape();
        if (check) {
            const Tensor rounded = cast_float(piece(world.param, l, k, shape), dtype);
            const Tensor weights = t.contiguous();
            MT_CHECK(
                std::memcmp(rounded.raw_data(), weights.raw_data(), size_t(weights.nbytes())) == 0,
                file, ": the master weights of ", name,
                dtype == DType::f32
                    ? " are not the model's"
                    : str(" do not round to the model's ", dtype_name(dtype), " weights"),
                ": the file's layout is not the one the args describe");
        }
        BufferMoments m;
        m.exp_avg = piece(world.exp_avg, l, k, shape);
        m.exp_avg_sq = piece(world.exp_avg_sq, l, k, shape);
        if (dtype != DType::f32) m.main_param = piece(world.param, l, k, shape);
        out.push_back(std::move(m));
    }
    return out;
}

bool saved_by_distributed_optimizer(const CheckpointArgs& args) {
    return bool_arg(args, "use_distributed_optimizer");
}

PyValue parameter_state_to_py(const CheckpointState& state, bool dense_state) {
    MT_CHECK(state.optimizer.has_value(), "distrib_optim.pt: the state has no optimizer");
    MT_CHECK(state.optimizer->type == "adam",
             "not supported yet: the distributed optimizer's checkpoint of ", state.optimizer->type,
             " (Megatron's distributed optimizer is Adam)");
    const std::vector<BufferPart> parts = buffer_parts(state, kDistribOptimName);
    if (parts.size() == 1) return buffer_state_to_py(state, parts[0]);
    // ChainedOptimizer.save_parameter_state: each optimizer's state from its data-parallel rank
    // 0, None elsewhere.
    return PyValue::list({dense_state ? buffer_state_to_py(state, parts[0]) : PyValue(),
                          buffer_state_to_py(state, parts[1])});
}

void parameter_state_from_py(const PyValue& root, CheckpointState& state, const std::string& file) {
    MT_CHECK(state.optimizer.has_value(), file, ": no optimizer param groups to go with it");
    const std::vector<BufferPart> parts = buffer_parts(state, file);
    if (parts.size() == 1) {
        MT_CHECK(root.kind() != PyKind::list, file, ": a chain of ", root.items().size(),
                 " optimizers' states, but model_optim_rng.pt has one optimizer");
        return buffer_state_from_py(root, state, parts[0], file);
    }
    MT_CHECK(root.kind() == PyKind::list && root.items().size() == 2, file,
             ": not the expert-parallel chained optimizer's states (a list of the dense "
             "parameters' and the experts')");
    // The dense state is in expert-parallel rank 0's file only; join_expert_ranks takes it there.
    for (size_t c = 0; c < 2; ++c)
        if (root.items()[c].kind() != PyKind::none)
            buffer_state_from_py(root.items()[c], state, parts[c], file);
}

}  // namespace mt::plugins::torch_ckpt
