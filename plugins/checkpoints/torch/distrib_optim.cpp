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

// The state's model entries that are parameters (in order), which the buffer holds: not the
// model's buffers (a router's expert_bias).
std::vector<size_t> parameter_entries(const CheckpointState& state) {
    std::vector<size_t> out;
    for (size_t i = 0; i < state.model.size(); ++i)
        if (!megatron_buffer(state.model[i].first)) out.push_back(i);
    return out;
}

// The gradient buffer's layout of the state's parameters, as the saving run built it.
parallel::BufferLayout saved_layout(const CheckpointState& state, const std::string& where) {
    MT_CHECK(!bool_arg(state.args, "use_legacy_models"), "not supported yet: ", where,
             ": the distributed optimizer's state of a legacy (non-core) model");
    parallel::DataParallelConfig config;
    config.distributed_optimizer = true;
    config.overlap_grad_reduce = bool_arg(state.args, "overlap_grad_reduce");
    config.bucket_size = int_arg(state.args, "ddp_bucket_size").value_or(0);
    const int64_t dp = int_arg(state.args, "data_parallel_size").value_or(1);
    std::vector<int64_t> numels;
    for (size_t i : parameter_entries(state)) numels.push_back(state.model[i].second.local.numel());
    return parallel::buffer_layout(numels, dp, config);
}

// Megatron keys a gradient buffer's state by (param dtype, grad dtype): grads are f32 here.
PyValue buffer_dtype_key(DType param_dtype) {
    return PyValue::tuple(
        {io::torch_dtype_global(param_dtype), io::torch_dtype_global(DType::f32)});
}

// The model's weight dtype (one for all: the distributed optimizer's buffer holds them).
DType model_dtype(const CheckpointState& state, const std::string& where) {
    const std::vector<size_t> params = parameter_entries(state);
    const DType d = params.empty() ? DType::f32 : state.model[params[0]].second.local.dtype();
    for (size_t i : params) {
        const auto& [name, t] = state.model[i];
        MT_CHECK(t.local.dtype() == d, "not supported yet: ", where,
                 ": the distributed optimizer's state of a model of several dtypes (", name, " is ",
                 dtype_name(t.local.dtype()), ", others ", dtype_name(d), ")");
    }
    return d;
}

const Tensor& moment(const OptimizerParamState& p, const char* name) {
    return std::strcmp(name, "exp_avg_sq") == 0 ? p.exp_avg_sq : p.exp_avg;
}

// The i-th parameter's piece of a world tensor.
Tensor piece(const Tensor& world, const parallel::BufferLayout& l, size_t i, const Shape& shape) {
    const int64_t begin = l.unpadded_offset(i);
    return world.slice(0, begin, begin + shape_numel(shape)).view(shape);
}

}  // namespace

bool saved_by_distributed_optimizer(const CheckpointArgs& args) {
    return bool_arg(args, "use_distributed_optimizer");
}

PyValue parameter_state_to_py(const CheckpointState& state) {
    MT_CHECK(state.optimizer.has_value(), "distrib_optim.pt: the state has no optimizer");
    const OptimizerCheckpoint& o = *state.optimizer;
    MT_CHECK(o.type == "adam", "not supported yet: the distributed optimizer's checkpoint of ",
             o.type, " (Megatron's distributed optimizer is Adam)");
    const std::vector<size_t> params = parameter_entries(state);
    MT_CHECK(o.params.size() == params.size(), "distrib_optim.pt: ", o.params.size(),
             " parameters have optimizer state but the model has ", params.size());
    const parallel::BufferLayout l = saved_layout(state, kDistribOptimName);
    const int64_t n = l.numel_unpadded();
    const DType dtype = model_dtype(state, kDistribOptimName);
    PyValue tensors = PyValue::dict();
    Tensor world[3];
    const char* keys[] = {"param", kMoments[0], kMoments[1]};
    for (int k = 0; k < 3; ++k) world[k] = Tensor::zeros({n}, DType::f32);
    for (size_t i = 0; i < params.size(); ++i) {
        const auto& [name, t] = state.model[params[i]];
        const OptimizerParamState& p = o.params[i];
        MT_CHECK(p.name == name, "distrib_optim.pt: optimizer state ", i, " is ", p.name,
                 ", the model tensor ", name);
        // "param" holds the f32 weights the optimizer updates: a bf16 / f16 model's masters.
        const Tensor& main = dtype == DType::f32 ? t.local : p.main_param;
        MT_CHECK(main.defined(), "distrib_optim.pt: no f32 master weights of the ",
                 dtype_name(dtype), " parameter ", name);
        piece(world[0], l, i, t.local.shape()).copy_from(main);
        for (int k = 1; k < 3; ++k)
            piece(world[k], l, i, t.local.shape()).copy_from(moment(p, keys[k]));
    }
    for (int k = 0; k < 3; ++k) tensors.dict_ref().set(keys[k], PyValue::tensor(world[k]));
    tensors.dict_ref().set("numel_unpadded", PyValue::integer(n));
    PyValue by_dtype = PyValue::dict();
    by_dtype.dict_ref().set(buffer_dtype_key(dtype), std::move(tensors));
    PyValue root = PyValue::dict();
    root.dict_ref().set("buckets_coalesced", PyValue::boolean(true));
    root.dict_ref().set(PyValue::integer(0), std::move(by_dtype));
    return root;
}

