// Resharding of whole tensors into Megatron's per-rank state dicts and back: the split of each
// ShardSpec kind (QKV whole groups, SwiGLU [gate_r; up_r], row), vocabulary resizing as
// tools/checkpoint does it, pipeline stages with local layer numbers and the tied-embedding copy,
// exact round trips, and errors naming the rank and key.
#include <gtest/gtest.h>

#include <map>

#include "mt/checkpoint/reshard.h"
#include "test_support.h"

namespace mt {
namespace {

using mt::test::element;
using mt::test::error_of;
using Kind = ShardSpec::Kind;

// A tensor holding 0, 1, 2, ... in row-major order.
Tensor iota(const Shape& shape) {
    Tensor t = Tensor::empty(shape, DType::f32);
    for (int64_t i = 0; i < t.numel(); ++i) mt::test::set_element(t, i, double(i));
    return t;
}

std::vector<double> values(const Tensor& t) {
    const Tensor c = t.contiguous();
    std::vector<double> out;
    for (int64_t i = 0; i < c.numel(); ++i) out.push_back(element(c, i));
    return out;
}

TEST(Reshard, QkvRanksHoldWholeQueryGroups) {
    const ShardSpec qkv{Kind::column, 0, 2};  // 2 groups of 3 rows, 1 column
    const Tensor whole = iota({6, 1});
    EXPECT_EQ(values(shard_tensor(whole, qkv, 2, 0)), (std::vector<double>{0, 1, 2}));
    EXPECT_EQ(values(shard_tensor(whole, qkv, 2, 1)), (std::vector<double>{3, 4, 5}));
    EXPECT_EQ(values(unshard_tensor(
                  {shard_tensor(whole, qkv, 2, 0), shard_tensor(whole, qkv, 2, 1)}, qkv)),
              values(whole));
    const std::string e = error_of([&] { shard_tensor(whole, qkv, 4, 0); });
    EXPECT_NE(e.find("does not split into 4 equal tensor-parallel pieces"), std::string::npos) << e;
    const std::string g = error_of([&] { shard_tensor(iota({8, 1}), {Kind::column, 0, 2}, 4, 0); });
    EXPECT_NE(g.find("its 2 groups (query groups) do not split evenly across 4"), std::string::npos)
        << g;
}

TEST(Reshard, SwigluRanksHoldTheirSliceOfGateAndUp) {
    const ShardSpec fc1{Kind::column, 0, 2, true};
    const Tensor whole = iota({8, 2});  // gate rows 0-3, up rows 4-7
    const Tensor r0 = shard_tensor(whole, fc1, 2, 0), r1 = shard_tensor(whole, fc1, 2, 1);
    EXPECT_EQ(values(r0), (std::vector<double>{0, 1, 2, 3, 8, 9, 10, 11}));
    EXPECT_EQ(values(r1), (std::vector<double>{4, 5, 6, 7, 12, 13, 14, 15}));
    EXPECT_EQ(values(unshard_tensor({r0, r1}, fc1)), values(whole));
    const Tensor bias = iota({8});
    EXPECT_EQ(values(shard_tensor(bias, fc1, 4, 3)), (std::vector<double>{3, 7}));
}

// Parts of unequal sizes (a Mamba in_proj's [z; x; B; C; dt]): each rank holds its slice of
// every part, end to end, placed in the whole as one box per part.
TEST(Reshard, UnequalPartsAreEachSplitAcrossTheRanks) {
    ShardSpec in_proj{Kind::column, 0, 1};
    in_proj.part_sizes = {4, 2, 2};
    const Tensor whole = iota({8});
    const Tensor r0 = shard_tensor(whole, in_proj, 2, 0), r1 = shard_tensor(whole, in_proj, 2, 1);
    EXPECT_EQ(values(r0), (std::vector<double>{0, 1, 4, 6}));
    EXPECT_EQ(values(r1), (std::vector<double>{2, 3, 5, 7}));
    EXPECT_EQ(values(unshard_tensor({r0, r1}, in_proj)), values(whole));
    const auto pieces = piece_boxes(r1, {8}, in_proj, 2, 1);
    ASSERT_EQ(pieces.size(), 3u);
    EXPECT_EQ(pieces[0].global_offset, (Shape{2}));
    EXPECT_EQ(pieces[1].global_offset, (Shape{5}));
    EXPECT_EQ(pieces[2].global_offset, (Shape{7}));
    EXPECT_EQ(values(pieces[0].local), (std::vector<double>{2, 3}));
    EXPECT_EQ(values(pieces[2].local), (std::vector<double>{7}));
    std::string e = error_of([&] { shard_tensor(whole, in_proj, 4, 0); });
    EXPECT_NE(e.find("does not split into 3 parts of 4"), std::string::npos) << e;
    e = error_of([&] { shard_tensor(iota({9}), in_proj, 2, 0); });
    EXPECT_NE(e.find("do not cover the 9"), std::string::npos) << e;
}

TEST(Reshard, RowSplitsDimensionOneAndReplicatedIsShared) {
    const ShardSpec row{Kind::row, 1, 1};
    const Tensor whole = iota({2, 4});
    const Tensor r1 = shard_tensor(whole, row, 2, 1);
    EXPECT_EQ(r1.shape(), (Shape{2, 2}));
    EXPECT_EQ(values(r1), (std::vector<double>{2, 3, 6, 7}));
    EXPECT_EQ(values(unshard_tensor({shard_tensor(whole, row, 2, 0), r1}, row)), values(whole));
    const Tensor norm = iota({4});
    EXPECT_EQ(values(shard_tensor(norm, {}, 8, 5)), values(norm));
    EXPECT_EQ(values(unshard_tensor({norm, norm}, {})), values(norm));
}

// The boxes of the whole each rank's piece covers (what torch_dist's per-rank files record):
// their contents, laid end to end, are the rank's piece.
TEST(Reshard, ShardBoxesPlaceEachRanksPieceInTheWhole) {
    const ShardSpec fc1{Kind::column, 0, 2, true}, qkv{Kind::column, 0, 2}, row{Kind::row, 1, 1};
    auto boxes = shard_boxes({8, 2}, fc1, 2, 1);
    ASSERT_EQ(boxes.size(), 2u) << "SwiGLU: the gate rows and the up rows";
    EXPECT_EQ(boxes[0].offset, (Shape{2, 0}));
    EXPECT_EQ(boxes[1].offset, (Shape{6, 0}));
    EXPECT_EQ(boxes[1].size, (Shape{2, 2}));
    boxes = shard_boxes({6, 1}, qkv, 2, 1);
    ASSERT_EQ(boxes.size(), 1u) << "QKV: whole query groups, one box";
    EXPECT_EQ(boxes[0].offset, (Shape{3, 0}));
    boxes = shard_boxes({2, 4}, row, 2, 1);
    EXPECT_EQ(boxes[0].offset, (Shape{0, 2}));
    EXPECT_EQ(boxes[0].size, (Shape{2, 2}));
    boxes = shard_boxes({4}, {}, 2, 1);
    EXPECT_EQ(boxes[0].size, (Shape{4})) << "replicated: the whole";

    // Rank 1's SwiGLU piece [gate_1; up_1] as its two boxes: views of the piece, placed.
    const Tensor whole = iota({8, 2});
    const auto pieces = piece_boxes(shard_tensor(whole, fc1, 2, 1), {8, 2}, fc1, 2, 1);
    ASSERT_EQ(pieces.size(), 2u);
    EXPECT_EQ(pieces[0].global_offset, (Shape{2, 0}));
    EXPECT_EQ(pieces[1].global_offset, (Shape{6, 0}));
    EXPECT_EQ(pieces[1].global_shape, (Shape{8, 2}));
    EXPECT_EQ(values(pieces[0].local), (std::vector<double>{4, 5, 6, 7}));
    EXPECT_EQ(values(pieces[1].local), (std::vector<double>{12, 13, 14, 15}));
    const std::string e = error_of([&] { piece_boxes(whole, {8, 2}, fc1, 2, 1); });
    EXPECT_NE(e.find("tensor-parallel rank 1's piece of a [8, 2] tensor"), std::string::npos) << e;
}

TEST(Reshard, VocabTablesAreTruncatedOrPaddedWithTheLastRow) {
    const Tensor table = iota({3, 2});
    EXPECT_EQ(values(resize_vocab_rows(table, 2)), (std::vector<double>{0, 1, 2, 3}));
    EXPECT_EQ(values(resize_vocab_rows(table, 5)),
              (std::vector<double>{0, 1, 2, 3, 4, 5, 4, 5, 4, 5}));
    EXPECT_EQ(values(resize_vocab_rows(table, 3)), values(table));
}

TEST(Reshard, NormNamesOfTheOtherTransformerImpl) {
    EXPECT_EQ(other_impl_name("decoder.layers.3.self_attention.linear_qkv.layer_norm_weight"),
              "decoder.layers.3.input_layernorm.weight");
    EXPECT_EQ(other_impl_name("decoder.layers.0.pre_mlp_layernorm.bias"),
              "decoder.layers.0.mlp.linear_fc1.layer_norm_bias");
    EXPECT_EQ(other_impl_name("decoder.final_layernorm.weight"), "decoder.final_layernorm.weight");
}

TEST(Reshard, ExpertNamesOfTheOtherExpertsModule) {
    EXPECT_EQ(other_impl_name("decoder.layers.1.mlp.experts.linear_fc1.weight12"),
              "decoder.layers.1.mlp.experts.local_experts.12.linear_fc1.weight");
    EXPECT_EQ(other_impl_name("decoder.layers.1.mlp.experts.local_experts.3.linear_fc2.weight"),
              "decoder.layers.1.mlp.experts.linear_fc2.weight3");
    // GPT-OSS's expert biases (core_v0.19) alike.
    EXPECT_EQ(other_impl_name("decoder.layers.1.mlp.experts.local_experts.3.linear_fc1.bias"),
              "decoder.layers.1.mlp.experts.linear_fc1.bias3");
    EXPECT_EQ(other_impl_name("decoder.layers.1.mlp.experts.linear_fc2.bias0"),
              "decoder.layers.1.mlp.experts.local_experts.0.linear_fc2.bias");
    for (const char* same : {"decoder.layers.1.mlp.experts.linear_fc1.weight",
                             "decoder.layers.1.mlp.experts.linear_fc1.bias",
                             "decoder.layers.1.mlp.shared_experts.linear_fc1.weight",
                             "decoder.layers.1.mlp.experts.local_experts.3.linear_fc1.layer_norm",
                             "decoder.layers.1.mlp.router.weight"})
        EXPECT_EQ(other_impl_name(same), same);
}

// A 4-layer model with tied embeddings (`untied` adds an output layer).
std::vector<ParameterInfo> tiny_params(bool untied = false) {
    std::vector<ParameterInfo> p;
    auto add = [&](std::string name, Shape shape, ShardSpec spec) {
        p.push_back({std::move(name), std::move(shape), DType::f32, spec, true});
    };
    add("embedding.word_embeddings.weight", {8, 2}, {Kind::vocab, 0, 1});
    add("embedding.position_embeddings.weight", {4, 2}, {});
    for (int l = 0; l < 4; ++l) {
        const std::string layer = "decoder.layers." + std::to_string(l);
        add(layer + ".input_layernorm.weight", {2}, {});
        add(layer + ".self_attention.linear_qkv.weight", {12, 2}, {Kind::column, 0, 2});
        add(layer + ".self_attention.linear_proj.weight", {2, 4}, {Kind::row, 1, 1});
        add(layer + ".mlp.linear_fc1.weight", {8, 2}, {Kind::column, 0, 2, true});
        add(layer + ".mlp.linear_fc2.weight", {2, 4}, {Kind::row, 1, 1});
    }
    add("decoder.final_layernorm.weight", {2}, {});
    if (untied) add("output_layer.weight", {8, 2}, {Kind::vocab, 0, 1});
    return p;
}

std::vector<std::string> keys_of(const std::vector<StageKey>& keys,
                                 const std::vector<ParameterInfo>& params) {
    std::vector<std::string> out;
    for (const auto& k : keys) out.push_back(k.key + "=" + params[k.param].name);
    return out;
}

TEST(Reshard, PipelineStagesRenumberLayersAndCopyTiedEmbeddingsToTheLast) {
    auto params = tiny_params();
    auto first = keys_of(stage_keys(params, 2, 0), params);
    ASSERT_EQ(first.size(), 12u);
    EXPECT_EQ(first[0], "embedding.word_embeddings.weight=embedding.word_embeddings.weight");
    EXPECT_EQ(first[11],
              "decoder.layers.1.mlp.linear_fc2.weight=decoder.layers.1.mlp.linear_fc2.weight");
    auto last = keys_of(stage_keys(params, 2, 1), params);
    ASSERT_EQ(last.size(), 12u);
    EXPECT_EQ(last[0],
              "decoder.layers.0.input_layernorm.weight=decoder.layers.2.input_layernorm.weight");
    EXPECT_EQ(last[10], "decoder.final_layernorm.weight=decoder.final_layernorm.weight");
    EXPECT_EQ(last[11], "output_layer.weight=embedding.word_embeddings.weight");
    EXPECT_EQ(stage_keys(params, 1, 0).size(), params.size()) << "no copy on a single stage";
    auto untied = tiny_params(true);
    EXPECT_EQ(keys_of(stage_keys(untied, 4, 3), untied).back(),
              "output_layer.weight=output_layer.weight");
    std::string e = error_of([&] { stage_keys(params, 3, 0); });
    EXPECT_NE(e.find("4 layers do not split evenly into 3 pipeline stages"), std::string::npos)
        << e;
}

// Virtual stages and uneven stages, as Megatron's torch files of an interleaved run hold them:
// 6 layers, 2 stages of 2 chunks, the first stage 4 layers (2 per chunk), the last 2 (1 each):
// stage 0 holds [0 1] [3 4], stage 1 [2] [5].
TEST(Reshard, VirtualStageKeysNameEachChunksLayersFromZero) {
    const parallel::PipelineSplit split{6, 2, 4, -1, false, false, 2};
    EXPECT_EQ(stage_place(split, "decoder.layers.5.mlp.linear_fc1.weight").key,
              "decoder.layers.0.mlp.linear_fc1.weight");
    const StagePlace third =
        stage_place(split, "decoder.layers.3.self_attention.linear_qkv.weight");
    EXPECT_EQ(third.stage, 0);
    EXPECT_EQ(third.chunk, 1);
    EXPECT_EQ(third.key, "decoder.layers.0.self_attention.linear_qkv.weight");
    EXPECT_EQ(stage_place(split, "output_layer.weight").chunk, 1);
    EXPECT_EQ(whole_model_name(split, 1, 1, "decoder.layers.0.mlp.linear_fc2.bias"),
              "decoder.layers.5.mlp.linear_fc2.bias");
    // A stage's state renamed and back.
    CheckpointState state;
    for (const char* name :
         {"decoder.layers.2.input_layernorm.weight", "decoder.layers.5.input_layernorm.weight",
          "decoder.final_layernorm.weight"})
        state.model.emplace_back(name, ShardedTensor::whole(iota({2})));
    CheckpointState renamed = state;
    name_for_stage(renamed, split, 1);
    EXPECT_EQ(renamed.model[0].first, "model0.decoder.layers.0.input_layernorm.weight");
    EXPECT_EQ(renamed.model[1].first, "model1.decoder.layers.0.input_layernorm.weight");
    EXPECT_EQ(renamed.model[2].first, "model1.decoder.final_layernorm.weight");
    name_for_whole_model(renamed, split, 1);
    for (size_t i = 0; i < state.model.size(); ++i)
        EXPECT_EQ(renamed.model[i].first, state.model[i].first);
    EXPECT_THROW(name_for_stage(state, split, 0), Error);  // not stage 0's layers
    // The tied word embeddings' copy sits in the last stage's last chunk.
    const auto params = tiny_params(false);
    const parallel::PipelineSplit two_by_two{4, 2, -1, -1, false, false, 2};
    auto last = keys_of(stage_keys(params, two_by_two, 1), params);
    EXPECT_EQ(
        last.front(),
        "model0.decoder.layers.0.input_layernorm.weight=decoder.layers.1.input_layernorm.weight");
    EXPECT_EQ(last.back(), "model1.output_layer.weight=embedding.word_embeddings.weight");
}

std::vector<Tensor> whole_of(const std::vector<ParameterInfo>& params) {
    std::vector<Tensor> out;
    for (size_t i = 0; i < params.size(); ++i) {
        Tensor t = iota(params[i].shape);
        for (int64_t j = 0; j < t.numel(); ++j) mt::test::set_element(t, j, 1000.0 * i + j);
        out.push_back(t);
    }
    return out;
}

TEST(Reshard, EveryLayoutRoundTripsExactly) {
    auto params = tiny_params();
    const auto whole = whole_of(params);
    for (CheckpointLayout layout : {CheckpointLayout{1, 1}, CheckpointLayout{2, 1},
                                    CheckpointLayout{1, 2}, CheckpointLayout{2, 4}}) {
        std::map<std::pair<int64_t, int64_t>, NamedTensors> ranks;
        for (int64_t pp = 0; pp < layout.pipeline_parallel; ++pp)
            for (int64_t tp = 0; tp < layout.tensor_parallel; ++tp)
                ranks[{tp, pp}] = rank_tensors(params, whole, layout, tp, pp);
        if (layout.pipeline_parallel > 1) {
            const auto& tail = ranks[{0, layout.pipeline_parallel - 1}].back();
            EXPECT_EQ(tail.first, "output_layer.weight");
            EXPECT_EQ(values(tail.second),
                      values(shard_tensor(whole[0], params[0].shard, layout.tensor_parallel, 0)));
        }
        auto back =
            whole_tensors(params, layout, [&](int64_t tp, int64_t pp) -> const NamedTensors& {
                return ranks.at({tp, pp});
            });
        ASSERT_EQ(back.size(), whole.size());
        for (size_t i = 0; i < whole.size(); ++i)
            EXPECT_EQ(values(back[i]), values(whole[i]))
                << params[i].name << " tp " << layout.tensor_parallel << " pp "
                << layout.pipeline_parallel;
    }
}

TEST(Reshard, RankStateDictsAreCheckedByKeyAndShape) {
    auto params = tiny_params();
    const CheckpointLayout layout{2, 2};
    std::map<std::pair<int64_t, int64_t>, NamedTensors> ranks;
    for (int64_t pp = 0; pp < 2; ++pp)
        for (int64_t tp = 0; tp < 2; ++tp)
            ranks[{tp, pp}] = rank_tensors(params, whole_of(params), layout, tp, pp);
    auto load = [&] {
        return whole_tensors(params, layout, [&](int64_t tp, int64_t pp) -> const NamedTensors& {
            return ranks.at({tp, pp});
        });
    };
    // The Transformer Engine spelling of a norm and _extra_state entries are accepted.
    auto& r = ranks[{1, 1}];
    r[0].first = "decoder.layers.0.self_attention.linear_qkv.layer_norm_weight";
    r.emplace_back("decoder.layers.0.self_attention.linear_qkv._extra_state", Tensor());
    EXPECT_NO_THROW(load());

    r.emplace_back("decoder.layers.0.mlp.router.weight", iota({4, 2}));
    std::string e = error_of(load);
    EXPECT_NE(
        e.find("rank (tensor 1, pipeline 1) holds 'decoder.layers.0.mlp.router.weight' [4, 2], "
               "which is not a parameter"),
        std::string::npos)
        << e;
    r.pop_back();

    std::swap(r[2], r.back());
    auto removed = r.back();
    r.pop_back();
    e = error_of(load);
    EXPECT_NE(e.find("rank (tensor 1, pipeline 1) has no "
                     "'decoder.layers.0.self_attention.linear_proj.weight' "
                     "(decoder.layers.2.self_attention.linear_proj.weight, whole shape [2, 4])"),
              std::string::npos)
        << e;
    removed.second = iota({2, 4});
    r.push_back(removed);
    e = error_of(load);
    EXPECT_NE(e.find("'decoder.layers.0.self_attention.linear_proj.weight' has shape [2, 4] but "
                     "the model args give [2, 2] per rank (whole [2, 4])"),
              std::string::npos)
        << e;
}

}  // namespace
}  // namespace mt
