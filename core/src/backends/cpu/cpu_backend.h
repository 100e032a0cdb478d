// The CPU backend's class: memory and GEMM in backend_cpu.cpp, each op family in its own file
// beside it (norm.cpp, attention.cpp, ...), all on host memory with OpenMP threads.
#pragma once

#include "mt/backend.h"

namespace mt::cpu {

using ops::AdamWConfig;
using ops::AttentionConfig;
using ops::NormConfig;
using ops::RopeTables;
using ops::SgdConfig;
using ops::SoftmaxMask;
using ops::UnaryOp;

class CpuBackend final : public Backend {
  public:
    std::string_view name() const override { return "cpu"; }
    Device device() const override { return {}; }
    std::shared_ptr<Storage> allocate(int64_t bytes) override;
    // Fresh zero pages from the kernel for large tensors (Tensor::zeros): untouched, they cost
    // no memory, so a model built only to list its parameters, or whose values a checkpoint
    // replaces, does not cost its size in values and grads.
    Tensor zeros(const Shape& shape, DType dtype) override { return Tensor::zeros(shape, dtype); }
    void copy(const Tensor& src, Tensor& dst) override;
    void synchronize() override {}
    void fill(Tensor& x, double value) override;
    void cast(const Tensor& src, Tensor& dst) override;

    void gemm(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b, float beta,
              Tensor& c) override;
    void gemm_batched(Transpose ta, Transpose tb, float alpha, const Tensor& a, const Tensor& b,
                      float beta, Tensor& c) override;
    // f32 groups of at most kSkinnyRows rows (a MoE layer's experts in decoding) in one pass;
    // otherwise a gemm per group.
    void grouped_gemm_nt(const Tensor& x, const std::vector<int64_t>& rows,
                         const std::vector<Tensor>& weights, Tensor& y) override;

    void unary_forward(UnaryOp op, const Tensor& x, Tensor& y) override;
    void unary_backward(UnaryOp op, const Tensor& x, const Tensor& dy, Tensor& dx) override;
    void glu_forward(const ops::GluConfig& glu, const Tensor& x, Tensor& y) override;
    void glu_backward(const ops::GluConfig& glu, const Tensor& x, const Tensor& dy,
                      Tensor& dx) override;
    void add(const Tensor& a, const Tensor& b, Tensor& y) override;
    void scale(const Tensor& x, float alpha, Tensor& y) override;
    void axpy(float alpha, const Tensor& x, Tensor& y) override;
    void add_bias(const Tensor& bias, Tensor& y) override;
    void add_column_sums(const Tensor& dy, Tensor& dbias) override;
    void scale_rows(const Tensor& x, const Tensor& s, Tensor& y) override;
    void row_dots(const Tensor& a, const Tensor& b, Tensor& out) override;

    double dot(const Tensor& a, const Tensor& b) override;
    double sum(const Tensor& x) override;
    int64_t count_zeros(const Tensor& x) override;
    double abs_max(const Tensor& x) override;
    void fp8_quantize(const Tensor& x, float scale, ops::Fp8Type type, Tensor& y) override;
    void fp8_quantize_blocks(const Tensor& x, const ops::Fp8Blocks& blocks, Tensor& y) override;

