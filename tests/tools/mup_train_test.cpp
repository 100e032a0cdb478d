// core_v0.19's muP (--use-mup) against runs of Megatron itself (tests/fixtures/mup/make_fixture.py:
// pretrain_gpt.py with --use-mup --mup-base-hidden-size 8 (width multiplier 2)
// --mup-embedding-mult 2 --mup-base-head-dim 2, iteration 1's checkpoint in torch_dist):
// resumed, megatron-train logs Megatron's next losses, grad norms and evaluations, which follow
// from the embeddings' and logits' multipliers, the attention scale sqrt(2) / kv_channels and
// the optimizer's muP groups (Adam: the hidden matrices at lr / 2 and eps / 2; SGD: the embeddings,
// norms and biases at lr x 2; with --decoupled-lr the word embedding keeps its own).
#include <gtest/gtest.h>

#include "megatron_run_fixture.h"
#include "test_support.h"

namespace {

struct MupResume : mt::test::MegatronRunFixture {
    MupResume() : MegatronRunFixture("mup") {}
};

TEST_F(MupResume, ContinuesMegatronsRuns) {
    for (const char* key : {"mup_adam", "mup_adam_untied", "mup_sgd", "mup_adam_decoupled"}) {
        const auto r = mt::test::run_command(command(key, work / key) + " --load " +
                                             mt::test::shell_quote(root / key) + " 2>&1");
        ASSERT_EQ(r.exit_code, 0) << key << "\n" << r.output;
        expect_continues(key, r.output, 2e-6);
    }
}

}  // namespace
