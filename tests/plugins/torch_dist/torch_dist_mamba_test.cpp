// A Mamba layer's tensors in torch_dist as megatron-core's MambaMixer.sharded_state_dict keeps
// them: in_proj.weight's rows under ".z", ".x", ".B", ".C", ".dt" and conv1d's under ".x", ".B",
// ".C", each part a key of its own, for the model, its optimizer moments and the distributed
// optimizer's flattened ranges; read back whole.
#include <gtest/gtest.h>

#include <numeric>

#include "dcp_metadata.h"
#include "mt/checkpoint/checkpoint_args.h"
#include "mt/model.h"
#include "test_support.h"
#include "torch_dist_checkpoint.h"
#include "torch_dist_test_support.h"

namespace mt::plugins::torch_dist {
namespace {

namespace fs = std::filesystem;
using mt::test::TempDir;

// Megatron's own hybrid checkpoint (core_v0.13 pretrain_mamba.py, "M*-M",
// tests/fixtures/megatron_checkpoints/make_fixtures.py): hidden 16, head dim 8: 4 heads,
// d_inner 32; 2 groups of state 8: B and C 16 rows each; saved at iteration 3.
constexpr int64_t kHidden = 16, kInner = 32, kGroupState = 16, kHeads = 4;
const fs::path kIteration = "iter_0000003";

fs::path megatron_fixture(const std::string& version) {
    return mt::test::fixtures_dir() / "megatron_checkpoints" / version / "mamba_torch_dist_fp32";
}

Tensor counting(const Shape& shape, float start) {
    Tensor t = Tensor::empty(shape, DType::f32);
    std::iota(t.data<float>(), t.data<float>() + t.numel(), start);
    return t;
}

// That checkpoint (its args as Megatron's parse_args and validate_args made them) with Adam
// moments, which Megatron saved without: each tensor's counting up from a start of its own.
CheckpointState mamba_state() {
    TorchDistCheckpoint format;
    CheckpointState s = format.load(megatron_fixture("core_v0.13"));
    OptimizerCheckpoint o;
    o.step = 3;
    o.lr = 1e-3;
    float start = 0;
    for (const auto& [name, t] : s.model) {
        OptimizerParamState p;
        p.name = name;
        p.weight_decay = megatron_weight_decay(name, t.global_shape);
        p.exp_avg = counting(t.global_shape, start + 0.5f);
        p.exp_avg_sq = counting(t.global_shape, start + 0.25f);
        o.params.push_back(std::move(p));
        start += 10000;
    }
    s.optimizer = std::move(o);
    return s;
}

TEST(TorchDistMamba, MixerTensorsAreStoredInMegatronsPartsAndReadBackWhole) {
    TorchDistCheckpoint format;
    const CheckpointState state = mamba_state();
    TempDir dir;
    format.save(dir.path(), state);
    expect_same_state(format.load(dir.path()), state);

    const DcpMetadata meta = read_dcp_metadata(dir / kIteration / ".metadata");
    const std::string mixer = "decoder.layers.0.mixer.";
    const std::pair<std::string, Shape> parts[] = {
        {"in_proj.weight.z", {kInner, kHidden}},     {"in_proj.weight.x", {kInner, kHidden}},
        {"in_proj.weight.B", {kGroupState, kHidden}}, {"in_proj.weight.C", {kGroupState, kHidden}},
        {"in_proj.weight.dt", {kHeads, kHidden}},     {"conv1d.weight.x", {kInner, 1, 4}},
        {"conv1d.weight.B", {kGroupState, 1, 4}},     {"conv1d.weight.C", {kGroupState, 1, 4}},
        {"conv1d.bias.x", {kInner}},                  {"conv1d.bias.B", {kGroupState}},
        {"conv1d.bias.C", {kGroupState}}};
    for (const auto& [part, shape] : parts)
        for (const std::string prefix : {"", "optimizer.state.exp_avg."}) {
            const DcpEntry* e = meta.find(prefix + mixer + part);
            ASSERT_NE(e, nullptr) << prefix << mixer << part;
            EXPECT_EQ(e->size, shape) << part;
            ASSERT_EQ(e->chunks.size(), 1u);
            EXPECT_EQ(e->chunks[0].sizes, shape);
        }
    for (const std::string whole : {"in_proj.weight", "conv1d.weight", "conv1d.bias"})
        EXPECT_EQ(meta.find(mixer + whole), nullptr) << whole;
    EXPECT_NE(meta.find(mixer + "in_proj.layer_norm_weight"), nullptr);
    for (const std::string linear : {"in_proj", "out_proj"}) {
        const DcpEntry* extra = meta.find(mixer + linear + "._extra_state/shard_0_1");
        ASSERT_NE(extra, nullptr) << linear;
        EXPECT_TRUE(extra->bytes);
    }
}

// Two data-parallel ranks' ranges of every tensor, cut where the parts do not end: each part's
// key gets the rows of each range it overlaps.
TEST(TorchDistMamba, DistributedOptimizerRangesAreCutIntoTheParts) {
    TorchDistCheckpoint format;
    CheckpointState state = mamba_state();
    set_arg(state.args, "use_distributed_optimizer", true);
    add_two_rank_shards(state, [](int64_t n) { return n / 3 + 1; });
    TempDir dir;
    format.save(dir.path(), state);
    const CheckpointState back = format.load(dir.path());
    ASSERT_TRUE(back.optimizer) << back.optimizer_not_loaded;
    state.optimizer->shards.clear();
    expect_same_moments(back, state);
    // in_proj [100, 16] is cut after element 534 (row 33, in x): x in two chunks, z and dt in one.
    const DcpMetadata meta = read_dcp_metadata(dir / kIteration / ".metadata");
    const std::string in_proj = "optimizer.state.exp_avg.decoder.layers.0.mixer.in_proj.weight.";
    const DcpEntry* x = meta.find(in_proj + "x");
    ASSERT_NE(x, nullptr);
    EXPECT_EQ(x->flattened_from, (Shape{kInner, kHidden}));
    EXPECT_EQ(x->size, (Shape{1, 1, kInner * kHidden}));
    EXPECT_EQ(x->chunks.size(), 2u);
    ASSERT_NE(meta.find(in_proj + "z"), nullptr);
    EXPECT_EQ(meta.find(in_proj + "z")->chunks.size(), 1u);
    const DcpEntry* dt =
        meta.find("optimizer.state.fp32_param.decoder.layers.0.mixer.in_proj.weight.dt");
    ASSERT_NE(dt, nullptr);
    EXPECT_EQ(dt->flattened_from, (Shape{kHeads, kHidden}));
    EXPECT_EQ(dt->chunks.size(), 1u);
}

// A tensor-parallel rank's piece of in_proj is its rows of each part ([z_r; x_r; B_r; C_r;
// dt_r], as a ColumnParallelLinear holds it): each part's key gets the rank's rows of it.
TEST(TorchDistMamba, TensorParallelPiecesLandInTheirParts) {
    TorchDistCheckpoint format;
    const CheckpointState whole = mamba_state();
    CheckpointState pieces = whole;
    pieces.optimizer.reset();
    pieces.model.clear();
    const int64_t sizes[] = {kInner, kInner, kGroupState, kGroupState, kHeads};
    for (const auto& [name, t] : whole.model) {
        if (!name.ends_with("in_proj.weight")) {
            pieces.model.emplace_back(name, t);
            continue;
        }
        for (int64_t rank = 0; rank < 2; ++rank) {
            int64_t begin = 0;
            for (int64_t size : sizes) {
                const int64_t half = size / 2, at = begin + rank * half;
                pieces.model.emplace_back(
                    name, ShardedTensor{t.local.slice(0, at, at + half), t.global_shape,
                                        Shape{at, 0}});
                begin += size;
            }
        }
    }
    TempDir dir;
    format.save(dir.path(), pieces);
    CheckpointState want = whole;
    want.optimizer.reset();
    expect_same_state(format.load(dir.path()), want);
    const DcpMetadata meta = read_dcp_metadata(dir / kIteration / ".metadata");
    const DcpEntry* b = meta.find("decoder.layers.0.mixer.in_proj.weight.B");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->size, (Shape{kGroupState, kHidden}));
    ASSERT_EQ(b->chunks.size(), 2u);
    EXPECT_EQ(b->chunks[1].offsets, (Shape{kGroupState / 2, 0}));
}

TEST(TorchDistMamba, SavingWithoutTheArgsMambaSizesIsAnErrorNamingThem) {
    TorchDistCheckpoint format;
    CheckpointState no_sizes = mamba_state();
    std::erase_if(no_sizes.args, [](const auto& a) { return a.first == "mamba_head_dim"; });
    TempDir other;
    try {
        format.save(other.path(), no_sizes);
        FAIL() << "saved a Mamba layer without its sizes";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("mamba_head_dim"), std::string::npos) << e.what();
    }
}

