// The distributed optimizer in the `torch` format: model_optim_rng.pt holds
// DistributedOptimizer.state_dict() (param groups without ids, each with the step) and
// distrib_optim.pt the moments and master weights in the gradient buffer's layout without bucket
// padding; a save reads back bit for bit, and a file whose layout is not the one the args
// describe, or a missing one, leaves the model loadable and says why the optimizer is not.
// megatron-core's DistributedOptimizer loads our files and would write the same tensors
// (tests/fixtures/torch_dist/make_tp2_save_and_check.sh).
#include <gtest/gtest.h>

#include <filesystem>

#include "distrib_optim.h"
#include "mt/io/torch_file.h"
#include "same_bytes.h"
#include "test_support.h"
#include "torch_checkpoint.h"

namespace mt::plugins::torch_ckpt {
namespace {

namespace fs = std::filesystem;
using io::PyValue;
using mt::test::TempDir;

Tensor counting(const Shape& shape, float from) {
    Tensor t = Tensor::empty(shape, DType::f32);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = from + float(i);
    return t;
}

// Three parameters (32, 4 and 4 elements) saved by a run with buckets of `bucket_size`
// elements (0: one bucket) on two data-parallel ranks.
CheckpointState distributed_state(int64_t bucket_size, float weights_from = 1) {
    CheckpointState s;
    s.iteration = 5;
    s.args = {{"use_distributed_optimizer", true},
              {"data_parallel_size", int64_t(2)},
              {"overlap_grad_reduce", bucket_size > 0},
              {"ddp_bucket_size", bucket_size > 0 ? ArgValue{bucket_size} : ArgValue{}},
              {"params_dtype", std::string("float32")}};
    const std::pair<const char*, Shape> tensors[] = {{"embedding.word_embeddings.weight", {8, 4}},
                                                     {"decoder.final_layernorm.weight", {4}},
                                                     {"decoder.final_layernorm.bias", {4}}};
    OptimizerCheckpoint o;
    o.step = 3;
    o.lr = 2e-4;
    o.weight_decay = 0.1;
    float k = 0;
    for (const auto& [name, shape] : tensors) {
        s.model.emplace_back(name, ShardedTensor::whole(counting(shape, weights_from + 100 * k)));
        OptimizerParamState p;
        p.name = name;
        p.weight_decay = shape.size() > 1;
        p.exp_avg = counting(shape, -100 * (k + 1));
        p.exp_avg_sq = counting(shape, 1000 * (k + 1));
        o.params.push_back(p);
        ++k;
    }
    s.optimizer = o;
    return s;
}

TEST(DistribOptim, RoundTripsAndLaysTheStateOutAsTheGradientBuffer) {
    TempDir dir;
    TorchCheckpoint format;
    const CheckpointState saved = distributed_state(10);
    format.save(dir.path(), saved);
    const fs::path rank = dir / "iter_0000005" / "mp_rank_00";
    ASSERT_TRUE(fs::exists(rank / kDistribOptimName));

    // model_optim_rng.pt: the groups without ids, with the step; no per-parameter state.
    const PyValue root = io::load_torch_file(rank / "model_optim_rng.pt");
    const PyValue& opt = root["optimizer"];
    EXPECT_EQ(opt.find("state"), nullptr);
    const PyValue& groups = opt["optimizer"]["param_groups"];
    ASSERT_EQ(groups.items().size(), 2u);
    for (const PyValue& g : groups.items()) {
        EXPECT_EQ(g.find("params"), nullptr);
        EXPECT_EQ(g["step"].as_double(), 3.0);
    }

    // distrib_optim.pt: backward order, 64-element starts; bucket 0 (bias at 0, weight at 64)
    // closes at 68 >= 10 and its padding to 128 is cut, so the embedding starts at 68.
    const PyValue file = io::load_torch_file(rank / kDistribOptimName);
    EXPECT_TRUE(file["buckets_coalesced"].as_bool());
    const auto& buffers = file.dict_ref().items;
    ASSERT_EQ(buffers.size(), 2u);
    EXPECT_EQ(io::repr(buffers[1].first), "0");
    const auto& [dtypes, tensors] = buffers[1].second.dict_ref().items.at(0);
    EXPECT_EQ(io::repr(dtypes), "(global(torch.float32), global(torch.float32))");
    EXPECT_EQ(tensors["numel_unpadded"].as_int(), 100);
    const Tensor& param = tensors["param"].as_tensor();
    ASSERT_EQ(param.shape(), (Shape{100}));
    EXPECT_EQ(param.data<float>()[0], 201.0f) << "the bias first";
    EXPECT_EQ(param.data<float>()[4], 0.0f) << "padding up to the weight's start";
    EXPECT_EQ(param.data<float>()[64], 101.0f);
    EXPECT_EQ(param.data<float>()[68], 1.0f);
    EXPECT_EQ(tensors["exp_avg_sq"].as_tensor().data<float>()[99], 1031.0f);

    const CheckpointState loaded = format.load(dir.path());
    ASSERT_TRUE(loaded.optimizer) << loaded.optimizer_not_loaded;
    EXPECT_EQ(loaded.optimizer->step, 3);
    EXPECT_EQ(loaded.optimizer->lr, 2e-4);
    EXPECT_EQ(loaded.optimizer->weight_decay, 0.1);
    for (size_t i = 0; i < saved.optimizer->params.size(); ++i) {
        const auto &a = saved.optimizer->params[i], &b = loaded.optimizer->params[i];
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.weight_decay, b.weight_decay) << a.name;
        EXPECT_TRUE(same_bytes(a.exp_avg, b.exp_avg.contiguous())) << a.name;
        EXPECT_TRUE(same_bytes(a.exp_avg_sq, b.exp_avg_sq.contiguous())) << a.name;
    }
}

TEST(DistribOptim, AFileOfAnotherLayoutOrMissingLeavesTheOptimizerUnloadedSayingWhy) {
    TempDir dir;
    TorchCheckpoint format;
    auto rank_file = [&](const char* run) {
        return dir / run / "iter_0000005" / "mp_rank_00" / kDistribOptimName;
    };
    format.save(dir / "buckets", distributed_state(10));
    format.save(dir / "one_bucket", distributed_state(0));
    format.save(dir / "other_weights", distributed_state(10, 7));

    fs::copy_file(rank_file("buckets"), rank_file("one_bucket"),
                  fs::copy_options::overwrite_existing);
    CheckpointState s = format.load(dir / "one_bucket");
    EXPECT_FALSE(s.optimizer);
    EXPECT_EQ(s.model.size(), 3u) << "the model still loads";
    EXPECT_NE(s.optimizer_not_loaded.find("numel_unpadded is 100 but the model's parameters take "
                                          "160 elements"),
              std::string::npos)
        << s.optimizer_not_loaded;

    fs::copy_file(rank_file("buckets"), rank_file("other_weights"),
                  fs::copy_options::overwrite_existing);
    s = format.load(dir / "other_weights");
    EXPECT_NE(
        s.optimizer_not_loaded.find("the master weights of embedding.word_embeddings.weight are "
                                    "not the model's"),
        std::string::npos)
        << s.optimizer_not_loaded;

    fs::remove(rank_file("buckets"));
    s = format.load(dir / "buckets");
    EXPECT_NE(s.optimizer_not_loaded.find(rank_file("buckets").string() + " does not exist"),
              std::string::npos)
        << s.optimizer_not_loaded;
}

}  // namespace
}  // namespace mt::plugins::torch_ckpt