void parameter_state_from_py(const PyValue& root, CheckpointState& state, const std::string& file) {
    MT_CHECK(state.optimizer.has_value(), file, ": no optimizer param groups to go with it");
    OptimizerCheckpoint& o = *state.optimizer;
    // Megatron's ChainedOptimizer.save_parameter_state: [dense state, experts' state].
    MT_CHECK(root.kind() != PyKind::list, file,
             ": not supported yet: the expert-parallel chained distributed optimizer's state (a "
             "list of ",
             root.items().size(), " optimizers' states)");
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
             " gradient buffers; not supported yet: other than one (expert or mixed-dtype "
             "buffers)");
    MT_CHECK(buffers->kind() == PyKind::dict && buffers->dict_ref().items.size() == 1, file,
             ": buffer 0 is not one dtype's state");
    const auto& [dtype_key, tensors] = buffers->dict_ref().items.front();
    const DType dtype = model_dtype(state, file);
    MT_CHECK(io::repr(dtype_key) == io::repr(buffer_dtype_key(dtype)), file,
             ": not supported yet: a gradient buffer of ", io::repr(dtype_key), " for ",
             dtype_name(dtype),
             " weights (the buffer must hold the model's dtype and fp32 "
             "gradients)");

    const parallel::BufferLayout l = saved_layout(state, file);
    const int64_t n = l.numel_unpadded();
    const PyValue* numel = tensors.find("numel_unpadded");
    MT_CHECK(numel && numel->as_int() == n, file, ": numel_unpadded is ",
             numel ? std::to_string(numel->as_int()) : std::string("missing"),
             " but the model's parameters take ", n,
             " elements in the gradient buffer (a different model, or bucket settings the args "
             "do not say)");
    auto world = [&](const char* key) {
        const PyValue* v = tensors.find(key);
        MT_CHECK(v && v->kind() == PyKind::tensor, file, ": no tensor '", key, "'");
        const Tensor& t = v->as_tensor();
        MT_CHECK(t.dtype() == DType::f32 && t.shape() == Shape{n}, file, ": '", key, "' is ",
                 t.describe(), ", expected f32 [", n, "]");
        return t;
    };
    const Tensor param = world("param");
    const Tensor moments[2] = {world(kMoments[0]), world(kMoments[1])};
    const std::vector<size_t> params = parameter_entries(state);
    MT_CHECK(o.params.size() == params.size(), file, ": ", o.params.size(),
             " parameters in the optimizer groups but ", params.size(), " in the model");
    const bool fp32 = !bool_arg(state.args, "fp16") && !bool_arg(state.args, "bf16");
    for (size_t i = 0; i < params.size(); ++i) {
        const auto& [name, t] = state.model[params[i]];
        const Shape& shape = t.local.shape();
        if (fp32 && t.local.dtype() == DType::f32) {
            const Tensor master = piece(param, l, i, shape).contiguous();
            const Tensor model = t.local.contiguous();
            MT_CHECK(std::memcmp(master.raw_data(), model.raw_data(),
                                 size_t(model.numel()) * sizeof(float)) == 0,
                     file, ": the master weights of ", name,
                     " are not the model's: the file's layout is not the one the args describe");
        }
        OptimizerParamState& p = o.params[i];
        p.exp_avg = piece(moments[0], l, i, shape);
        p.exp_avg_sq = piece(moments[1], l, i, shape);
        if (dtype != DType::f32) p.main_param = piece(param, l, i, shape);
    }
}

}  // namespace mt::plugins::torch_ckpt
