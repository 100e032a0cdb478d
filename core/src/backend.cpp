// The device-independent part of Backend: tensors from allocate(), and the "not implemented"
// error every op a backend leaves out throws.
#include "mt/backend.h"

#include <string>

namespace mt {

Tensor Backend::empty(const Shape& shape, DType dtype) {
    return Tensor::from_storage(allocate(shape_numel(shape) * dtype_size(dtype)), shape, dtype);
}

Tensor Backend::zeros(const Shape& shape, DType dtype) {
    Tensor t = empty(shape, dtype);
    fill(t, 0.0);
    return t;
}

Tensor Backend::contiguous(const Tensor& x) {
    if (x.device() == device() && x.is_contiguous()) return x;
    Tensor t = empty(x.shape(), x.dtype());
    copy(x, t);
    return t;
}

Tensor Backend::cast_to(const Tensor& x, DType dtype) {
    if (x.dtype() == dtype) return x;
    Tensor y = empty(x.shape(), dtype);
    cast(x, y);
    return y;
}

void Backend::grouped_gemm_nt(const Tensor& x, const std::vector<int64_t>& rows,
                              const std::vector<Tensor>& weights, Tensor& y) {
    MT_CHECK(rows.size() == weights.size(), "grouped_gemm_nt: ", rows.size(), " row groups for ",
             weights.size(), " weights");
    int64_t begin = 0;
    for (size_t j = 0; j < rows.size(); ++j) {
        const int64_t end = begin + rows[j];
        MT_CHECK(rows[j] >= 0 && end <= x.size(0) && end <= y.size(0), "grouped_gemm_nt: group ", j,
                 " ends at row ", end, " of ", x.describe(), " and ", y.describe());
        if (rows[j] > 0) {
            Tensor yj = y.slice(0, begin, end);
            gemm(Transpose::no, Transpose::yes, 1.0f, x.slice(0, begin, end), weights[j], 0.0f, yj);
        }
        begin = end;
    }
    MT_CHECK(begin == x.size(0), "grouped_gemm_nt: the groups hold ", begin, " of x's ", x.size(0),
             " rows");
}

void Backend::unsupported(const char* op) const {
    MT_FAIL("the ", std::string(name()), " backend does not implement ", op, " yet");
}

// Every op a backend may leave out: the default names itself in the error.
#define MT_UNSUPPORTED(op, ...)     \
    void Backend::op(__VA_ARGS__) { \
        unsupported(#op);           \
    }

MT_UNSUPPORTED(fill, Tensor&, double)
MT_UNSUPPORTED(cast, const Tensor&, Tensor&)
MT_UNSUPPORTED(unary_forward, ops::UnaryOp, const Tensor&, Tensor&)
MT_UNSUPPORTED(unary_backward, ops::UnaryOp, const Tensor&, const Tensor&, Tensor&)
MT_UNSUPPORTED(glu_forward, const ops::GluConfig&, const Tensor&, Tensor&)
MT_UNSUPPORTED(glu_backward, const ops::GluConfig&, const Tensor&, const Tensor&, Tensor&)
MT_UNSUPPORTED(add, const Tensor&, const Tensor&, Tensor&)
MT_UNSUPPORTED(scale, const Tensor&, float, Tensor&)
MT_UNSUPPORTED(axpy, float, const Tensor&, Tensor&)
MT_UNSUPPORTED(add_bias, const Tensor&, Tensor&)
MT_UNSUPPORTED(add_column_sums, const Tensor&, Tensor&)
MT_UNSUPPORTED(scale_rows, const Tensor&, const Tensor&, Tensor&)
MT_UNSUPPORTED(row_dots, const Tensor&, const Tensor&, Tensor&)
MT_UNSUPPORTED(layer_norm_forward, const Tensor&, const Tensor&, const Tensor&,
               const ops::NormConfig&, Tensor&, Tensor&, Tensor&)
MT_UNSUPPORTED(layer_norm_backward, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
               const Tensor&, const ops::NormConfig&, Tensor&, Tensor&, Tensor&)
MT_UNSUPPORTED(rms_norm_forward, const Tensor&, const Tensor&, const ops::NormConfig&, Tensor&,
               Tensor&)
MT_UNSUPPORTED(rms_norm_backward, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
               const ops::NormConfig&, Tensor&, Tensor&)
MT_UNSUPPORTED(softmax_forward, const Tensor&, float, ops::SoftmaxMask, Tensor&)
MT_UNSUPPORTED(softmax_backward, const Tensor&, const Tensor&, float, Tensor&)
MT_UNSUPPORTED(cross_entropy_forward, const Tensor&, const Tensor&, Tensor&, Tensor&)
MT_UNSUPPORTED(cross_entropy_backward, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
               Tensor&)
MT_UNSUPPORTED(cross_entropy_shard_forward, const Tensor&, const Tensor&, int64_t, Tensor&, Tensor&)
MT_UNSUPPORTED(cross_entropy_shard_backward, const Tensor&, const Tensor&, int64_t, const Tensor&,
               const Tensor&, Tensor&)
MT_UNSUPPORTED(embedding_forward, const Tensor&, const Tensor&, Tensor&)
MT_UNSUPPORTED(embedding_backward, const Tensor&, const Tensor&, Tensor&)
MT_UNSUPPORTED(embedding_shard_forward, const Tensor&, const Tensor&, int64_t, Tensor&)
MT_UNSUPPORTED(embedding_shard_backward, const Tensor&, const Tensor&, int64_t, Tensor&)
MT_UNSUPPORTED(rope_forward, const Tensor&, const ops::RopeTables&, Tensor&)
MT_UNSUPPORTED(rope_backward, const Tensor&, const ops::RopeTables&, Tensor&)
MT_UNSUPPORTED(dropout_forward, const Tensor&, float, uint64_t, uint64_t, Tensor&)
MT_UNSUPPORTED(dropout_backward, const Tensor&, float, uint64_t, uint64_t, Tensor&)
MT_UNSUPPORTED(uniform_scale, const Tensor&, float, float, uint64_t, uint64_t, Tensor&)
MT_UNSUPPORTED(attention_forward, const Tensor&, const Tensor&, const Tensor&,
               const ops::AttentionConfig&, Tensor&, Tensor&)
MT_UNSUPPORTED(attention_backward, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
               const Tensor&, const Tensor&, const ops::AttentionConfig&, Tensor&, Tensor&, Tensor&)
MT_UNSUPPORTED(attention_merge, Tensor&, Tensor&, const Tensor&, const Tensor&, int64_t, int64_t)
MT_UNSUPPORTED(attention_cached, const Tensor&, const Tensor&, const Tensor&, int64_t, int64_t,
               double, const Tensor&, const Tensor&, Tensor&)
MT_UNSUPPORTED(depthwise_conv1d_forward, const Tensor&, const Tensor&, const Tensor&, Tensor&)
MT_UNSUPPORTED(depthwise_conv1d_backward, const Tensor&, const Tensor&, const Tensor&, Tensor&,
               Tensor&, Tensor&)
MT_UNSUPPORTED(ssm_scan_forward, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
               const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&)
MT_UNSUPPORTED(ssm_scan_backward, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
               const Tensor&, const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&,
               Tensor&, Tensor&, Tensor&, Tensor&, Tensor&)
MT_UNSUPPORTED(gated_rms_norm_forward, const Tensor&, const Tensor&, const Tensor&, int64_t, double,
               Tensor&, Tensor&)
MT_UNSUPPORTED(gated_rms_norm_backward, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
               const Tensor&, int64_t, Tensor&, Tensor&, Tensor&)
MT_UNSUPPORTED(adamw_step, Tensor&, const Tensor&, Tensor&, Tensor&, const ops::AdamWConfig&,
               int64_t)
MT_UNSUPPORTED(fp8_quantize, const Tensor&, float, ops::Fp8Type, Tensor&)
MT_UNSUPPORTED(fp8_quantize_blocks, const Tensor&, const ops::Fp8Blocks&, Tensor&)
MT_UNSUPPORTED(sgd_step, Tensor&, const Tensor&, Tensor&, const ops::SgdConfig&, int64_t)

#undef MT_UNSUPPORTED

void Backend::adamw_step_rounded(Tensor& main_param, const Tensor& grad, Tensor& exp_avg,
                                 Tensor& exp_avg_sq, const ops::AdamWConfig& config, int64_t step,
                                 Tensor& model_param) {
    adamw_step(main_param, grad, exp_avg, exp_avg_sq, config, step);
    cast(main_param, model_param);
}

double Backend::dot(const Tensor&, const Tensor&) {
    unsupported("dot");
}
double Backend::sum(const Tensor&) {
    unsupported("sum");
}
int64_t Backend::count_zeros(const Tensor&) {
    unsupported("count_zeros");
}
double Backend::abs_max(const Tensor&) {
    unsupported("abs_max");
}
ops::RopeTables Backend::rope_tables(int64_t, const ops::RopeConfig&, DType) {
    unsupported("rope_tables");
}

}  // namespace mt
