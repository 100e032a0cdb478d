// Megatron core_v0.19's distributed optimizer in torch_dist against runs of Megatron itself
// (tests/fixtures/distopt_v019/make_fixture.py: pretrain_gpt.py with --use-distributed-optimizer,
// iteration 1's checkpoint in both of core_v0.19's layouts: dp_reshardable, its default, the
// gradient buffers' buckets; fully_reshardable, with --dist-ckpt-optim-fully-reshardable, each
// parameter's state in its shape): resumed, megatron-train logs Megatron's next losses, grad
// norms and evaluations, in one process and on the ranks a run saved from.
// (That Megatron resumes ours: tests/fixtures/distopt_v019/check_megatron_resumes_our_distopt.sh,
// run by hand with Megatron.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "dcp_metadata.h"
#include "dcp_storage.h"
#include "megatron_run_fixture.h"
#include "mpiexec_launch.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using mt::plugins::torch_dist::DcpEntry;
using mt::plugins::torch_dist::DcpMetadata;
using mt::plugins::torch_dist::DcpTensorReader;

std::string q(const fs::path& p) {
    return mt::test::shell_quote(p);
}

struct DistributedOptimizerResume : mt::test::MegatronRunFixture {
    DistributedOptimizerResume() : MegatronRunFixture("distopt_v019") {}

    // The last checkpoint megatron-train saved to `save` continuing Megatron's run `key` keeps
    // the distributed optimizer's state in core_v0.19's dp_reshardable layout where Megatron
    // puts it: the bucket tensors of Megatron's checkpoint (same keys, same sizes) and, where
    // expected.json records Megatron's buffers (dp_reshardable_buckets), each data-parallel
    // rank's range a chunk, and in each bucket's "param" at Megatron's [start, end) of each
    // parameter its f32 values, which are (an f32 run) or round to (bf16) the weights saved
    // beside.
    void expect_megatrons_buckets(const char* key, const fs::path& save) const {
        const fs::path iter = save / "iter_0000003";
        const DcpMetadata meta = mt::plugins::torch_dist::read_dcp_metadata(iter / ".metadata");
        const DcpMetadata theirs =
            mt::plugins::torch_dist::read_dcp_metadata(root / key / "iter_0000001" / ".metadata");
        auto buckets = [](const DcpMetadata& m) {
            std::map<std::string, mt::Shape> out;
            for (const DcpEntry& e : m.entries)
                if (!e.bytes && e.fqn.find("optimizer.distributed.") != std::string::npos)
                    out[e.fqn] = e.size;
            return out;
        };
        EXPECT_EQ(buckets(meta), buckets(theirs)) << key;
        auto read = [&](const std::string& name) {
            const DcpEntry* e = meta.find(name);
            EXPECT_NE(e, nullptr) << key << ": no " << name;
            return e ? DcpTensorReader(iter, *e).read_all() : mt::Tensor();
        };
        simdjson::dom::object recorded;
        if (expected["variants"][key]["dp_reshardable_buckets"].get(recorded)) return;
        for (auto [bucket, want] : recorded) {
            const std::string name{std::string_view(bucket)};
            const int64_t numel = int64_t(want["numel_unpadded"]);
            const DcpEntry* e = meta.find(name + ".param");
            ASSERT_NE(e, nullptr) << key << ": no " << name;
            EXPECT_EQ(e->size, (mt::Shape{numel})) << name;
            for (auto writer : want["written_by"].get_array()) {
                const int64_t begin = int64_t(writer["writes"].at(0)),
                              end = int64_t(writer["writes"].at(1));
                const bool written = std::any_of(e->chunks.begin(), e->chunks.end(), [&](auto& c) {
                    return c.offsets == mt::Shape{begin} && c.sizes == mt::Shape{end - begin};
                });
                EXPECT_TRUE(written)
                    << key << " " << name << ": no chunk [" << begin << ", " << end << ")";
            }
            const mt::Tensor values = read(name + ".param");
            if (!values.defined()) continue;
            for (auto param : want["params"].get_array()) {
                const mt::Tensor stored = read(std::string(std::string_view(param["sharded_key"])));
                if (!stored.defined()) continue;
                // The parameter's box in the stored tensor: its leading (layer, expert) axes one
                // wide, then its own shape.
                mt::Tensor piece = stored;
                auto offset = param["global_offset"].get_array();
                const size_t lead = size_t(int64_t(param["prepend_axis_num"]));
                size_t d = 0;
                for (auto o : offset) {
                    const int64_t at = int64_t(o);
                    const int64_t size = d < lead ? 1 : int64_t(param["local_shape"].at(d - lead));
                    piece = piece.slice(int64_t(d), at, at + size);
                    ++d;
                }
                const int64_t start = int64_t(param["start"]), stop = int64_t(param["end"]);
                const mt::Tensor master = values.slice(0, start, stop);
                const mt::Tensor weights = piece.contiguous().view({piece.numel()});
                const mt::Tensor rounded = mt::cast_float(master, weights.dtype());
                EXPECT_EQ(
                    std::memcmp(rounded.raw_data(), weights.raw_data(), size_t(weights.nbytes())),
                    0)
                    << key << " " << std::string_view(param["name"]) << " at [" << start << ", "
                    << stop << ") of " << name;
            }
        }
    }
};

// fp32 to Megatron's printed digits; bf16 to what torch's and our bf16 roundings leave.
TEST_F(DistributedOptimizerResume, ContinuesMegatronsRunsInOneProcess) {
    struct Case {
        const char* key;
        double tolerance;
    };
    for (const Case c : {Case{"dpr_bf16", 3e-4}, Case{"dpr_fp32_dp2", 2e-6}, Case{"fr_fp32", 2e-6},
                         Case{"fr_bf16", 3e-4}}) {
        const auto r = mt::test::run_command(command(c.key, work / c.key) + " --load " +
                                             q(root / c.key) + " 2>&1");
        ASSERT_EQ(r.exit_code, 0) << c.key << "\n" << r.output;
        expect_continues(c.key, r.output, c.tolerance);
        if (std::string(c.key).starts_with("dpr")) expect_megatrons_buckets(c.key, work / c.key);
    }
}

// Megatron's runs on two ranks, continued on two: each rank takes its share of the buckets as
// the run's layout places them: at DP2 (the cut inside the word embeddings), TP2, PP2 (tied
// embeddings in buckets of their own) and EP2 (the experts' chained optimizer), and MoE's
// experts in the dense buffer at EP1 in one process; the tiny runs' NullTokenizer and mock data
// are core_v0.19's, as the checkpoints' args say.
TEST_F(DistributedOptimizerResume, ContinuesMegatronsParallelRunsThere) {
    if (!mt::test::mpiexec_available()) GTEST_SKIP() << "no mpiexec";
    for (const char* key : {"dpr_fp32_dp2", "dpr_tp2", "fr_tp2", "dpr_pp2", "fr_pp2", "dpr_moe",
                            "dpr_moe_ep2", "fr_moe_ep2"}) {
        const std::string name = key;
        const std::string launcher = name == "dpr_moe" ? "" : mt::test::mpiexec_prefix(2);
        const auto r = mt::test::run_command(launcher + command(key, work / key) + " --load " +
                                             q(root / key) + " 2>&1");
        ASSERT_EQ(r.exit_code, 0) << key << "\n" << r.output;
        expect_continues(key, r.output, 2e-6);
        if (name.starts_with("dpr")) expect_megatrons_buckets(key, work / key);
    }
}

}  // namespace
