// Data, tensor, sequence and context parallelism and the distributed optimizer (with MoE experts
// sharded over their own group) against the one-process run, under mpirun (2 and 4 ranks): each
// rank trains the same model alone first (a group of one), then as a rank of the layout, and the
// two loss curves and grad norms must agree.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "mt/backend.h"
#include "mt/data/gpt_dataset.h"
#include "mt/kernels/bf16.h"
#include "mt/model_chunks.h"
#include "mt/nn/parameter.h"
#include "mt/optim/lr_schedule.h"
#include "mt/optim/optimizer.h"
#include "mt/parallel/collectives.h"
#include "mt/parallel/grad_buffer.h"
#include "mt/parallel/parallel_state.h"
#include "mt/parallel/world.h"
#include "mt/registry.h"
#include "mt/train/trainer.h"
#include "register.h"

namespace mt::plugins::gpt {
namespace {

constexpr int64_t kSeq = 16, kVocab = 500, kSamples = 400;

// Deterministic, learnable pseudo-text (each sample counts up in steps of 7 from a hashed
// start): the same samples on every rank.
class SyntheticData final : public data::GPTSampleDataset {
  public:
    int64_t size() const override { return kSamples; }
    data::GPTSample get(int64_t s) const override {
        data::GPTSample out;
        const int64_t start = int64_t((uint64_t(s) * 0x9E3779B97F4A7C15ull >> 40) % kVocab);
        auto token = [&](int64_t t) { return (start + 7 * t) % kVocab; };
        for (int64_t t = 0; t < kSeq; ++t) {
            out.tokens.push_back(token(t));
            out.labels.push_back(token(t + 1));
            out.loss_mask.push_back((s + t) % 11 == 0 ? 0.f : 1.f);
            out.position_ids.push_back(t);
            out.document_start.push_back(0);
        }
        return out;
    }
    data::Split split() const override { return data::Split::train; }
};

ModelArgs gpt2_args() {
    return {{"num-layers", "2"},
            {"hidden-size", "32"},
            {"num-attention-heads", "4"},
            {"seq-length", std::to_string(kSeq)},
            {"max-position-embeddings", std::to_string(kSeq)},
            // The same padded vocabulary at every tensor-parallel size.
            {"padded-vocab-size", "512"},
            {"hidden-dropout", "0"},
            {"attention-dropout", "0"}};
}

ModelArgs llama_args() {
    ModelArgs a = gpt2_args();
    for (const char* s : {"swiglu", "group-query-attention", "disable-bias-linear",
                          "untie-embeddings-and-output-weights"})
        a[s] = "";
    a["normalization"] = "RMSNorm";
    a["position-embedding-type"] = "rope";
    a["num-query-groups"] = "2";
    return a;
}

// Llama 3.x's rope (scaled frequencies, here interleaved) with per-head q/k norms, whose grads
// each tensor-parallel rank sums from its own heads.
ModelArgs llama3_qk_norm_args() {
    ModelArgs a = llama_args();
    a["use-rope-scaling"] = a["rotary-interleaved"] = a["qk-layernorm"] = "";
    a["rotary-base"] = "500000";
    return a;
}

// Multi-latent attention (DeepSeek-V3's shape in small): q-lora, q/kv norms, YaRN; the
// down-projections' outputs split over 2 tensor-parallel ranks, the shared rope key's gradient
// summed over every rank's heads.
ModelArgs mla_args() {
    ModelArgs a = llama_args();
    a.erase("group-query-attention");
    a.erase("num-query-groups");
    for (auto [k, v] : {std::pair{"multi-latent-attention", ""},
                        {"q-lora-rank", "12"},
                        {"kv-lora-rank", "10"},
                        {"qk-head-dim", "6"},
                        {"qk-pos-emb-head-dim", "4"},
                        {"v-head-dim", "5"},
                        {"qk-layernorm", ""},
                        {"rotary-scaling-factor", "4"},
                        {"mscale", "0.9"},
                        {"mscale-all-dim", "0.7"},
                        // Weights large enough that the rope key's gradient counts.
                        {"init-method-std", "0.3"}})
        a[k] = v;
    return a;
}

struct Layout {
    int tp = 1;
    bool sequence_parallel = false;
    bool distributed_optimizer = false;
    bool overlap_grad_reduce = false;
    DType dtype = DType::f32;  // bf16: activations reduced in bf16 over the tensor-parallel ranks
    int cp = 1;                // --context-parallel-size
    int pp = 1;                // --pipeline-model-parallel-size
    int64_t first_stage_layers = -1, last_stage_layers = -1;  // uneven stages
    int virtual_stages = 1;  // model chunks per stage (interleaved 1F1B)
    int ep = 1;              // --expert-model-parallel-size
    // --grad-reduce-in-bf16 (with dtype bf16): grads accumulated and reduced in bf16.
    bool grad_reduce_in_bf16 = false;
};

// A Llama-style MoE: both layers 4 experts, top-2, with the load-balancing loss.
ModelArgs moe_args() {
    ModelArgs a = llama_args();
    a["num-experts"] = "4";
    a["moe-ffn-hidden-size"] = "48";
    a["moe-aux-loss-coeff"] = "1e-2";
    return a;
}

struct Curve {
    std::vector<double> losses, grad_norms;
    bool reports_loss = true;  // the last pipeline stage (the others compute no loss)
    // The MoE experts' elements on this rank, and those the optimizer keeps state for.
    int64_t expert_elements = 0, expert_state_elements = 0;
};

// 10 iterations of Adam with clipping, global batch 8 in micro-batches of 2, of the `family`
// model ("gpt", or "mamba": a hybrid model).
Curve train(const ModelArgs& args, std::unique_ptr<Communicator> world, const Layout& layout,
            const std::string& family) {
    parallel::ParallelConfig pc;
    pc.tensor_parallel = layout.tp;
    pc.context_parallel = layout.cp;
    pc.pipeline_parallel = layout.pp;
    pc.first_stage_layers = layout.first_stage_layers;
    pc.last_stage_layers = layout.last_stage_layers;
    pc.virtual_stages = layout.virtual_stages;
    pc.expert_parallel = layout.ep;
    parallel::ParallelState state(std::move(world), pc);
    auto backend = make_cpu_backend();
    const BuildContext context{*backend, state, layout.sequence_parallel, layout.dtype};
    Registry registry;
    register_gpt(registry);
    auto model = build_stage_model(*registry.create_model(family), args, context);
    model->initialize(1234);

    parallel::DataParallelConfig dpc;
    dpc.distributed_optimizer = layout.distributed_optimizer;
    dpc.overlap_grad_reduce = layout.overlap_grad_reduce;
    dpc.bucket_size = layout.overlap_grad_reduce ? 3000 : 0;  // several buckets
    if (layout.grad_reduce_in_bf16) dpc.reduce_dtype = DType::bf16;
    parallel::GradBuffers buffers = parallel::make_grad_buffers(model->parameters(), state, dpc);
    optim::Optimizer optimizer(*backend, buffers.optimized, optim::OptimizerConfig{});
    optim::LrScheduleFlags f;
    f.train_iters = 10;
    f.global_batch_size = 8;
    f.lr = 3e-3;
    f.min_lr = 3e-4;
    f.lr_decay_style = "cosine";
    f.lr_warmup_iters = 2;
    f.start_weight_decay = f.end_weight_decay = 0.1;
    optim::LrScheduler scheduler(optim::schedule_config_from_flags(f));
    train::TrainerOptions o;
    o.micro_batch_size = 2;
    o.global_batch_size = 8;
    o.train_iters = 10;
    o.log_interval = 0;
    o.eval_interval = 0;
    o.clip_grad = 0.5;  // clipping engages: the norm must be the whole model's
    if (layout.grad_reduce_in_bf16) o.main_grad_dtype = DType::bf16;
    train::Trainer trainer(*model, optimizer, scheduler, o, [](const std::string&) {});
    trainer.set_parallel(state, buffers.dense.get(), buffers.experts.get());
    SyntheticData data;
    trainer.train(data, nullptr);
    Curve c{trainer.losses(), trainer.grad_norms(), state.pp().rank() == state.pp().size() - 1};
    for (const nn::Parameter* p : model->parameters())
        if (p->expert) c.expert_elements += p->value.numel();
    for (const nn::Parameter* p : optimizer.parameters())
        if (p->expert) c.expert_state_elements += p->value.numel();
    return c;
}

Communicator& world() {
    static std::unique_ptr<Communicator> w =
        parallel::make_world_communicator(Registry::global(), "cpu");
    return *w;
}

// The layout's curve (into `out`, if given) must be the one-process run's.
void check(const ModelArgs& args, const Layout& layout, Curve* out = nullptr,
           const std::string& family = "gpt") {
    Communicator& w = world();
    // Alone, the "parallel" run would be the one-process run again and prove nothing.
    if (w.size() < 2) GTEST_SKIP() << "run under mpiexec with 2 or 4 ranks (ctest does)";
    if (w.size() % (layout.tp * layout.cp * layout.pp) != 0 ||
        w.size() / (layout.tp * layout.cp * layout.pp) % layout.ep != 0)
        GTEST_SKIP() << "tp " << layout.tp << " x cp " << layout.cp << " x pp " << layout.pp
                     << " (ep " << layout.ep << ") on " << w.size();
    Layout alone;
    alone.dtype = layout.dtype;
    alone.grad_reduce_in_bf16 = layout.grad_reduce_in_bf16;
    const Curve single = train(args, make_local_communicator(), alone, family);
    const Curve ranks = train(args, w.split(0, w.rank()), layout, family);
    ASSERT_EQ(single.losses.size(), 10u);
    ASSERT_EQ(ranks.losses.size(), 10u);
    // bf16 rounds the tensor-parallel partial sums before adding them.
    const double loss_tolerance = layout.dtype == DType::f32 ? 1e-5 : 5e-3;
    const double norm_tolerance = layout.dtype == DType::f32 ? 1e-4 : 3e-2;
    for (size_t i = 0; i < 10; ++i) {
        if (ranks.reports_loss)
            EXPECT_NEAR(ranks.losses[i], single.losses[i],
                        loss_tolerance * std::abs(single.losses[i]))
                << "iteration " << i + 1 << " on rank " << w.rank();
        EXPECT_NEAR(ranks.grad_norms[i], single.grad_norms[i],
                    norm_tolerance * single.grad_norms[i])
            << "iteration " << i + 1 << " on rank " << w.rank();
    }
    EXPECT_LT(single.losses.back(), single.losses.front());
    if (out) *out = ranks;
}

TEST(ParallelTraining, DataParallel) {
    check(gpt2_args(), {1, false, false, false});
    check(llama_args(), {1, false, false, true});
}

TEST(ParallelTraining, DataParallelDistributedOptimizer) {
    check(gpt2_args(), {1, false, true, false});
    check(llama_args(), {1, false, true, true});
}

// MoE experts under the distributed optimizer (expert parallelism 1: every rank holds every
// expert): their optimizer state is sharded over the expert-data-parallel ranks, here all of
// them, in a buffer of their own, and the numbers are the one-process run's.
TEST(ParallelTraining, DistributedOptimizerShardsTheExperts) {
    Curve c;
    check(moe_args(), {1, false, true, true}, &c);
    if (c.losses.empty()) return;  // skipped
    const int64_t ranks = world().size();
    EXPECT_GT(c.expert_elements, 0);
    // Each rank's shard: its 1/ranks part of every (padded) bucket, near an even split.
    EXPECT_LE(c.expert_state_elements, c.expert_elements / ranks * 5 / 4);
    EXPECT_GT(c.expert_state_elements, 0);
    std::vector<double> total{double(c.expert_state_elements)};
    parallel::all_reduce_values(world(), total, ReduceOp::sum);
    EXPECT_EQ(int64_t(total[0]), c.expert_elements);  // the shards cover the experts once
}

TEST(ParallelTraining, TensorParallel) {
    check(gpt2_args(), {2, false, false, false});
    check(llama_args(), {2, false, false, false});
    check(llama3_qk_norm_args(), {2, false, false, false});
}

// bf16: activations reduced in bf16 over the tensor-parallel ranks; the distributed optimizer
// shards f32 masters of the bf16 weights and gathers the updated bf16 weights.
TEST(ParallelTraining, Bf16) {
    Layout layout{2, false, false, false};
    layout.dtype = DType::bf16;
    check(llama_args(), layout);
    layout.sequence_parallel = true;
    check(gpt2_args(), layout);
    check(llama_args(), Layout{1, false, true, false, DType::bf16});
    check(gpt2_args(), Layout{2, true, true, true, DType::bf16});
}

// --grad-reduce-in-bf16: the grads accumulate over the micro-batches in bf16 and are summed over
// the data-parallel ranks in bf16 (all-reduced, or reduce-scattered by the distributed
// optimizer). The curves follow the one-process run that rounds the same way; and that run's
// grad norms are not those of the f32 main grads, but near them.
TEST(ParallelTraining, GradReduceInBf16) {
    Layout layout;
    layout.dtype = DType::bf16;
    layout.grad_reduce_in_bf16 = true;
    check(gpt2_args(), layout);
    layout.distributed_optimizer = true;
    layout.overlap_grad_reduce = true;
    check(llama_args(), layout);
    if (::testing::Test::IsSkipped()) return;
    Layout f32_grads;
    f32_grads.dtype = DType::bf16;
    const Curve rounded = train(gpt2_args(), make_local_communicator(), layout, "gpt");
    const Curve exact = train(gpt2_args(), make_local_communicator(), f32_grads, "gpt");
    bool differs = false;
    for (size_t i = 0; i < exact.grad_norms.size(); ++i) {
        differs = differs || rounded.grad_norms[i] != exact.grad_norms[i];
        EXPECT_NEAR(rounded.grad_norms[i], exact.grad_norms[i], 2e-2 * exact.grad_norms[i]);
    }
    EXPECT_TRUE(differs) << "the bf16 main grads gave the f32 ones' grad norms exactly";
}

// The buffer's part of --grad-reduce-in-bf16: a bucket is sent and summed in bf16 (MPI combines
// each pair of elements in f32 and rounds, as NCCL sums bf16), by all-reduce or the distributed
// optimizer's reduce-scatter, and widened back into the f32 grads. At 2 ranks the sum is
// bf16(bf16(g0) + bf16(g1)) exactly; the f32 sum would not be.
TEST(ParallelTraining, GradBufferSumsInBf16) {
    Communicator& w = world();
    if (w.size() != 2) GTEST_SKIP() << "run under mpiexec with 2 ranks (ctest does)";
    auto round = [](float x) { return k::bf16_to_float(k::float_to_bf16(x)); };
    // Rank r's grad i: not a bf16 value (8 significant bits), different on each rank.
    auto grad = [](int rank, int64_t i) {
        return 1.0f + float(rank + 1) * 0x1p-10f + float(i % 37) * 0x1p-13f;
    };
    auto backend = make_cpu_backend();
    for (bool distributed : {false, true}) {
        nn::Parameter p = nn::make_parameter(*backend, "p", {256}, DType::f32, {}, true);
        parallel::DataParallelConfig c;
        c.distributed_optimizer = distributed;
        c.reduce_dtype = DType::bf16;
        auto group = w.split(0, w.rank());
        parallel::GradBuffer buffer({&p}, *group, c);
        float* g = p.grad.data<float>();
        for (int64_t i = 0; i < 256; ++i) g[i] = grad(w.rank(), i);
        buffer.finish_grad_sync();
        // The elements this rank holds the sum of: all, or its shard.
        int64_t lo = 0, hi = 256;
        if (distributed) {
            ASSERT_EQ(buffer.shard().size(), 1u);
            lo = buffer.shard()[0].param_begin;
            hi = buffer.shard()[0].param_end;
        }
        ASSERT_LT(lo, hi);
        bool below_f32 = false;
        for (int64_t i = lo; i < hi; ++i) {
            const float want = round(round(grad(0, i)) + round(grad(1, i)));
            EXPECT_EQ(g[i], want) << "element " << i << (distributed ? " (reduce-scatter)" : "");
            below_f32 = below_f32 || want != grad(0, i) + grad(1, i);
        }
        EXPECT_TRUE(below_f32) << "the f32 sum is bf16 here: the test shows nothing";
    }
}

TEST(ParallelTraining, TensorParallelSequenceParallel) {
    check(gpt2_args(), {2, true, false, false});
    check(llama_args(), {2, true, false, false});
    check(llama3_qk_norm_args(), {2, true, false, false});
}

TEST(ParallelTraining, MultiLatentAttention) {
    check(mla_args(), {1, false, true, false});
    check(mla_args(), {2, false, false, false});
    check(mla_args(), {2, true, true, false});
    check(mla_args(), Layout{2, true, false, false, DType::bf16});
    ModelArgs recomputed = mla_args();  // q, k and v rebuilt from gathered inputs under SP
    recomputed["recompute-granularity"] = "selective";
    recomputed["recompute-modules"] = "mla_up_proj layernorm";
    check(recomputed, {2, true, false, false});
    ModelArgs lite = mla_args();  // DeepSeek-V2-Lite: no q-lora, no norms
    lite.erase("q-lora-rank");
    lite.erase("qk-layernorm");
    check(lite, {2, true, false, false});
}

TEST(ParallelTraining, TensorSequenceParallelDistributedOptimizerOverlapped) {
    check(gpt2_args(), {2, true, true, true});
    check(llama_args(), {2, true, true, true});
}

Layout context_parallel(int tp, bool sequence_parallel, bool distributed_optimizer) {
    Layout layout{tp, sequence_parallel, distributed_optimizer, false};
    layout.cp = 2;
    return layout;
}

// Each sequence in two chunks per rank, attention as a ring (CP2; with 4 ranks CP2 x DP2), the
// loss mask's uneven tokens per chunk included.
TEST(ParallelTraining, ContextParallel) {
    check(gpt2_args(), context_parallel(1, false, false));
    check(llama_args(), context_parallel(1, false, false));
    check(llama3_qk_norm_args(), context_parallel(1, false, true));
}

// TP2 x CP2 (4 ranks), with sequence parallelism inside each context-parallel chunk pair.
TEST(ParallelTraining, TensorContextParallel) {
    check(gpt2_args(), context_parallel(2, false, false));
    check(llama_args(), context_parallel(2, true, true));
}

Layout pipeline(int pp, int tp = 1) {
    Layout layout{tp, false, false, false};
    layout.pp = pp;
    return layout;
}

// 1F1B over 2 stages (with 4 ranks, PP2 x DP2) and 4 stages: the hidden states and their
// gradients passed between stages, the tied word embeddings of GPT-2 summed over the first and
// last stage.
TEST(ParallelTraining, PipelineParallel) {
    ModelArgs four_layers = gpt2_args();
    four_layers["num-layers"] = "4";
    ModelArgs llama_four = llama_args();
    llama_four["num-layers"] = "4";
    check(four_layers, pipeline(2));
    check(llama_four, pipeline(2));
    check(four_layers, pipeline(4));
    Layout distributed = pipeline(2);
    distributed.distributed_optimizer = distributed.overlap_grad_reduce = true;
    check(four_layers, distributed);
}

// Multi-token prediction (two depths) on the last stage: tensor and sequence parallel, the
// distributed optimizer, and pipelined, where the last stage embeds the tokens ahead with its
// copy of the first stage's word embeddings (their gradients summed over the two stages, tied to
// the output layer or not). Then DeepSeek-V3's shape in small: multi-latent attention, a dense
// layer then MoE (grouped sigmoid routing, a shared expert, the sequence-level auxiliary loss
// over sequences split by sequence parallelism), one depth on the MoE layer's spec, over 2
// tensor-parallel (and sequence-parallel) and 2 expert-parallel ranks.
TEST(ParallelTraining, MultiTokenPrediction) {
    ModelArgs mtp = llama_args();
    mtp["mtp-num-layers"] = "2";
    mtp["mtp-loss-scaling-factor"] = "0.5";
    check(mtp, {2, true, false, false});
    check(mtp, {1, false, true, true});
    mtp["num-layers"] = "4";
    check(mtp, pipeline(2));
    ModelArgs tied = mtp;
    tied.erase("untie-embeddings-and-output-weights");
    check(tied, pipeline(2));
    ModelArgs deepseek = mla_args();
    for (auto [k, v] : {std::pair{"num-experts", "4"},
                        {"moe-layer-freq", "[0,1]"},
                        {"moe-ffn-hidden-size", "16"},
                        {"moe-shared-expert-intermediate-size", "24"},
                        {"moe-router-score-function", "sigmoid"},
                        {"moe-router-num-groups", "2"},
                        {"moe-router-group-topk", "1"},
                        {"moe-router-topk-scaling-factor", "2.5"},
                        {"moe-router-load-balancing-type", "seq_aux_loss"},
                        {"moe-aux-loss-coeff", "1e-2"},
                        {"mtp-num-layers", "1"}})
        deepseek[k] = v;
    check(deepseek, {2, true, false, false});
    Layout experts{1, false, false, false};
    experts.ep = 2;
    check(deepseek, experts);
}

// A Mamba hybrid model ("M*-M": Mamba, attention-only, MLP-only and Mamba layers): data
// parallelism with and without the distributed optimizer, and the pattern split over 2 and 4
// pipeline stages.
ModelArgs hybrid_args() {
    ModelArgs hybrid = llama_args();
    hybrid["num-layers"] = "4";
    hybrid["position-embedding-type"] = "none";
    hybrid["hybrid-override-pattern"] = "M*-M";
    hybrid["mamba-state-dim"] = "8";
    hybrid["mamba-head-dim"] = "8";
    hybrid["mamba-num-groups"] = "2";
    return hybrid;
}

TEST(ParallelTraining, HybridMambaModel) {
    const ModelArgs hybrid = hybrid_args();
    check(hybrid, {1, false, false, false}, nullptr, "mamba");
    check(hybrid, {1, false, true, true}, nullptr, "mamba");
    check(hybrid, pipeline(2), nullptr, "mamba");
    check(hybrid, pipeline(4), nullptr, "mamba");
}

// core_v0.19's MoE layers ('E') among the Mamba and attention layers: data parallel with the
// distributed optimizer, TP2 with sequence parallelism, and two pipeline stages (the MoE layer's
// load-balancing loss on the second).
TEST(ParallelTraining, HybridMoeModel) {
    ModelArgs hybrid = hybrid_args();
    hybrid["hybrid-override-pattern"] = "M*EM";
    for (const auto& [flag, value] : moe_args())
        if (flag.starts_with("num-experts") || flag.starts_with("moe-")) hybrid[flag] = value;
    check(hybrid, {1, false, true, true}, nullptr, "mamba");
    check(hybrid, {2, true, false, false}, nullptr, "mamba");
    check(hybrid, pipeline(2), nullptr, "mamba");
}

// Megatron's layout of a Mamba layer over tensor ranks (whole heads and groups, in_proj and
// conv1d by their parts), with and without sequence parallelism, and TP2 x PP2.
TEST(ParallelTraining, HybridMambaModelTensorParallel) {
    const ModelArgs hybrid = hybrid_args();
    check(hybrid, {2, false, false, false}, nullptr, "mamba");
    check(hybrid, {2, true, true, false}, nullptr, "mamba");
    check(hybrid, pipeline(2, 2), nullptr, "mamba");
}

// Uneven stages (--decoder-first/last-pipeline-num-layers), TP2 x PP2 with sequence
// parallelism, and PP2 x CP2.
TEST(ParallelTraining, PipelineUnevenAndTensorParallel) {
    ModelArgs four_layers = gpt2_args();
    four_layers["num-layers"] = "4";
    Layout uneven = pipeline(2);
    uneven.first_stage_layers = 1;
    check(four_layers, uneven);
    Layout tp_pp = pipeline(2, 2);
    tp_pp.sequence_parallel = true;
    check(four_layers, tp_pp);
    check(llama_args(), pipeline(2, 2));
    // PP2 x CP2: each stage's hidden states hold its two sequence chunks.
    Layout pp_cp = pipeline(2);
    pp_cp.cp = 2;
    check(four_layers, pp_cp);
    ModelArgs llama_four = llama_args();
    llama_four["num-layers"] = "4";
    check(llama_four, pp_cp);
}

// Interleaved 1F1B: PP2 with 2 model chunks per stage (stage 0 holds layers 0 and 2), with 4
// ranks PP2 x DP2 with the distributed optimizer; PP4 with 2 chunks (8 layers), and PP2 x TP2.
// The tied embedding sits in stage 0's first chunk and its copy in the last stage's last.
TEST(ParallelTraining, InterleavedPipeline) {
    ModelArgs four_layers = gpt2_args();
    four_layers["num-layers"] = "4";
    ModelArgs llama_four = llama_args();
    llama_four["num-layers"] = "4";
    Layout interleaved = pipeline(2);
    interleaved.virtual_stages = 2;
    check(four_layers, interleaved);
    check(llama_four, interleaved);
    Layout distributed = interleaved;
    distributed.distributed_optimizer = distributed.overlap_grad_reduce = true;
    check(four_layers, distributed);
    ModelArgs eight_layers = gpt2_args();
    eight_layers["num-layers"] = "8";
    Layout pp4 = pipeline(4);
    pp4.virtual_stages = 2;
    check(eight_layers, pp4);
    Layout tp_pp = pipeline(2, 2);
    tp_pp.virtual_stages = 2;
    tp_pp.sequence_parallel = true;
    check(four_layers, tp_pp);
}

}  // namespace
}  // namespace mt::plugins::gpt