// Megatron's own hybrid checkpoints (core_v0.13's pretrain_mamba.py and core_v0.19's
// pretrain_hybrid.py, tests/fixtures/megatron_checkpoints/make_fixtures.py): what we save from
// what we read has every key Megatron wrote, with its shape, dtype and chunks (and core_v0.13's
// core_attention extra state, which core_v0.19 no longer writes, and a loader ignores).
TEST(TorchDistMamba, SavesTheKeysMegatronWrote) {
    TorchDistCheckpoint format;
    for (const std::string version : {"core_v0.13", "core_v0.19"}) {
        const fs::path source = megatron_fixture(version);
        const CheckpointState state = format.load(source);
        EXPECT_EQ(format.load_args(source), state.args) << "the args alone, no tensor read";
        TempDir dir;
        format.save(dir.path(), state);
        const DcpMetadata theirs = read_dcp_metadata(source / kIteration / ".metadata");
        const DcpMetadata ours = read_dcp_metadata(dir / kIteration / ".metadata");
        int compared = 0;
        for (const DcpEntry& e : theirs.entries) {
            // The saved RNG and rerun states, and core_v0.19's common state in the DCP files
            // (we write common.pt, as core_v0.13 does, which core_v0.19 reads too).
            if (e.fqn.starts_with("rng_state") || e.fqn.starts_with("rerun_state_machine") ||
                e.fqn.starts_with("common_state"))
                continue;
            const DcpEntry* mine = ours.find(e.fqn);
            ASSERT_NE(mine, nullptr) << version << ": " << e.fqn;
            EXPECT_EQ(mine->bytes, e.bytes) << e.fqn;
            if (e.bytes) continue;
            EXPECT_EQ(mine->size, e.size) << e.fqn;
            EXPECT_EQ(mine->dtype, e.dtype) << e.fqn;
            ASSERT_EQ(mine->chunks.size(), e.chunks.size()) << e.fqn;
            ++compared;
        }
        EXPECT_GT(compared, 30) << version;
        expect_same_state(format.load(dir.path()), state);
    }
}

}  // namespace
}  // namespace mt::plugins::torch_dist
