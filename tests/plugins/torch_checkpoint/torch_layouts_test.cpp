// The `torch` format across tensor/pipeline layouts, against checkpoints megatron-core wrote
// (tests/fixtures/convert/make_fixtures.py: TP1, TP2 and PP2 of one tiny local-spec SwiGLU GQA
// model): each layout's whole tensors equal the TP1 checkpoint's bit for bit and give megatron-
// core's per-token losses in our model; Hugging Face folders converted to TP2 x PP2 give
// transformers' losses; rank files, release directories and legacy key names
// written and read back; and errors naming the rank, file and key.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <tuple>

#include "meta_checkpoint.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/convert.h"
#include "mt/checkpoint/reshard.h"
#include "mt/error.h"
#include "mt/io/torch_file.h"
#include "mt/nn/dropout.h"
#include "mt/nn/parameter.h"
#include "mt/registry.h"
#include "same_bytes.h"
#include "test_support.h"
#include "torch_checkpoint.h"

namespace mt::plugins::torch_ckpt {
namespace {

namespace fs = std::filesystem;
using mt::test::error_of;
using mt::test::TempDir;

fs::path fixture(const std::string& name) {
    return mt::test::fixtures_dir() / "convert" / name;
}

// The whole tensors of the latest checkpoint in `dir`, with the parameters its args describe.
struct Whole {
    std::vector<ParameterInfo> params;
    std::vector<Tensor> tensors;
    ModelArgs args;
};

Whole whole_of(const fs::path& dir) {
    TorchCheckpoint format;
    const CheckpointLayout layout = format.layout(dir);
    std::vector<std::vector<NamedTensors>> ranks(size_t(layout.pipeline_parallel));
    Whole w;
    for (int64_t pp = 0; pp < layout.pipeline_parallel; ++pp)
        for (int64_t tp = 0; tp < layout.tensor_parallel; ++tp) {
            CheckpointState s = format.load_rank(dir, tp, pp);
            if (tp == 0 && pp == 0)
                w.args = model_args_from_checkpoint(
                    s.args, Registry::global().create_model("gpt")->flags());
            NamedTensors named;
            for (auto& [name, t] : s.model) named.emplace_back(name, t.local);
            ranks[size_t(pp)].push_back(std::move(named));
        }
    w.args["tensor-model-parallel-size"] = "1";
    w.params = Registry::global().create_model("gpt")->parameters(w.args);
    w.tensors = whole_tensors(w.params, layout, [&](int64_t tp, int64_t pp) -> const NamedTensors& {
        return ranks[size_t(pp)][size_t(tp)];
    });
    return w;
}

TEST(TorchLayouts, ReadsMegatronsRankDirectories) {
    TorchCheckpoint format;
    auto l = format.layout(fixture("tp1"));
    EXPECT_EQ(l.tensor_parallel * 10 + l.pipeline_parallel, 11);
    l = format.layout(fixture("tp2"));
    EXPECT_EQ(l.tensor_parallel * 10 + l.pipeline_parallel, 21);
    l = format.layout(fixture("pp2"));
    EXPECT_EQ(l.tensor_parallel * 10 + l.pipeline_parallel, 12);
    EXPECT_TRUE(format.detect(fixture("pp2")));
    CheckpointState last = format.load_rank(fixture("pp2"), 0, 1);
    EXPECT_EQ(last.iteration, 10);
    EXPECT_EQ(last.model.front().first, "decoder.layers.0.input_layernorm.weight")
        << "layers are numbered from 0 on each stage";
    EXPECT_EQ(last.model.back().first, "output_layer.weight") << "the tied copy";

    const std::string e = error_of([&] { format.load(fixture("tp2")); });
    EXPECT_NE(e.find("holds a tensor-parallel 2 x pipeline-parallel 1 checkpoint"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("megatron-convert"), std::string::npos) << e;
}

TEST(TorchLayouts, EveryMegatronLayoutJoinsIntoTheSameWholeTensors) {
    const Whole tp1 = whole_of(fixture("tp1"));
    ASSERT_EQ(tp1.params.size(), 28u);
    EXPECT_EQ(tp1.params[0].shape, (Shape{128, 16}));
    for (const char* layout : {"tp2", "pp2"}) {
        const Whole other = whole_of(fixture(layout));
        ASSERT_EQ(other.tensors.size(), tp1.tensors.size());
        for (size_t i = 0; i < tp1.tensors.size(); ++i)
            EXPECT_TRUE(same_bytes(other.tensors[i], tp1.tensors[i]))
                << layout << ": " << tp1.params[i].name;
    }
}

// Our model's per-token losses with the whole tensors `w` on tokens/labels [b, t].
std::vector<float> losses_of(const Whole& w, const std::vector<int64_t>& tokens,
                             const std::vector<int64_t>& labels, int64_t b, int64_t t) {
    auto model = Registry::global().create_model("gpt")->build(w.args);
    for (nn::Parameter* p : model->parameters()) {
        size_t i = 0;
        while (i < w.params.size() && w.params[i].name != p->name) ++i;
        MT_CHECK(i < w.params.size(), "no whole tensor for ", p->name);
        p->value.copy_from(w.tensors[i]);
    }
    Batch batch;
    for (const char* name : {"tokens", "labels", "position_ids"})
        batch[name] = Tensor::empty({b, t}, DType::i64);
    batch["loss_mask"] = Tensor::empty({b, t}, DType::f32);
    for (int64_t i = 0; i < b * t; ++i) {
        batch["tokens"].data<int64_t>()[i] = tokens[size_t(i)];
        batch["labels"].data<int64_t>()[i] = labels[size_t(i)];
        batch["position_ids"].data<int64_t>()[i] = i % t;
        batch["loss_mask"].data<float>()[i] = 1.0f;
    }
    nn::DropoutContext ctx{false, 0, 0};
    const Tensor losses = loss_term(model->forward(batch, ctx, nullptr), "lm loss").values;
    return std::vector<float>(losses.data<float>(), losses.data<float>() + losses.numel());
}

std::vector<int64_t> ints(const Tensor& t) {
    const Tensor c = t.contiguous();
    return std::vector<int64_t>(c.data<int64_t>(), c.data<int64_t>() + c.numel());
}

TEST(TorchLayouts, WholeTensorsGiveMegatronCoresLosses) {
    const io::PyValue ref = io::load_torch_file(fixture("reference.pt"));
    const Tensor tokens = ref["tokens"].as_tensor(), expected = ref["losses"].as_tensor();
    for (const char* layout : {"tp1", "tp2", "pp2"}) {
        const std::vector<float> ours =
            losses_of(whole_of(fixture(layout)), ints(tokens), ints(ref["labels"].as_tensor()),
                      tokens.shape()[0], tokens.shape()[1]);
        ASSERT_EQ(int64_t(ours.size()), expected.numel());
        for (size_t i = 0; i < ours.size(); ++i) {
            const float theirs = expected.data<float>()[i];
            EXPECT_NEAR(ours[i], theirs, 1e-5 * std::fabs(theirs) + 1e-6)
                << layout << " token " << i;
        }
    }
}

// Hugging Face folders (tests/fixtures/hf) and the Meta-layout copy of the Llama one
// (tests/fixtures/convert/llama_meta) -> torch TP2 x PP2 -> whole tensors: transformers' losses
// (tests/fixtures/hf/expected.json).
TEST(TorchLayouts, HuggingFaceAndMetaCheckpointsConvertToASplitLayoutWithTransformersLosses) {
    const fs::path hf_dir = mt::test::fixtures_dir() / "hf";
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load((hf_dir / "expected.json").string());
    std::vector<int64_t> tokens, labels;
    int64_t b = 0;
    for (auto row : doc["tokens"].get_array()) {
        ++b;
        for (auto x : row.get_array()) tokens.push_back(x.get_int64());
    }
    for (auto row : doc["labels"].get_array())
        for (auto x : row.get_array()) labels.push_back(x.get_int64());
    auto family = Registry::global().create_model("gpt");
    TorchCheckpoint torch;
    const std::tuple<const char*, fs::path, const char*> sources[] = {
        {"hf", hf_dir / "gpt2", "gpt2"},
        {"hf", hf_dir / "llama", "llama"},
        {"llama_meta", fixture("llama_meta"), "llama"}};
    for (const auto& [format, source, name] : sources) {
        TempDir dir;
        ConvertOptions o;
        o.progress = false;
        o.target_tensor_parallel = 2;
        o.target_pipeline_parallel = 2;
        o.iteration = 1;
        auto loader = Registry::global().create_checkpoint(format);
        convert_checkpoint(*loader, source, torch, dir.path(), *family, o);
        EXPECT_TRUE(fs::exists(dir / "iter_0000001/mp_rank_01_001/model_optim_rng.pt"));
        const std::vector<float> ours =
            losses_of(whole_of(dir.path()), tokens, labels, b, int64_t(tokens.size()) / b);
        std::vector<double> theirs;
        for (auto row : doc["models"][name]["losses"].get_array())
            for (auto x : row.get_array()) theirs.push_back(x.get_double());
        ASSERT_EQ(ours.size(), theirs.size());
        for (size_t i = 0; i < ours.size(); ++i)
            EXPECT_NEAR(ours[i], theirs[i], 1e-4 * std::fabs(theirs[i]))
                << format << " " << name << " token " << i;
    }
}

// Meta's layout (two shards, interleaved rotary pairs) reads into exactly the tensors the hf
// format reads from the Hugging Face folder it was made from.
TEST(TorchLayouts, MetaLlamaEqualsItsHuggingFaceFolderBitForBit) {
    MetaCheckpoint meta;
    EXPECT_TRUE(meta.detect(fixture("llama_meta")));
    EXPECT_FALSE(meta.detect(fixture("tp1")));
    const CheckpointState m = meta.load(fixture("llama_meta"));
    const CheckpointState h =
        Registry::global().create_checkpoint("hf")->load(mt::test::fixtures_dir() / "hf" / "llama");
    ASSERT_EQ(m.model.size(), h.model.size());
    for (const auto& [name, t] : h.model) {
        size_t i = 0;
        while (i < m.model.size() && m.model[i].first != name &&
               m.model[i].first != other_impl_name(name))
            ++i;
        ASSERT_LT(i, m.model.size()) << name;
        EXPECT_TRUE(same_bytes(m.model[i].second.local, t.local)) << name;
    }
    ASSERT_NE(m.find_arg("rotary_base"), nullptr);
    EXPECT_EQ(*m.find_arg("rotary_base"), ArgValue(500000.0));
    EXPECT_EQ(*m.find_arg("num_query_groups"), ArgValue(int64_t(2)));
    EXPECT_EQ(*m.find_arg("use_rope_scaling"), ArgValue(false));

    TempDir dir;
    fs::copy(fixture("llama_meta"), dir.path(), fs::copy_options::recursive);
    // Llama 3.1's params.json asks for its scaled rope: Megatron's --use-rope-scaling.
    const std::string params = mt::test::read_file(dir / "params.json");
    mt::test::write_file(dir / "params.json",
                         params.substr(0, params.rfind('}')) + ", \"use_scaled_rope\": true}");
    const CheckpointState scaled = meta.load(dir.path());
    EXPECT_EQ(*scaled.find_arg("use_rope_scaling"), ArgValue(true));
    EXPECT_EQ(*scaled.find_arg("rope_scaling_factor"), ArgValue(8.0));
    const fs::path file = dir / "consolidated.01.pth";
    fs::resize_file(file, fs::file_size(file) - 100);
    std::string e = error_of([&] { meta.load(dir.path()); });
    EXPECT_NE(e.find("cannot read checkpoint " + file.string() + ": "), std::string::npos) << e;
    mt::test::write_file(dir / "params.json", "{\"dim\": 32}");
    e = error_of([&] { meta.load(dir.path()); });
    EXPECT_NE(e.find("params.json: 'n_layers' is missing or not a positive integer"),
              std::string::npos)
        << e;
}

// A small state: two layers of `tensors` named as given, at `iteration`.
CheckpointState state_of(const NamedTensors& tensors, int64_t iteration, bool legacy, bool untied) {
    CheckpointState s;
    s.iteration = iteration;
    s.args = {{"use_legacy_models", legacy}, {"untie_embeddings_and_output_weights", untied}};
    for (const auto& [name, t] : tensors)
        s.model.emplace_back(name, ShardedTensor{t, t.shape(), Shape(t.dim(), 0)});
    return s;
}

Tensor filled(Shape shape, float v) {
    Tensor t = Tensor::empty(shape, DType::f32);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v + float(i);
    return t;
}

NamedTensors core_tensors() {
    return {{"embedding.word_embeddings.weight", filled({4, 2}, 0)},
            {"embedding.position_embeddings.weight", filled({3, 2}, 10)},
            {"decoder.layers.0.self_attention.linear_proj.weight", filled({2, 2}, 30)},
            {"decoder.layers.0.self_attention.linear_qkv.layer_norm_weight", filled({2}, 35)},
            {"decoder.layers.0.self_attention.linear_qkv.weight", filled({6, 2}, 40)},
            {"decoder.layers.0.self_attention.linear_qkv.bias", filled({6}, 50)},
            {"decoder.layers.0.pre_mlp_layernorm.bias", filled({2}, 60)},
            {"decoder.layers.0.mlp.linear_fc1.weight", filled({8, 2}, 70)},
            {"decoder.layers.0.mlp.linear_fc2.weight", filled({2, 4}, 80)},
            {"decoder.final_layernorm.weight", filled({2}, 90)},
            {"output_layer.weight", filled({4, 2}, 100)}};
}

TEST(TorchLayouts, LegacyModelsAreWrittenNestedAndReadBackUnderCoreNames) {
    for (bool untied : {false, true}) {
        TempDir dir;
        TorchCheckpoint format;
        const NamedTensors tensors = core_tensors();
        format.save_ranks(dir.path(), {1, 2}, [&](int64_t, int64_t pp) {
            return state_of(pp == 0 ? NamedTensors(tensors.begin(), tensors.end() - 2)
                                    : NamedTensors(tensors.end() - 2, tensors.end()),
                            5, true, untied);
        });
        const io::PyValue root =
            io::load_torch_file(dir / "iter_0000005/mp_rank_00_000/model_optim_rng.pt");
        const io::PyValue& lm = root["model"]["language_model"];
        EXPECT_TRUE(lm["embedding"]["word_embeddings"].find("weight"));
        const io::PyValue& encoder = lm["encoder"];
        for (const char* key :
             {"layers.0.input_norm.weight", "layers.0.self_attention.dense.weight",
              "layers.0.self_attention.query_key_value.bias", "layers.0.post_attention_norm.bias",
              "layers.0.mlp.dense_h_to_4h.weight", "layers.0.mlp.dense_4h_to_h.weight"})
            EXPECT_TRUE(encoder.find(key)) << key;
        const io::PyValue last =
            io::load_torch_file(dir / "iter_0000005/mp_rank_00_001/model_optim_rng.pt")["model"];
        EXPECT_TRUE(last["language_model"]["encoder"].find("final_norm.weight"));
        if (untied)
            EXPECT_TRUE(last["language_model"]["output_layer"].find("weight"));
        else
            EXPECT_TRUE(last["word_embeddings_for_head"].find("weight"));

        // Each layer's modules in the order Megatron's ParallelTransformerLayer registers them.
        std::vector<std::string> order;
        for (const auto& [k, v] : encoder.dict_ref().items) order.push_back(k.as_string());
        EXPECT_EQ(
            order,
            (std::vector<std::string>{
                "layers.0.input_norm.weight", "layers.0.self_attention.query_key_value.weight",
                "layers.0.self_attention.query_key_value.bias",
                "layers.0.self_attention.dense.weight", "layers.0.post_attention_norm.bias",
                "layers.0.mlp.dense_h_to_4h.weight", "layers.0.mlp.dense_4h_to_h.weight"}));

        CheckpointState back = format.load_rank(dir.path(), 0, 0);
        ASSERT_EQ(back.model.size(), 9u);
        for (size_t i = 0; i < back.model.size(); ++i) {
            std::string want = tensors[i].first;
            if (want.find("layer_norm_weight") != std::string::npos) want = other_impl_name(want);
            auto it = std::find_if(back.model.begin(), back.model.end(),
                                   [&](const auto& e) { return e.first == want; });
            ASSERT_NE(it, back.model.end()) << want;
            EXPECT_TRUE(same_bytes(it->second.local, tensors[i].second)) << want;
        }
        EXPECT_EQ(format.load_rank(dir.path(), 0, 1).model.back().first, "output_layer.weight");
    }
}

TEST(TorchLayouts, OldLegacySpellingsAreRenamedAsMegatronDoes) {
    TempDir dir;
    io::PyValue transformer = io::PyValue::dict(true);
    transformer.dict_ref().set("layers.0.input_layernorm.weight",
                               io::PyValue::tensor(filled({2}, 1)));
    transformer.dict_ref().set("layers.0.attention.query_key_value.weight",
                               io::PyValue::tensor(filled({6, 2}, 2)));
    transformer.dict_ref().set("layers.0.post_attention_layernorm.weight",
                               io::PyValue::tensor(filled({2}, 3)));
    transformer.dict_ref().set("final_layernorm.weight", io::PyValue::tensor(filled({2}, 4)));
    io::PyValue lm = io::PyValue::dict();
    lm.dict_ref().set("transformer", transformer);
    io::PyValue model = io::PyValue::dict();
    model.dict_ref().set("language_model", lm);
    io::PyValue root = io::PyValue::dict();
    root.dict_ref().set("iteration", io::PyValue::integer(3));
    root.dict_ref().set("checkpoint_version", io::PyValue::real(3.0));
    root.dict_ref().set("model", model);
    fs::create_directories(dir / "iter_0000003/mp_rank_00");
    io::save_torch_file(dir / "iter_0000003/mp_rank_00/model_optim_rng.pt", root);
    mt::test::write_file(dir / "latest_checkpointed_iteration.txt", "3");

    TorchCheckpoint format;
    CheckpointState s = format.load(dir.path());
    std::vector<std::string> names;
    for (const auto& [name, t] : s.model) names.push_back(name);
    EXPECT_EQ(names, (std::vector<std::string>{"decoder.layers.0.input_layernorm.weight",
                                               "decoder.layers.0.self_attention.linear_qkv.weight",
                                               "decoder.layers.0.pre_mlp_layernorm.weight",
                                               "decoder.final_layernorm.weight"}));

    // Older QKV orders (fix_query_key_value_ordering): reordering needs the head size.
    root.dict_ref().set("checkpoint_version", io::PyValue::real(1.0));
    io::save_torch_file(dir / "iter_0000003/mp_rank_00/model_optim_rng.pt", root);
    const std::string e = error_of([&] { format.load(dir.path()); });
    EXPECT_NE(e.find("checkpoint_version 1 stores QKV in an order before Megatron's 2.0, and "
                     "reordering it needs the head size"),
              std::string::npos)
        << e;
    // One head of 2 rows: version 1.0's rows [head, row, q/k/v] become [head, q/k/v, row],
    // version 0's [q/k/v, head, row] are already that for one head.
    io::PyObject ns;
    ns.module = "argparse";
    ns.name = "Namespace";
    ns.make = io::PyObject::Make::newobj;
    ns.args = io::PyValue::tuple();
    ns.state = io::PyValue::dict();
    ns.state.dict_ref().set("hidden_size", io::PyValue::integer(2));
    ns.state.dict_ref().set("num_attention_heads", io::PyValue::integer(1));
    root.dict_ref().set("args", io::PyValue::object(std::move(ns)));
    for (double version : {1.0, 0.0}) {
        root.dict_ref().set("checkpoint_version", io::PyValue::real(version));
        io::save_torch_file(dir / "iter_0000003/mp_rank_00/model_optim_rng.pt", root);
        const Tensor qkv = format.load(dir.path()).model[1].second.local;
        const Tensor old = filled({6, 2}, 2);
        for (int64_t split = 0; split < 3; ++split)
            for (int64_t row = 0; row < 2; ++row) {
                const int64_t from = version == 1.0 ? row * 3 + split : split * 2 + row;
                EXPECT_TRUE(same_bytes(qkv.slice(0, split * 2 + row, split * 2 + row + 1),
                                       old.slice(0, from, from + 1)))
                    << "version " << version << " q/k/v " << split << " row " << row;
            }
    }
}

TEST(TorchLayouts, IterationZeroIsSavedAsTheReleaseCheckpoint) {
    TempDir dir;
    TorchCheckpoint format;
    const NamedTensors tensors = core_tensors();
    format.save_ranks(dir.path(), {2, 1},
                      [&](int64_t, int64_t) { return state_of(tensors, 0, false, false); });
    EXPECT_EQ(mt::test::read_file(dir / "latest_checkpointed_iteration.txt"), "release");
    EXPECT_TRUE(fs::exists(dir / "release/mp_rank_01/model_optim_rng.pt"));
    EXPECT_EQ(format.layout(dir.path()).tensor_parallel, 2);
    EXPECT_EQ(format.load_rank(dir.path(), 1, 0).iteration, 0);
}

TEST(TorchLayouts, MissingOrTruncatedRankFilesAreErrorsNamingThem) {
    TempDir dir;
    fs::copy(fixture("tp2"), dir.path(), fs::copy_options::recursive);
    TorchCheckpoint format;
    const fs::path file = dir / "iter_0000010/mp_rank_01/model_optim_rng.pt";
    fs::resize_file(file, fs::file_size(file) - 300);
    std::string e = error_of([&] { format.load_rank(dir.path(), 1, 0); });
    EXPECT_NE(e.find("cannot read checkpoint " + file.string() + ": "), std::string::npos) << e;
    EXPECT_NE(e.find("zip"), std::string::npos) << "the reason: " << e;

    fs::remove_all(dir / "iter_0000010/mp_rank_00");
    mt::test::write_file(dir / "iter_0000010/mp_rank_00", "");
    e = error_of([&] { format.layout(dir.path()); });
    EXPECT_NE(e.find("tensor-parallel 2 x pipeline-parallel 1 checkpoint but " +
                     (dir / "iter_0000010/mp_rank_00").string() + " is missing"),
              std::string::npos)
        << e;
}

// convert_checkpoint with the source's own args checks every rank's keys and shapes.
TEST(TorchLayouts, ConvertingReportsShapesThatContradictTheArgsAndUnknownKeys) {
    TempDir dir;
    TorchCheckpoint format;
    auto family = Registry::global().create_model("gpt");
    CheckpointState s = format.load(fixture("tp1"));
    for (auto& [k, v] : s.args)
        if (k == "ffn_hidden_size") v = int64_t(48);
    format.save(dir / "wide", s);
    ConvertOptions o;
    o.progress = false;
    std::string e = error_of(
        [&] { convert_checkpoint(format, dir / "wide", format, dir / "out", *family, o); });
    EXPECT_NE(e.find("rank (tensor 0, pipeline 0): 'decoder.layers.0.mlp.linear_fc1.weight' has "
                     "shape [64, 16] but the model args give [96, 16]"),
              std::string::npos)
        << e;

    s = format.load(fixture("tp1"));
    Tensor extra = filled({3}, 0);
    s.model.emplace_back("decoder.layers.1.self_attention.q_layernorm.weight",
                         ShardedTensor{extra, {3}, {0}});
    format.save(dir / "extra", s);
    e = error_of(
        [&] { convert_checkpoint(format, dir / "extra", format, dir / "out", *family, o); });
    EXPECT_NE(e.find("holds 'decoder.layers.1.self_attention.q_layernorm.weight' [3], which is not "
                     "a parameter of the model its args describe"),
              std::string::npos)
        << e;
    EXPECT_FALSE(fs::exists(dir / "out" / "latest_checkpointed_iteration.txt"));

    // Sizes in the args are checked like flags: a tensor-parallel size of 0 divided by zero.
    s = format.load(fixture("tp1"));
    for (auto& [k, v] : s.args)
        if (k == "tensor_model_parallel_size") v = int64_t(0);
    format.save(dir / "zero", s);
    e = error_of(
        [&] { convert_checkpoint(format, dir / "zero", format, dir / "out", *family, o); });
    EXPECT_NE(e.find("the target layout tensor parallel 0 x pipeline parallel 1 (from the "
                     "checkpoint's args in " +
                     (dir / "zero").string() + ") must be positive"),
              std::string::npos)
        << e;
}

}  // namespace
}  // namespace mt::plugins::torch_ckpt