    void layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                            const NormConfig& config, Tensor& y, Tensor& mean,
                            Tensor& rstd) override;
    void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                             const Tensor& mean, const Tensor& rstd, const NormConfig& config,
                             Tensor& dx, Tensor& dweight, Tensor& dbias) override;
    void rms_norm_forward(const Tensor& x, const Tensor& weight, const NormConfig& config,
                          Tensor& y, Tensor& rstd) override;
    void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                           const Tensor& rstd, const NormConfig& config, Tensor& dx,
                           Tensor& dweight) override;

    void softmax_forward(const Tensor& x, float scale, SoftmaxMask mask, Tensor& y) override;
    void softmax_backward(const Tensor& y, const Tensor& dy, float scale, Tensor& dx) override;

    void cross_entropy_forward(const Tensor& logits, const Tensor& targets, Tensor& losses,
                               Tensor& lse) override;
    void cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                const Tensor& dlosses, Tensor& dlogits) override;
    void cross_entropy_shard_forward(const Tensor& logits, const Tensor& targets,
                                     int64_t vocab_start, Tensor& lse,
                                     Tensor& target_logit) override;
    void cross_entropy_shard_backward(const Tensor& logits, const Tensor& targets,
                                      int64_t vocab_start, const Tensor& lse, const Tensor& dlosses,
                                      Tensor& dlogits) override;

    void embedding_forward(const Tensor& table, const Tensor& ids, Tensor& y) override;
    void embedding_backward(const Tensor& dy, const Tensor& ids, Tensor& dtable) override;
    void embedding_shard_forward(const Tensor& table, const Tensor& ids, int64_t vocab_start,
                                 Tensor& y) override;
    void embedding_shard_backward(const Tensor& dy, const Tensor& ids, int64_t vocab_start,
                                  Tensor& dtable) override;

    RopeTables rope_tables(int64_t seq_len, const ops::RopeConfig& config, DType dtype) override;
    void rope_forward(const Tensor& x, const RopeTables& tables, Tensor& y) override;
    void rope_backward(const Tensor& dy, const RopeTables& tables, Tensor& dx) override;

    void dropout_forward(const Tensor& x, float p, uint64_t seed, uint64_t offset,
                         Tensor& y) override;
    void dropout_backward(const Tensor& dy, float p, uint64_t seed, uint64_t offset,
                          Tensor& dx) override;
    void uniform_scale(const Tensor& x, float low, float high, uint64_t seed, uint64_t offset,
                       Tensor& y) override;

    void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v,
                           const AttentionConfig& config, Tensor& out, Tensor& lse) override;
    void attention_merge(Tensor& out, Tensor& lse, const Tensor& out_part, const Tensor& lse_part,
                         int64_t row_begin, int64_t row_end) override;
    void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                            const Tensor& lse, const Tensor& dout, const AttentionConfig& config,
                            Tensor& dq, Tensor& dk, Tensor& dv) override;
    void attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                          int64_t past, int64_t window, double scale, const Tensor& bias,
                          const Tensor& sink, Tensor& out) override;

    void depthwise_conv1d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                  Tensor& y) override;
    void depthwise_conv1d_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                   Tensor& dx, Tensor& dweight, Tensor& dbias) override;
    void ssm_scan_forward(const Tensor& x, const Tensor& dt, const Tensor& dt_bias,
                          const Tensor& A_log, const Tensor& B, const Tensor& C, const Tensor& D,
                          Tensor& y, Tensor& state) override;
    void ssm_scan_backward(const Tensor& x, const Tensor& dt, const Tensor& dt_bias,
                           const Tensor& A_log, const Tensor& B, const Tensor& C, const Tensor& D,
                           const Tensor& dy, Tensor& dx, Tensor& ddt, Tensor& dB, Tensor& dC,
                           Tensor& ddt_bias, Tensor& dA_log, Tensor& dD) override;
    void gated_rms_norm_forward(const Tensor& x, const Tensor& z, const Tensor& weight,
                                int64_t group_size, double eps, Tensor& y, Tensor& rstd) override;
    void gated_rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& z,
                                 const Tensor& weight, const Tensor& rstd, int64_t group_size,
                                 Tensor& dx, Tensor& dz, Tensor& dweight) override;
    void adamw_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                    const AdamWConfig& config, int64_t step) override;
    void adamw_step_rounded(Tensor& main_param, const Tensor& grad, Tensor& exp_avg,
                            Tensor& exp_avg_sq, const ops::AdamWConfig& config, int64_t step,
                            Tensor& model_param) override;
    void sgd_step(Tensor& param, const Tensor& grad, Tensor& momentum_buffer,
                  const SgdConfig& config, int64_t step) override;

  private:
    // gemm() for bf16 A and B (gemm_bf16.h).
    static void gemm_bf16_tensors(Transpose ta, Transpose tb, float alpha, const Tensor& a,
                                  const Tensor& b, float beta, Tensor& c);
    // C = op(A) op(B) (alpha, beta) for f64 matrices through cblas_dgemm (gemm_f64.cpp).
    static void gemm_f64(Transpose ta, Transpose tb, double alpha, const Tensor& a, const Tensor& b,
                         double beta, Tensor& c);
};

}  // namespace mt::cpu
