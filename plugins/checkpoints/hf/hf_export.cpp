#include "hf_export.h"

#include "hf_architecture.h"
#include "hf_layout.h"
#include "mt/checkpoint/reshard.h"
#include "mt/error.h"

namespace mt::plugins::hf {

Lazy Lazy::map(Shape to, std::function<Tensor(const Tensor&)> f) const {
    return {std::move(to), [m = make, f = std::move(f)] { return f(m()); }};
}

Lazy Lazy::rows(int64_t from, int64_t to) const {
    Shape s = shape;
    s[0] = to - from;
    return map(s, [from, to](const Tensor& t) { return t.slice(0, from, to); });
}

Lazy Lazy::transpose() const {
    return map({shape[1], shape[0]}, [](const Tensor& t) { return transposed(t); });
}

LazyQkv ungroup(const Lazy& qkv, int64_t nq, int64_t ng, int64_t hd) {
    auto part = [&](int64_t heads, Tensor Qkv::*member) {
        Shape s = qkv.shape;
        s[0] = heads * hd;
        return qkv.map(
            s, [=](const Tensor& t) { return std::move(ungroup_qkv(t, nq, ng, hd).*member); });
    };
    return {part(nq, &Qkv::q), part(ng, &Qkv::k), part(ng, &Qkv::v)};
}

HfExport::HfExport(const CheckpointState& state, std::function<Tensor(size_t)> make,
                   const HfConfig& c, DType dtype)
    : c_(c),
      dtype_(dtype),
      make_(std::make_shared<const std::function<Tensor(size_t)>>(std::move(make))) {
    for (size_t i = 0; i < state.model.size(); ++i)
        by_name_.emplace(state.model[i].first, Source{&state.model[i].second, i});
}

Lazy HfExport::get(const std::string& name, const Shape& shape) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) it = by_name_.find(other_impl_name(name));
    MT_CHECK(it != by_name_.end(), "--saver hf: the checkpoint has no tensor '", name, "'");
    const ShardedTensor& s = *it->second.tensor;
    MT_CHECK(s.local.shape() == s.global_shape, "--saver hf: '", name, "' is a ",
             shape_str(s.local.shape()), " piece of ", shape_str(s.global_shape),
             ": Hugging Face folders hold whole tensors");
    MT_CHECK(s.local.shape() == shape, "--saver hf: '", name, "' has shape ",
             shape_str(s.local.shape()), ", the model's args imply ", shape_str(shape));
    return {shape, [make = make_, i = it->second.index, dtype = dtype_] {
                const Tensor t = (*make)(i);
                return t.dtype() == dtype ? t : cast_float(t, dtype);
            }};
}

Lazy HfExport::vocab_table(const std::string& name) const {
    auto it = by_name_.find(name);
    MT_CHECK(it != by_name_.end(), "--saver hf: the checkpoint has no tensor '", name, "'");
    const Shape& global = it->second.tensor->global_shape;
    const int64_t rows = global.empty() ? 0 : global[0];
    MT_CHECK(rows >= c_.vocab_size, "--saver hf: '", name, "' has ", rows,
             " rows, fewer than the vocabulary's ", c_.vocab_size);
    const Shape shape = global.size() == 1 ? Shape{rows} : Shape{rows, c_.hidden_size};
    return get(name, shape).rows(0, c_.vocab_size);
}

std::string HfExport::expert_fc(const std::string& mlp, int fc, int64_t j) const {
    const std::string n = std::to_string(fc), e = std::to_string(j);
    return has(mlp + "experts.linear_fc1.weight0")
               ? mlp + "experts.linear_fc" + n + ".weight" + e
               : mlp + "experts.local_experts." + e + ".linear_fc" + n + ".weight";
}

void HfExport::put(std::string name, Lazy t) {
    out_.push_back({std::move(name), std::move(t.shape), dtype_, std::move(t.make)});
}

void HfExport::put_gate_up(const std::string& gate, const std::string& up, const Lazy& fc1,
                           int64_t f) {
    put(gate, fc1.rows(0, f));
    put(up, fc1.rows(f, 2 * f));
}

std::vector<TensorToWrite> hf_tensors(const CheckpointState& state,
                                      std::function<Tensor(size_t)> make, const HfConfig& config,
                                      DType dtype) {
    HfExport out(state, std::move(make), config, dtype);
    config.arch->export_tensors(out);
    return out.take();
}

}  // namespace mt::plugins::hf
