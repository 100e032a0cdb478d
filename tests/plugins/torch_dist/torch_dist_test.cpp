// The `torch_dist` checkpoint format against checkpoints megatron-core core_v0.13 wrote
// (tests/fixtures/torch_dist/make_fixtures.py): every tensor whole and equal to the reference
// whether saved at TP 1, TP 2 or TP 2 x PP 2, Megatron's fp32 Adam state, logits of our GPT on
// those weights equal to Megatron's, a save -> load round trip equal bit for bit in Megatron's
// key layout (stacked layers, TE norm names, _extra_state objects; BERT's encoder and heads),
// the model alone (with the reason) for optimizer layouts not read yet, and clear errors for
// truncated or corrupt files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include "dcp_metadata.h"
#include "dcp_storage.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/data/python_random.h"
#include "mt/io/torch_file.h"
#include "mt/model.h"
#include "mt/nn/parameter.h"
#include "mt/registry.h"
#include "register.h"
#include "test_support.h"
#include "torch_dist_buckets.h"
#include "torch_dist_checkpoint.h"
#include "torch_dist_test_support.h"

namespace mt::plugins::torch_dist {
namespace {

namespace fs = std::filesystem;
using mt::test::error_of;
using mt::test::TempDir;

ModelArgs model_args(const std::string& model) {
    ModelArgs a{{"num-layers", "2"},
                {"hidden-size", "16"},
                {"num-attention-heads", "4"},
                {"seq-length", "16"},
                {"max-position-embeddings", "16"},
                {"vocab-size", "128"}};
    if (model == "llama") {
        a.insert({{"normalization", "RMSNorm"},
                  {"position-embedding-type", "rope"},
                  {"swiglu", ""},
                  {"ffn-hidden-size", "32"},
                  {"group-query-attention", ""},
                  {"num-query-groups", "2"},
                  {"disable-bias-linear", ""},
                  {"untie-embeddings-and-output-weights", ""}});
    }
    return a;
}

struct Saved {
    std::string model;
    int tp, pp;
    std::string dir() const {
        return model + "_tp" + std::to_string(tp) + (pp > 1 ? "_pp" + std::to_string(pp) : "");
    }
};

class MegatronCheckpoint : public ::testing::TestWithParam<Saved> {};

TEST_P(MegatronCheckpoint, LoadsEveryTensorWholeAsTheReference) {
    TorchDistCheckpoint format;
    const fs::path dir = fixture(GetParam().dir());
    ASSERT_TRUE(format.detect(dir));
    const CheckpointState state = format.load(dir);
    const io::PyValue want = reference(GetParam().model)["state"];

    std::set<std::string> names;
    for (const auto& [name, t] : state.model) {
        names.insert(name);
        const io::PyValue* ref = want.find(name);
        ASSERT_NE(ref, nullptr) << "unexpected tensor " << name;
        EXPECT_TRUE(same_bytes(t.local, ref->as_tensor()))
            << name << ": " << t.local.describe() << " vs " << ref->as_tensor().describe();
        EXPECT_EQ(t.global_shape, t.local.shape()) << name;
        EXPECT_EQ(t.global_offset, Shape(t.local.dim(), 0)) << name;
    }
    EXPECT_EQ(names.size(), want.dict_ref().items.size()) << "a reference tensor is missing";
    EXPECT_EQ(state.model.front().first, "embedding.word_embeddings.weight");
    EXPECT_TRUE(state.model[2].first.starts_with("decoder.layers.0.")) << state.model[2].first;
    EXPECT_TRUE(state.model.back().first == "output_layer.weight" ||
                state.model.back().first.starts_with("decoder.final_layernorm"))
        << state.model.back().first;

    EXPECT_EQ(state.iteration, 7);
    EXPECT_EQ(state.consumed_train_samples, 28);
    EXPECT_EQ(state.consumed_valid_samples, 8);
    EXPECT_EQ(state.num_floating_point_operations_so_far, 123456.0);
    ASSERT_NE(state.find_arg("tensor_model_parallel_size"), nullptr);
    EXPECT_EQ(*state.find_arg("tensor_model_parallel_size"), ArgValue(int64_t(GetParam().tp)));
    EXPECT_EQ(*state.find_arg("pipeline_model_parallel_size"), ArgValue(int64_t(GetParam().pp)));
    EXPECT_EQ(*state.find_arg("params_dtype"), ArgValue(std::string("float32")));
    ASSERT_TRUE(state.scheduler);
    EXPECT_EQ(state.scheduler->num_steps, 28);
    EXPECT_EQ(state.scheduler->lr_decay_style, "cosine");
    EXPECT_FALSE(state.rng) << "Megatron's generator states are not ours";
    if (GetParam().dir() != "gpt2_tp1") {
        EXPECT_FALSE(state.optimizer);
        return;
    }
    // Megatron's FP32Optimizer over AdamW after 3 steps.
    ASSERT_TRUE(state.optimizer);
    const OptimizerCheckpoint& o = *state.optimizer;
    const io::PyValue want_opt = reference("gpt2")["optimizer"];
    EXPECT_EQ(o.type, "adam");
    EXPECT_EQ(o.step, 3);
    EXPECT_EQ(o.step, want_opt["step"].as_int());
    EXPECT_EQ(o.lr, 9e-4);
    EXPECT_EQ(o.weight_decay, 0.01);
    EXPECT_EQ(std::tie(o.max_lr, o.min_lr, o.beta1, o.beta2, o.eps),
              std::make_tuple(1e-3, 1e-4, 0.9, 0.95, 1e-8));
    ASSERT_EQ(o.params.size(), state.model.size());
    for (size_t i = 0; i < o.params.size(); ++i) {
        const OptimizerParamState& p = o.params[i];
        EXPECT_EQ(p.name, state.model[i].first);
        EXPECT_EQ(p.weight_decay, !(p.name.ends_with(".bias") || p.exp_avg.dim() == 1)) << p.name;
        EXPECT_TRUE(same_bytes(p.exp_avg, want_opt["exp_avg"][p.name].as_tensor())) << p.name;
        EXPECT_TRUE(same_bytes(p.exp_avg_sq, want_opt["exp_avg_sq"][p.name].as_tensor())) << p.name;
    }
}

TEST_P(MegatronCheckpoint, OurGptGivesMegatronsLogits) {
    TorchDistCheckpoint format;
    const CheckpointState state = format.load(fixture(GetParam().dir()));
    const io::PyValue ref = reference(GetParam().model);
    auto model = Registry::global().create_model("gpt")->build(model_args(GetParam().model));
    for (nn::Parameter* p : model->parameters()) {
        const ShardedTensor* t = find(state, p->name);
        ASSERT_NE(t, nullptr) << p->name;
        p->value.copy_from(t->local);
    }
    EXPECT_LT(worst_difference(model->logits(ref["tokens"].as_tensor(), nullptr),
                               ref["logits"].as_tensor()),
              2e-5);
}

INSTANTIATE_TEST_SUITE_P(TorchDist, MegatronCheckpoint,
                         ::testing::Values(Saved{"gpt2", 1, 1}, Saved{"gpt2", 2, 1},
                                           Saved{"llama", 1, 1}, Saved{"llama", 2, 2}),
                         [](const auto& info) { return info.param.dir(); });

TEST(TorchDist, SaveThenLoadIsBitIdenticalInMegatronsLayout) {
    TorchDistCheckpoint format;
    for (const std::string source : {"gpt2_tp1", "llama_tp2_pp2"}) {  // gpt2_tp1 has an optimizer
        CheckpointState state = format.load(fixture(source));
        state.rng = RngCheckpoint{1234, 5678};
        TempDir dir;
        format.save(dir.path(), state);
        keep_for_megatron(dir.path(), source);

        EXPECT_EQ(mt::test::read_file(dir / "latest_checkpointed_iteration.txt"), "7");
        std::set<std::string> files;
        for (const auto& f : fs::directory_iterator(dir / "iter_0000007"))
            files.insert(f.path().filename().string());
        EXPECT_EQ(files, (std::set<std::string>{"metadata.json", "common.pt", ".metadata",
                                                "__0_0.distcp"}));
        EXPECT_EQ(mt::test::read_file(dir / "iter_0000007" / "metadata.json"),
                  "{\"sharded_backend\": \"torch_dist\", \"sharded_backend_version\": 1, "
                  "\"common_backend\": \"torch\", \"common_backend_version\": 1}");
        ASSERT_TRUE(format.detect(dir.path()));
        expect_same_state(format.load(dir.path()), state);

        // Megatron's keys: layers stacked on a leading axis, one chunk per layer, and each
        // layer's _extra_state objects.
        const DcpMetadata meta = read_dcp_metadata(dir / "iter_0000007" / ".metadata");
        const DcpEntry* fc1 = meta.find("decoder.layers.mlp.linear_fc1.weight");
        ASSERT_NE(fc1, nullptr);
        EXPECT_EQ(fc1->size, (Shape{2, 64, 16}));
        ASSERT_EQ(fc1->chunks.size(), 2u);
        EXPECT_EQ(fc1->chunks[1].offsets, (Shape{1, 0, 0}));
        EXPECT_EQ(fc1->chunks[1].sizes, (Shape{1, 64, 16}));
        EXPECT_NE(meta.find("decoder.layers.self_attention.linear_qkv.layer_norm_weight"), nullptr);
        const DcpEntry* extra =
            meta.find("decoder.layers.self_attention.linear_proj._extra_state/shard_1_2");
        ASSERT_NE(extra, nullptr);
        EXPECT_TRUE(extra->bytes);
        EXPECT_EQ(meta.find("decoder.layers.0.mlp.linear_fc1.weight"), nullptr);
    }
}

// Megatron's rng_state ShardedObject ("rng_state/shard_<pp>.<tp>_<PP>.<TP>", the list its
// get_rng_state makes) holds the states Megatron's seeding leaves for the args' seed: Python's
// words and index, numpy's key, torch's CPU state, the CUDA one and the tracker's three; the
// common state keeps only our dropout stream (Megatron's loader merges the object into it and
// refuses a value in both), which loads back.
TEST(TorchDist, KeepsTheGeneratorStatesMegatronsSeedingLeaves) {
    TorchDistCheckpoint format;
    CheckpointState state = format.load(fixture("gpt2_tp1"));
    set_arg(state.args, "seed", ArgValue{int64_t(4321)});
    state.rng = RngCheckpoint{1234, 5678, {}};
    TempDir dir;
    format.save(dir.path(), state);
    const fs::path iter = dir / "iter_0000007";
    const DcpEntry* entry = read_dcp_metadata(iter / ".metadata").find("rng_state/shard_0.0_1.1");
    ASSERT_NE(entry, nullptr);
    const io::PyValue stored = read_dcp_object(iter, *entry);  // [rng_state_list]
    ASSERT_EQ(stored.items().size(), 1u);
    ASSERT_EQ(stored.items()[0].items().size(), 1u);
    const io::PyValue& rng = stored.items()[0].items()[0];
    const auto python = rng["random_rng_state"].items()[1].items();
    ASSERT_EQ(python.size(), 625u);
    const auto words = data::python_seed_words(4321);
    for (size_t i = 0; i < 624; ++i) ASSERT_EQ(python[i].as_int(), int64_t(words[i])) << i;
    EXPECT_EQ(python[624].as_int(), 624);
    const auto key = rng["np_rng_state"].items()[1].items();
    ASSERT_EQ(key.size(), 624u);
    EXPECT_EQ(key[623].as_int(), int64_t(data::mt19937_init_genrand(4321)[623]));
    const Tensor cpu = rng["torch_rng_state"].as_tensor();
    ASSERT_EQ(cpu.numel(), 5056);
    EXPECT_EQ(std::memcmp(cpu.data<uint8_t>(), torch_cpu_rng_state(4321).data(), 5056), 0);
    const Tensor model_parallel = rng["rng_tracker_states"]["model-parallel-rng"].as_tensor();
    ASSERT_EQ(model_parallel.numel(), 16);
    EXPECT_EQ(std::memcmp(model_parallel.data<uint8_t>(), torch_cuda_rng_state(4321 + 2718).data(),
                          16),
              0);
    const io::PyValue common = io::load_torch_file(iter / "common.pt");
    ASSERT_EQ(common["rng_state"].items().size(), 1u);
    EXPECT_EQ(common["rng_state"].items()[0].dict_ref().items.size(), 1u);  // ours alone
    const CheckpointState back = format.load(dir.path());
    ASSERT_TRUE(back.rng.has_value());
    EXPECT_EQ(back.rng->dropout_seed, 1234u);
    EXPECT_EQ(back.rng->dropout_offset, 5678u);
}

// megatron-convert's streaming save: each chunk's tensor made only when it is written (in the
// file's order, each once), and the files are the bytes save() writes from whole tensors.
TEST(TorchDist, StreamedSaveWritesTheBytesOfSave) {
    TorchDistCheckpoint format;
    for (const std::string source : {"gpt2_tp1", "llama_tp2_pp2"}) {
        CheckpointState state = format.load(fixture(source));
        state.optimizer.reset();
        TempDir dir;
        format.save(dir / "whole", state);
        std::vector<size_t> made;
        format.save_streamed(dir / "streamed", {}, [&](int64_t, int64_t) {
            StreamedState s{state, {}};
            for (auto& [name, t] : s.state.model)
                t.local = tensor_placeholder(t.local.shape(), t.local.dtype());
            s.make = [&](size_t i) {
                made.push_back(i);
                return state.model[i].second.local.contiguous();
            };
            return s;
        });
        EXPECT_EQ(made.size(), state.model.size());
        EXPECT_EQ(std::set<size_t>(made.begin(), made.end()).size(), state.model.size());
        for (const auto& f : fs::directory_iterator(dir / "whole" / "iter_0000007")) {
            const fs::path name = f.path().filename();
            EXPECT_TRUE(mt::test::read_file(f.path()) ==
                        mt::test::read_file(dir / "streamed" / "iter_0000007" / name))
                << name;
        }
        EXPECT_NE(error_of([&] {
                      format.save_streamed(dir / "split", {2, 1}, [&](int64_t, int64_t) {
                          return StreamedState{state, {}};
                      });
                  }).find("layout 1x1"),
                  std::string::npos);
        // What is read back views the .distcp file where each chunk is a whole layer.
        expect_same_state(format.load(dir / "streamed"), state);
    }
}

// The streamed load (megatron-convert's and inference's path) gives load()'s model tensors as
// placeholders made on request, each from the chunks that hold it: whole layers (ours), the
// tensor-parallel pieces Megatron saved (llama_tp2_pp2, mixtral_tp2_ep2's experts), a Mamba
// mixer's parts (a checkpoint Megatron's own training wrote); with optimizer state, the repeats
// load() sets aside too.
TEST(TorchDist, StreamedLoadMakesLoadsTensorsOnRequest) {
    TorchDistCheckpoint format;
    for (const fs::path dir : {fixture("gpt2_tp1"), fixture("llama_tp2_pp2"),
                               fixture("mixtral_tp2_ep2"), fixture("gpt2_distopt_tp2_dp2"),
                               mt::test::fixtures_dir() / "megatron_checkpoints" / "core_v0.13" /
                                   "mamba_torch_dist_fp32"}) {
        SCOPED_TRACE(dir.string());
        const CheckpointState want = format.load(dir);
        const StreamedState got = format.load_streamed(dir);
        EXPECT_EQ(got.state.iteration, want.iteration);
        EXPECT_EQ(got.state.model_aliases, want.model_aliases);
        ASSERT_EQ(got.state.model.size(), want.model.size());
        for (size_t i = 0; i < want.model.size(); ++i) {
            const auto& [name, placeholder] = got.state.model[i];
            EXPECT_EQ(name, want.model[i].first);
            EXPECT_EQ(placeholder.local.storage()->data, nullptr) << name << ": not lazy";
            const Tensor made = got.make(i), expected = want.model[i].second.local.contiguous();
            ASSERT_EQ(made.shape(), expected.shape()) << name;
            ASSERT_EQ(made.dtype(), expected.dtype()) << name;
            EXPECT_EQ(std::memcmp(made.contiguous().raw_data(), expected.raw_data(),
                                  size_t(expected.nbytes())),
                      0)
                << name;
        }
    }
}

// BertModel's state in megatron-core's keys: the encoder's layers stacked under
// "encoder.layers.", the heads as they are, and the extra state megatron-core's BertModel asks
// for when loading, its output layer's included (GPTModel drops that one).
TEST(TorchDist, BertKeepsItsEncoderAndItsOutputLayersExtraState) {
    const ModelArgs args = {{"num-layers", "2"},
                            {"hidden-size", "8"},
                            {"num-attention-heads", "2"},
                            {"seq-length", "8"},
                            {"max-position-embeddings", "8"},
                            {"vocab-size", "16"},
                            {"make-vocab-size-divisible-by", "16"}};
    CheckpointState state;
    state.iteration = 3;
    state.args = {{"num_layers", int64_t(2)}};
    float next = 0;
    for (const ParameterInfo& p : Registry::global().create_model("bert")->parameters(args)) {
        Tensor t = Tensor::empty(p.shape, DType::f32);
        for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = next++;
        state.model.emplace_back(p.name, ShardedTensor::whole(t));
    }
    TorchDistCheckpoint format;
    TempDir dir;
    format.save(dir.path(), state);
    expect_same_state(format.load(dir.path()), state);
    const DcpMetadata meta = read_dcp_metadata(dir / "iter_0000003" / ".metadata");
    const DcpEntry* qkv = meta.find("encoder.layers.self_attention.linear_qkv.weight");
    ASSERT_NE(qkv, nullptr);
    EXPECT_EQ(qkv->size, (Shape{2, 24, 8}));
    for (const char* key : {"lm_head.dense.weight", "output_layer.bias", "binary_head.weight",
                            "pooler.dense.weight", "embedding.tokentype_embeddings.weight"})
        EXPECT_NE(meta.find(key), nullptr) << key;
    for (const char* key : {"output_layer._extra_state/shard_0_1",
                            "encoder.layers.self_attention.linear_qkv._extra_state/shard_1_2"}) {
        const DcpEntry* extra = meta.find(key);
        ASSERT_NE(extra, nullptr) << key;
        EXPECT_TRUE(extra->bytes) << key;
    }
}

// Megatron's MultiTokenPredictionBlock keys its depths' transformer layers one by one, with no
// layer axis (the decoder's stacked beside them), the local spec's norms under Transformer
// Engine's names as in the decoder, each expert on an expert axis; eh_proj and the depth's norms
// keep their extra state.
TEST(TorchDist, MultiTokenPredictionDepthsAreKeyedLayerByLayer) {
    ModelArgs args = model_args("llama");
    args["transformer-impl"] = "local";
    args["mtp-num-layers"] = "2";
    args["num-experts"] = "4";
    args["moe-ffn-hidden-size"] = "8";
    CheckpointState state;
    state.iteration = 3;
    state.args = {{"num_layers", int64_t(2)},
                  {"num_experts", int64_t(4)},
                  {"moe_layer_freq", int64_t(1)},
                  {"transformer_impl", std::string("local")},
                  {"mtp_num_layers", int64_t(2)}};
    float next = 0;
    for (const ParameterInfo& p : Registry::global().create_model("gpt")->parameters(args)) {
        Tensor t = Tensor::empty(p.shape, DType::f32);
        for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = next++;
        state.model.emplace_back(p.name, ShardedTensor::whole(t));
    }
    ASSERT_NE(find(state, "mtp.layers.1.transformer_layer.input_layernorm.weight"), nullptr);
    TorchDistCheckpoint format;
    TempDir dir;
    format.save(dir.path(), state);
    // Read back under the stored names (Transformer Engine's norms), each tensor as saved.
    const CheckpointState loaded = format.load(dir.path());
    ASSERT_EQ(loaded.model.size(), state.model.size());
    for (auto [name, t] : state.model) {
        for (auto [local, te] :
             {std::pair{"input_layernorm.", "self_attention.linear_qkv.layer_norm_"},
              std::pair{"pre_mlp_layernorm.", "mlp.linear_fc1.layer_norm_"}})
            if (auto at = name.find(local); at != std::string::npos)
                name.replace(at, std::strlen(local), te);
        const ShardedTensor* back = find(loaded, name);
        ASSERT_NE(back, nullptr) << name;
        EXPECT_TRUE(same_bytes(back->local, t.local)) << name;
    }
    const DcpMetadata meta = read_dcp_metadata(dir / "iter_0000003" / ".metadata");
    const std::pair<const char*, Shape> keys[] = {
        {"decoder.layers.self_attention.linear_qkv.weight", {2, 32, 16}},
        {"mtp.layers.1.transformer_layer.self_attention.linear_qkv.weight", {32, 16}},
        {"mtp.layers.1.transformer_layer.self_attention.linear_qkv.layer_norm_weight", {16}},
        {"mtp.layers.0.transformer_layer.mlp.experts.experts.linear_fc1.weight", {4, 16, 16}},
        {"mtp.layers.0.enorm.weight", {16}},
        {"mtp.layers.0.eh_proj.weight", {16, 32}},
        {"mtp.layers.1.final_layernorm.weight", {16}}};
    for (const auto& [key, shape] : keys) {
        const DcpEntry* e = meta.find(key);
        ASSERT_NE(e, nullptr) << key;
        EXPECT_EQ(e->size, shape) << key;
    }
    for (const char* key : {"mtp.layers.0.eh_proj._extra_state/shard_0_1",
                            "mtp.layers.1.hnorm._extra_state/shard_0_1",
                            "mtp.layers.1.transformer_layer.self_attention.linear_qkv._extra_state/"
                            "shard_0_1",
                            "mtp.layers.0.transformer_layer.mlp.experts.experts.linear_fc2._extra_"
                            "state/shard_3_4",
                            "decoder.layers.self_attention.linear_proj._extra_state/shard_1_2"}) {
        const DcpEntry* extra = meta.find(key);
        ASSERT_NE(extra, nullptr) << key;
        EXPECT_TRUE(extra->bytes) << key;
    }
}

TEST(TorchDist, LocalSpecNormsAreStoredUnderTransformerEngineNames) {
    TorchDistCheckpoint format;
    CheckpointState state = format.load(fixture("gpt2_tp1"));
    CheckpointState local = state;
    for (auto& [name, t] : local.model)
        for (auto [te, sep] :
             {std::pair{"self_attention.linear_qkv.layer_norm_", "input_layernorm."},
              std::pair{"mlp.linear_fc1.layer_norm_", "pre_mlp_layernorm."}})
            if (auto at = name.find(te); at != std::string::npos)
                name.replace(at, std::strlen(te), sep);
    ASSERT_NE(find(local, "decoder.layers.1.input_layernorm.weight"), nullptr);
    TempDir dir;
    format.save(dir.path(), local);
    expect_same_state(format.load(dir.path()), state);
}

// megatron-core's DistributedOptimizer at TP2 x DP2 saved Megatron's gpt2 state in its default
// layout, fully_sharded_model_space (each rank's ranges flattened; made by
// make_tp2_save_and_check.sh with MT_WRITE_DISTOPT_FIXTURE=1): it reads as the FP32Optimizer
// checkpoint the state came from (gpt2_tp1), its learning rate the one Megatron's scheduler set
// on loading it.
TEST(TorchDist, ReadsMegatronsDistributedOptimizerRanges) {
    TorchDistCheckpoint format;
    const CheckpointState want = format.load(fixture("gpt2_tp1"));
    const CheckpointState got = format.load(fixture("gpt2_distopt_tp2_dp2"));
    ASSERT_TRUE(got.optimizer) << got.optimizer_not_loaded;
    ASSERT_EQ(got.model.size(), want.model.size());
    for (size_t i = 0; i < want.model.size(); ++i) {
        EXPECT_EQ(got.model[i].first, want.model[i].first);
        EXPECT_TRUE(same_bytes(got.model[i].second.local, want.model[i].second.local))
            << want.model[i].first;
    }
    expect_same_moments(got, want);
    EXPECT_NEAR(got.optimizer->lr, 0.000989162543, 1e-12);
    // fc1 [2 layers, 64, 16] at TP2: a grid of [2, 2, 1] pieces of 32 x 16, flattened.
    const DcpMetadata meta =
        read_dcp_metadata(fixture("gpt2_distopt_tp2_dp2") / "iter_0000007" / ".metadata");
    const DcpEntry* fc1 = meta.find("optimizer.state.exp_avg.decoder.layers.mlp.linear_fc1.weight");
    ASSERT_NE(fc1, nullptr);
    EXPECT_EQ(fc1->flattened_from, (Shape{2, 64, 16}));
    EXPECT_EQ(fc1->size, (Shape{2, 2, 1, 512}));
}

// Our writer of the distributed optimizer's ranges: every parameter's state in two ranges (as
// two data-parallel ranks keep it), read back as the whole moments.
TEST(TorchDist, DistributedOptimizerRangesRoundTrip) {
    TorchDistCheckpoint format;
    CheckpointState state = format.load(fixture("gpt2_tp1"));
    state.args.emplace_back("use_distributed_optimizer", true);
    add_two_rank_shards(state, [](int64_t n) { return n / 2 + 1; });
    TempDir dir;
    format.save(dir.path(), state);
    const CheckpointState back = format.load(dir.path());
    ASSERT_TRUE(back.optimizer) << back.optimizer_not_loaded;
    state.optimizer->shards.clear();
    expect_same_moments(back, state);
    EXPECT_EQ(back.optimizer->lr, state.optimizer->lr);
    const DcpMetadata meta = read_dcp_metadata(dir / "iter_0000007" / ".metadata");
    const DcpEntry* w = meta.find("optimizer.state.exp_avg_sq.embedding.word_embeddings.weight");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->flattened_from, (Shape{128, 16}));
    EXPECT_EQ(w->size, (Shape{1, 1, 2048}));
    EXPECT_EQ(w->chunks.size(), 2u);
    EXPECT_NE(meta.find("optimizer.state.fp32_param.decoder.final_layernorm.weight"), nullptr);
}

// The gpt2_tp1 fixture's state (into `state`) with its optimizer as the distributed one's in
// `layout` (dp_reshardable: saved from one rank, its pieces the whole tensors), saved to `dir`;
// read back in that layout with the same moments, learning rate and step.
void distributed_round_trip(DistributedOptimizerLayout layout, const fs::path& dir,
                            CheckpointState& state) {
    TorchDistCheckpoint format;
    state = format.load(fixture("gpt2_tp1"));
    ASSERT_TRUE(state.optimizer) << state.optimizer_not_loaded;
    state.args.emplace_back("use_distributed_optimizer", true);
    state.optimizer->layout = layout;
    if (layout == DistributedOptimizerLayout::dp_reshardable) {
        state.optimizer->buckets.emplace();
        for (const auto& [name, t] : state.model)
            state.optimizer->buckets->values.push_back(t.local);
    }
    format.save(dir, state);
    const CheckpointState back = format.load(dir);
    ASSERT_TRUE(back.optimizer) << back.optimizer_not_loaded;
    EXPECT_EQ(back.optimizer->layout, layout);
    expect_same_moments(back, state);
    EXPECT_EQ(back.optimizer->lr, state.optimizer->lr);
    EXPECT_EQ(back.optimizer->step, state.optimizer->step);
}

// core_v0.19's fully_reshardable layout of the distributed optimizer's state (our writer, as
// --dist-ckpt-optim-fully-reshardable asks): each parameter's moments and f32 values (an f32
// run's weights) in the model's shape under "optimizer.state.{exp_avg,exp_avg_sq,param}.<key>",
// the layout named in the content metadata; read back as the moments they are.
TEST(TorchDist, FullyReshardableDistributedOptimizerRoundTrips) {
    TempDir dir;
    CheckpointState state;
    ASSERT_NO_FATAL_FAILURE(
        distributed_round_trip(DistributedOptimizerLayout::fully_reshardable, dir.path(), state));
    const DcpMetadata meta = read_dcp_metadata(dir / "iter_0000007" / ".metadata");
    const DcpEntry* w = meta.find("optimizer.state.exp_avg_sq.embedding.word_embeddings.weight");
    ASSERT_NE(w, nullptr);
    EXPECT_TRUE(w->flattened_from.empty());
    EXPECT_EQ(w->size, (Shape{128, 16}));
    const DcpEntry* param = meta.find("optimizer.state.param.embedding.word_embeddings.weight");
    ASSERT_NE(param, nullptr);
    EXPECT_EQ(param->size, (Shape{128, 16}));
    EXPECT_EQ(meta.find("optimizer.state.fp32_param.embedding.word_embeddings.weight"), nullptr);
    const Tensor values = DcpTensorReader(dir / "iter_0000007", *param).read_all();
    for (const auto& [name, t] : state.model)
        if (name == "embedding.word_embeddings.weight") EXPECT_TRUE(same_bytes(values, t.local));
    const io::PyValue common = io::load_torch_file(dir / "iter_0000007" / "common.pt");
    EXPECT_EQ(common["content_metadata"]["distrib_optim_sharding_type"].as_string(),
              "fully_reshardable");
    EXPECT_EQ(common["optimizer"]["param_state_sharding_type"].as_string(), "fully_reshardable");
}

// core_v0.19's default dp_reshardable layout as we write it, from one rank: the gradient
// buffer's one bucket (the parameters in Megatron's order backwards, 64-aligned) in
// "optimizer.distributed.dp_group_idx_0...bucket_idx_0.{param,exp_avg,exp_avg_sq}", the f32
// values as "param", the objects beside it, the layout named in the content metadata; read back
// as the moments they are. (That they sit where Megatron puts them: DistributedOptimizerResume.)
TEST(TorchDist, DpReshardableDistributedOptimizerRoundTrips) {
    TempDir dir;
    CheckpointState state;
    ASSERT_NO_FATAL_FAILURE(
        distributed_round_trip(DistributedOptimizerLayout::dp_reshardable, dir.path(), state));
    const fs::path iter = dir / "iter_0000007";
    const DcpMetadata meta = read_dcp_metadata(iter / ".metadata");
    const std::string bucket =
        "optimizer.distributed.dp_group_idx_0.gbuf_idx_0.dtype_(torch.float32, "
        "torch.float32).bucket_idx_0.";
    for (const char* kind : {"param", "exp_avg", "exp_avg_sq"}) {
        const DcpEntry* e = meta.find(bucket + kind);
        ASSERT_NE(e, nullptr) << kind;
        ASSERT_EQ(e->chunks.size(), 1u);
        EXPECT_EQ(e->chunks[0].offsets, (Shape{0}));
        EXPECT_EQ(e->chunks[0].sizes, e->size);
    }
    for (const char* object : {"optimizer", "per_bucket_numel", "per_bucket_numel_unpadded"})
        EXPECT_NE(meta.find(str("optimizer.distributed.dp_group_idx_0.", object, "/shard_0_1")),
                  nullptr)
            << object;
    EXPECT_EQ(meta.find("optimizer.state.exp_avg.embedding.word_embeddings.weight"), nullptr);
    const io::PyValue common = io::load_torch_file(iter / "common.pt");
    EXPECT_EQ(common["content_metadata"]["distrib_optim_sharding_type"].as_string(),
              "dp_reshardable");
    EXPECT_EQ(common["optimizer"]["param_state_sharding_type"].as_string(), "dp_reshardable");
}

// Megatron core_v0.19's distributed optimizer saved the same run in both of its layouts
// (tests/fixtures/distopt_v019/make_fixture.py): dp_reshardable, its default (the gradient
// buffer's buckets, the parameters 64-aligned in them, each data-parallel rank's range a chunk),
// and fully_reshardable (each parameter's state in its shape). Both read as the same state,
// masters included; the fp32 run saved from two data-parallel ranks (its buckets cut between
// them) reads as the one-rank run's to float rounding (its gradients were summed over ranks).
TEST(TorchDist, ReadsBothOfMegatron019sDistributedOptimizerLayouts) {
    TorchDistCheckpoint format;
    const fs::path dir = mt::test::fixtures_dir() / "distopt_v019";
    for (const std::string run : {"bf16", "fp32", "tp2", "pp2", "moe", "moe_ep2"}) {
        const bool half = run == "bf16";
        const CheckpointState buckets =
            format.load(dir / (run == "fp32" ? "dpr_fp32_dp2" : "dpr_" + run));
        const CheckpointState per_parameter = format.load(dir / ("fr_" + run));
        ASSERT_TRUE(buckets.optimizer) << buckets.optimizer_not_loaded;
        ASSERT_TRUE(per_parameter.optimizer) << per_parameter.optimizer_not_loaded;
        EXPECT_EQ(buckets.optimizer->layout, DistributedOptimizerLayout::dp_reshardable);
        EXPECT_EQ(per_parameter.optimizer->layout, DistributedOptimizerLayout::fully_reshardable);
        // (A save from several ranks lists the tensors in another order: matched by name.)
        ASSERT_EQ(buckets.model.size(), per_parameter.model.size());
        for (const auto& [name, t] : buckets.model) {
            const ShardedTensor* same = find(per_parameter, name);
            ASSERT_NE(same, nullptr) << run << " " << name;
            EXPECT_TRUE(same_bytes(t.local, same->local)) << run << " " << name;
        }
        EXPECT_EQ(buckets.optimizer->step, 1);
        EXPECT_EQ(buckets.optimizer->lr, per_parameter.optimizer->lr);
        ASSERT_EQ(buckets.optimizer->params.size(), per_parameter.optimizer->params.size());
        for (const OptimizerParamState& p : buckets.optimizer->params) {
            const auto q = std::find_if(
                per_parameter.optimizer->params.begin(), per_parameter.optimizer->params.end(),
                [&](const OptimizerParamState& o) { return o.name == p.name; });
            ASSERT_NE(q, per_parameter.optimizer->params.end()) << run << " " << p.name;
            EXPECT_EQ(p.expert_parallel, q->expert_parallel) << run << " " << p.name;
            ASSERT_EQ(p.main_param.defined(), half) << run << " " << p.name;
            if (half) {
                EXPECT_TRUE(same_bytes(p.exp_avg, q->exp_avg)) << p.name;
                EXPECT_TRUE(same_bytes(p.exp_avg_sq, q->exp_avg_sq)) << p.name;
                EXPECT_TRUE(same_bytes(p.main_param, q->main_param)) << p.name;
            } else {
                // Adam's first moments are 0.1 g, its second 0.001 g^2.
                EXPECT_LT(worst_difference(p.exp_avg, q->exp_avg), 1e-7) << run << " " << p.name;
                EXPECT_LT(worst_difference(p.exp_avg_sq, q->exp_avg_sq), 1e-9)
                    << run << " " << p.name;
            }
        }
    }
}

// core_v0.19+ keeps the common state as a ShardedObject inside the DCP files, not in common.pt.
TEST(TorchDist, ReadsTheCommonStateFromTheDcpFilesAsNewerMegatronKeepsIt) {
    TorchDistCheckpoint format;
    TempDir dir;
    fs::copy(fixture("llama_tp1"), dir.path(), fs::copy_options::recursive);
    const fs::path iter = dir / "iter_0000007";
    const io::PyValue common = io::load_torch_file(iter / "common.pt");
    fs::remove(iter / "common.pt");
    DcpMetadata meta = read_dcp_metadata(iter / ".metadata");
    DistcpWriter extra(iter, "__0_2.distcp");
    DcpEntry e;
    e.fqn = "common_state/shard_0_1";
    e.bytes = true;
    e.chunks.push_back({{}, {}, extra.add_object(io::PyValue::list({common}))});
    extra.close();
    meta.entries.push_back(e);
    write_dcp_metadata(iter / ".metadata", meta);
    expect_same_state(format.load(dir.path()), format.load(fixture("llama_tp1")));
}

TEST(TorchDist, LayersMustHoldTheSameTensors) {
    TorchDistCheckpoint format;
    CheckpointState state = format.load(fixture("gpt2_tp1"));
    std::erase_if(state.model, [](const auto& kv) {
        return kv.first == "decoder.layers.1.mlp.linear_fc2.bias";
    });
    TempDir dir;
    const std::string error = error_of([&] { format.save(dir.path(), state); });
    EXPECT_NE(error.find("layer 1 has no mlp.linear_fc2.bias"), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(dir / "latest_checkpointed_iteration.txt"));
}

TEST(TorchDist, SgdStateRoundTrips) {
    TorchDistCheckpoint format;
    CheckpointState state = format.load(fixture("llama_tp1"));
    OptimizerCheckpoint o;
    o.type = "sgd";
    o.step = state.iteration;
    o.lr = 0.5;
    o.momentum = 0.8;
    for (const auto& [name, t] : state.model) {
        OptimizerParamState p;
        p.name = name;
        p.weight_decay = t.local.dim() > 1;
        p.exp_avg = t.local.clone();
        o.params.push_back(p);
    }
    state.optimizer = o;
    TempDir dir;
    format.save(dir.path(), state);
    expect_same_state(format.load(dir.path()), state);
    const DcpMetadata meta = read_dcp_metadata(dir / "iter_0000007" / ".metadata");
    EXPECT_NE(meta.find("optimizer.state.momentum_buffer.decoder.layers.mlp.linear_fc2.weight"),
              nullptr);
}

// A copy of gpt2_tp1 to damage.
struct Damaged {
    TempDir dir;
    fs::path iter;
    Damaged() : iter(dir / "iter_0000007") {
        fs::copy(fixture("gpt2_tp1"), dir.path(), fs::copy_options::recursive);
    }
    std::string load_error() {
        TorchDistCheckpoint format;
        return error_of([&] { format.load(dir.path()); });
    }
};

void expect_mentions(const std::string& error, std::initializer_list<const char*> parts) {
    for (const char* p : parts) EXPECT_NE(error.find(p), std::string::npos) << error;
}

// The bucket layout follows from the parameters and the saving run's bucket settings: other
// settings than the checkpoint's args (a bucket per parameter) do not fit its buckets, and
// layouts not read yet are refused by name before anything is read.
TEST(TorchDist, BucketStateThatDoesNotFitIsAnError) {
    const fs::path iter =
        mt::test::fixtures_dir() / "distopt_v019" / "dpr_fp32_dp2" / "iter_0000001";
    const DcpMetadata meta = read_dcp_metadata(iter / ".metadata");
    TorchDistCheckpoint format;
    const CheckpointState state = format.load(iter.parent_path());
    NamedTensors model;
    for (const auto& [name, t] : state.model) model.emplace_back(name, t.local);
    CheckpointArgs args = state.args;
    set_arg(args, "overlap_grad_reduce", true);
    set_arg(args, "ddp_bucket_size", int64_t(1));
    try {
        read_bucket_state(iter, meta, model, args);
        ADD_FAILURE() << "read bucket state of another layout";
    } catch (const Error& e) {
        expect_mentions(e.what(), {"numel_unpadded is", "elements in the gradient buffer"});
    }
    DcpMetadata tensor_parallel;
    DcpEntry e;
    e.fqn =
        "optimizer.distributed.dp_group_idx_1.gbuf_idx_0.dtype_(torch.float32, "
        "torch.float32).bucket_idx_0.param";
    e.size = {64};
    tensor_parallel.entries.push_back(e);
    try {
        read_bucket_state(iter, tensor_parallel, model, state.args);
        ADD_FAILURE() << "read a second model-parallel rank's buckets";
    } catch (const Error& e) {
        expect_mentions(e.what(), {"not supported yet", "dp_group_idx_1",
                                   "1 tensor-parallel x 1 pipeline-parallel ranks"});
    }
}

TEST(TorchDist, TruncatedOrCorruptFilesAreErrorsNamingThePath) {
    {
        Damaged d;
        fs::resize_file(d.iter / "__0_1.distcp", fs::file_size(d.iter / "__0_1.distcp") / 2);
        expect_mentions(d.load_error(), {"__0_1.distcp", "truncated"});
    }
    {
        // Garbage over the end of a tensor's archive (its zip directory).
        Damaged d;
        const DcpMetadata meta = read_dcp_metadata(d.iter / ".metadata");
        const DcpLocation where = meta.find("embedding.word_embeddings.weight")->chunks[0].where;
        std::fstream f(d.iter / where.relative_path,
                       std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(std::streamoff(where.offset + where.length - 200));
        f.write(std::string(200, 'X').data(), 200);
        f.close();
        expect_mentions(d.load_error(),
                        {where.relative_path.c_str(), "embedding.word_embeddings.weight", "zip"});
    }
    {
        // Layer 1's chunk of a stacked tensor claims layer 0's place: the element count still
        // matches, and layer 1 would have been left unwritten.
        Damaged d;
        DcpMetadata meta = read_dcp_metadata(d.iter / ".metadata");
        for (DcpEntry& e : meta.entries)
            if (e.fqn == "decoder.layers.mlp.linear_fc1.weight") e.chunks[1].offsets[0] = 0;
        write_dcp_metadata(d.iter / ".metadata", meta);
        expect_mentions(d.load_error(), {"decoder.layers.mlp.linear_fc1.weight", "chunk [0, 0, 0]",
                                         "overlaps another chunk"});
    }
    {
        Damaged d;
        fs::resize_file(d.iter / ".metadata", fs::file_size(d.iter / ".metadata") - 100);
        expect_mentions(d.load_error(), {".metadata"});
    }
    {
        Damaged d;
        mt::test::write_file(d.iter / ".metadata", "not a pickle at all");
        expect_mentions(d.load_error(), {".metadata"});
    }
    {
        Damaged d;
        fs::resize_file(d.iter / "common.pt", 300);
        expect_mentions(d.load_error(), {"common.pt"});
    }
    {
        Damaged d;
        fs::remove(d.iter / "metadata.json");
        expect_mentions(d.load_error(), {"metadata.json", "did not finish"});
    }
    {
        // Parsed as JSON, escapes and all; a backend other than torch_dist, or a file that is
        // not JSON, is an error naming it.
        Damaged d;
        mt::test::write_file(d.iter / "metadata.json",
                             "{\"sharded_backend_version\": 1, \"sharded_backend\": "
                             "\"torch\\u005fdist\"}");
        EXPECT_EQ(TorchDistCheckpoint().load(d.dir.path()).iteration, 7);
        mt::test::write_file(d.iter / "metadata.json", "{\"sharded_backend\": \"zarr\"}");
        expect_mentions(d.load_error(), {"metadata.json", "sharded_backend is 'zarr'"});
        mt::test::write_file(d.iter / "metadata.json", "{\"sharded_backend\": \"torch_dist\"");
        expect_mentions(d.load_error(), {"metadata.json", "not JSON"});
    }
    {
        Damaged d;
        mt::test::write_file(d.dir / "latest_checkpointed_iteration.txt", "9");
        expect_mentions(d.load_error(), {"iter_0000009", "does not exist"});
    }
}

// An optimizer layout not read yet: the model still loads (generation, conversion), and the
// state says why the optimizer was left out (training's restore reports it).
void expect_model_without_optimizer(const fs::path& dir, std::initializer_list<const char*> why) {
    TorchDistCheckpoint format;
    const CheckpointState state = format.load(dir);
    EXPECT_FALSE(state.model.empty());
    EXPECT_FALSE(state.optimizer.has_value());
    expect_mentions(state.optimizer_not_loaded, why);
}

TEST(TorchDist, OptimizerLayoutsNotReadLeaveTheModelLoadable) {
    {
        // --use-distributed-optimizer with --no-ckpt-fully-parallel-save (its content metadata
        // names the sharding type; the default, fully_sharded_model_space, is read).
        Damaged d;
        const fs::path common = d.iter / "common.pt";
        io::PyValue root = io::load_torch_file(common);
        io::PyValue meta = io::PyValue::dict();
        meta.dict_ref().set("distrib_optim_sharding_type",
                            io::PyValue::string("dp_zero_gather_scatter"));
        root.dict_ref().set("content_metadata", meta);
        fs::remove(common);
        io::save_torch_file(common, root);
        expect_model_without_optimizer(
            d.dir.path(),
            {"not supported yet: the distributed optimizer's 'dp_zero_gather_scatter' state"});
    }
    {
        // A bf16 run's master weights in place of a moment: the missing moment is named.
        Damaged d;
        const fs::path common = d.iter / "common.pt";
        io::PyValue root = io::load_torch_file(common);
        io::PyValue args = root["args"];  // shares the object
        args.object_ref().state.dict_ref().set("bf16", io::PyValue::boolean(true));
        fs::remove(common);
        io::save_torch_file(common, root);
        DcpMetadata meta = read_dcp_metadata(d.iter / ".metadata");
        for (DcpEntry& e : meta.entries)
            if (e.fqn == "optimizer.state.exp_avg.decoder.final_layernorm.weight")
                e.fqn = "optimizer.state.fp32_param.decoder.final_layernorm.weight";
        write_dcp_metadata(d.iter / ".metadata", meta);
        expect_model_without_optimizer(
            d.dir.path(), {"no optimizer state optimizer.state.exp_avg.decoder.final_layernorm."
                           "weight although 3 optimizer steps were taken"});
    }
}

TEST(TorchDist, DetectsOnlyDistCheckpointsAndRegisters) {
    TorchDistCheckpoint format;
    EXPECT_TRUE(format.detect(fixture("llama_tp2_pp2")));
    EXPECT_FALSE(format.detect(mt::test::fixtures_dir() / "torch_checkpoint" / "megatron"));
    TempDir empty;
    EXPECT_FALSE(format.detect(empty.path()));

    Registry registry;
    register_torch_dist(registry);
    EXPECT_EQ(registry.create_checkpoint("torch_dist")->name(), "torch_dist");
    // megatron-train's way: the global registry loads libmt_checkpoint_torch_dist.so.
    auto loaded = Registry::global().create_checkpoint("torch_dist");
    EXPECT_TRUE(loaded->detect(fixture("gpt2_tp1")));
}

}  // namespace
}  // namespace mt::plugins::torch_dist
