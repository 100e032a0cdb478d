// T5Model: checkpoints Megatron's own pretrain_t5.py code saved (tests/fixtures/
// megatron_checkpoints/make_fixtures.py: examples/t5/train_t5_220m_distributed.sh's flags
// through parse_args + validate_args, get_model and save_checkpoint; core_v0.13, torch and
// torch_dist, fp32 and bf16; and the same with --position-embedding-type rope --rotary-percent
// 0.5, and with --position-embedding-type relative on Transformer Engine's spec) read with their
// own args give megatron-core T5Model's
// log-probabilities of the labels at every decoder token (1e-5); the whole model's gradients
// against finite differences in f64.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/format_detection.h"
#include "mt/checkpoint/model_weights.h"
#include "mt/infer/generator.h"
#include "mt/nn/dropout.h"
#include "mt/nn/parameter.h"
#include "mt/registry.h"
#include "t5_model.h"
#include "test_support.h"

namespace mt {
namespace {

namespace fs = std::filesystem;

Tensor i64(const std::vector<int64_t>& values, const Shape& shape) {
    Tensor t = Tensor::empty(shape, DType::i64);
    for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
    return t;
}

// Rows of a JSON array of arrays of integers, flattened; rows and columns counted.
std::vector<int64_t> int_rows(simdjson::dom::element rows, int64_t& B, int64_t& T) {
    std::vector<int64_t> out;
    B = 0;
    for (auto row : rows.get_array()) {
        ++B;
        T = 0;
        for (auto v : row.get_array()) {
            out.push_back(v.get_int64());
            ++T;
        }
    }
    return out;
}

// pretrain_t5.py's batch from token rows padded with 0, as T5MaskedWordPieceDataset pads them.
Batch t5_batch(const std::vector<int64_t>& enc, const std::vector<int64_t>& dec,
               const std::vector<int64_t>& labels, int64_t B, int64_t Te, int64_t Td) {
    std::vector<int64_t> enc_mask(enc.size()), dec_mask(dec.size());
    for (size_t i = 0; i < enc.size(); ++i) enc_mask[i] = enc[i] != 0;
    for (size_t i = 0; i < dec.size(); ++i) dec_mask[i] = dec[i] != 0;
    return {{"text_enc", i64(enc, {B, Te})},      {"text_dec", i64(dec, {B, Td})},
            {"labels", i64(labels, {B, Td})},     {"loss_mask", i64(dec_mask, {B, Td})},
            {"enc_mask", i64(enc_mask, {B, Te})}, {"dec_mask", i64(dec_mask, {B, Td})}};
}

// Runs `check` on each of Megatron's T5 checkpoints (expected.json's t5 entries: megatron-core's
// numbers for it) with the t5 family's model built from the checkpoint's own args and loaded;
// returns how many.
int for_each_megatron_t5(const std::function<void(simdjson::dom::element, Model&)>& check) {
    const fs::path root = mt::test::fixtures_dir() / "megatron_checkpoints";
    simdjson::dom::parser parser;
    const simdjson::dom::element expected = parser.load((root / "expected.json").string());
    int checked = 0;
    for (auto [key_view, value] : expected.get_object()) {
        const std::string key(key_view);
        if (key.find("/t5_") == std::string::npos) continue;
        SCOPED_TRACE(key);
        const CheckpointState state =
            detect_checkpoint_format(Registry::global(), root / key)->load(root / key);
        auto family = Registry::global().create_model("t5");
        auto model = family->build(model_args_from_checkpoint(state.args, family->flags()));
        load_model_weights(state, *model, WeightLoad::copy);
        check(value, *model);
        ++checked;
    }
    return checked;
}

TEST(T5MegatronCheckpoints, GiveMegatronCoresLogProbs) {
    const int checked = for_each_megatron_t5([](simdjson::dom::element value, Model& model) {
        int64_t B = 0, Te = 0, Td = 0;
        const std::vector<int64_t> enc = int_rows(value["encoder_tokens"], B, Te);
        const std::vector<int64_t> dec = int_rows(value["decoder_tokens"], B, Td);
        const std::vector<int64_t> labels = int_rows(value["labels"], B, Td);
        nn::DropoutContext no_dropout{false, 0, 0};
        const Losses losses =
            model.forward(t5_batch(enc, dec, labels, B, Te, Td), no_dropout, nullptr);
        ASSERT_EQ(losses.size(), 1u);
        // The loss of each label = -its log-probability; padded decoder positions are left out
        // (Megatron's masks hide every key from their queries there).
        int64_t i = 0;
        for (auto row : value["logprobs"].get_array())
            for (auto lp : row.get_array()) {
                const double want = -double(lp.get_double());
                if (dec[size_t(i)] != 0)
                    EXPECT_NEAR(mt::test::element(losses[0].values, i), want,
                                1e-5 * std::max(1.0, want))
                        << "position " << i;
                ++i;
            }
    });
    EXPECT_EQ(checked, 12);  // core_v0.13's t5, t5_rope, t5_relative x two formats x two dtypes
}

// Greedy generation (infer::generate: the encoder once, the decoder from [BOS] with its KV cache
// and the cross-attention's projected encoder keys) gives megatron-core's greedy tokens, which
// ran the whole T5Model again at every step.
TEST(T5MegatronCheckpoints, GreedyGenerationGivesMegatronCoresTokens) {
    const int checked = for_each_megatron_t5([](simdjson::dom::element value, Model& model) {
        int64_t B = 0, Te = 0, Tg = 0;
        const std::vector<int64_t> enc = int_rows(value["encoder_tokens"], B, Te);
        const std::vector<int64_t> greedy = int_rows(value["greedy_tokens"], B, Tg);
        infer::GenerationRequest request;
        for (int64_t b = 0; b < B; ++b) {
            std::vector<int32_t> row;
            for (int64_t t = 0; t < Te; ++t)
                if (enc[size_t(b * Te + t)] != 0) row.push_back(int32_t(enc[size_t(b * Te + t)]));
            request.encoder_prompts.push_back(row);
            request.prompts.push_back({int32_t(greedy[size_t(b * Tg)])});  // [BOS]
        }
        request.tokens_to_generate = Tg - 1;
        request.sampling.top_k = 1;
        request.stop_at_eod = false;
        // The tiny WordPiece vocabulary with [BOS], [EOS] and 100 sentinels: 138 ids.
        const infer::GenerationTokens ids{37, 138};
        infer::SamplingRng rng(1);
        const infer::GenerationResult out = infer::generate(model, request, ids, rng);
        ASSERT_EQ(int64_t(out.tokens.size()), B);
        for (int64_t b = 0; b < B; ++b)
            EXPECT_EQ(out.tokens[size_t(b)],
                      std::vector<int32_t>(greedy.begin() + b * Tg, greedy.begin() + (b + 1) * Tg))
                << "row " << b;
    });
    EXPECT_EQ(checked, 12);  // t5, t5_rope, t5_relative; torch, torch_dist; fp32, bf16
}

// megatron-convert --model-type T5 reshards Megatron's own T5 checkpoint to TP2 in torch_dist and
// in torch, and back to TP1: every tensor comes back bit for bit, and the keys Megatron's state
// dict repeats (position_embeddings, output_layer) are there again as repeats.
TEST(T5MegatronCheckpoints, ReshardThroughBothFormatsBitExactly) {
    const fs::path source =
        mt::test::fixtures_dir() / "megatron_checkpoints" / "core_v0.13" / "t5_torch_fp32";
    mt::test::TempDir dir;
    const std::string convert = mt::test::tool_path("megatron-convert").string() +
                                " --model-type T5 --loader core --load-dir ";
    for (const char* saver : {"torch_dist", "core"}) {
        SCOPED_TRACE(saver);
        const fs::path tp2 = dir / (std::string(saver) + "_tp2"),
                       back = dir / (std::string(saver) + "_tp1");
        auto r = mt::test::run_command(convert + mt::test::shell_quote(source) + " --saver " +
                                       saver + " --target-tensor-parallel-size 2 --save-dir " +
                                       mt::test::shell_quote(tp2));
        ASSERT_EQ(r.exit_code, 0) << r.output;
        r = mt::test::run_command(mt::test::tool_path("megatron-convert").string() +
                                  " --model-type T5 --loader " +
                                  (std::string(saver) == "core" ? "core" : "torch_dist") +
                                  " --load-dir " + mt::test::shell_quote(tp2) +
                                  " --saver core --target-tensor-parallel-size 1 --save-dir " +
                                  mt::test::shell_quote(back));
        ASSERT_EQ(r.exit_code, 0) << r.output;
        const CheckpointState want =
            detect_checkpoint_format(Registry::global(), source)->load(source);
        const CheckpointState got = detect_checkpoint_format(Registry::global(), back)->load(back);
        std::map<std::string, const Tensor*> by_name;
        for (const auto& [name, t] : got.model) by_name[name] = &t.local;
        int compared = 0;
        for (const auto& [name, t] : want.model) {
            if (name.ends_with("._extra_state")) continue;
            ASSERT_TRUE(by_name.count(name)) << name;
            const Tensor& a = t.local;
            const Tensor& b = *by_name.at(name);
            ASSERT_EQ(a.shape(), b.shape()) << name;
            for (int64_t i = 0; i < a.numel(); ++i)
                ASSERT_EQ(mt::test::element(a, i), mt::test::element(b, i)) << name << " " << i;
            ++compared;
        }
        EXPECT_EQ(compared, 71);
        // The repeated keys (one storage under two keys in both files).
        using Aliases = std::vector<std::pair<std::string, std::string>>;
        EXPECT_EQ(got.model_aliases,
                  (Aliases{{"position_embeddings.weight", "embedding.position_embeddings.weight"},
                           {"output_layer.bias", "lm_head.output_layer.bias"}}));
        EXPECT_EQ(got.model_aliases, want.model_aliases);
    }
}

// The whole model in f64 (2 + 1 layers, dropout everywhere, replayed): d(mean loss) against
// finite differences for a sample of each parameter's entries.
// Learned absolute positions, and relative ones (each stack's bucket table, 6 buckets reaching
// 5 positions: the encoder's 6 reach its logarithmic buckets).
class T5ModelGradients : public ::testing::TestWithParam<const char*> {};

TEST_P(T5ModelGradients, MatchFiniteDifferences) {
    ModelArgs args = {{"encoder-num-layers", "2"},
                      {"decoder-num-layers", "1"},
                      {"hidden-size", "8"},
                      {"num-attention-heads", "2"},
                      {"ffn-hidden-size", "12"},
                      {"encoder-seq-length", "6"},
                      {"max-position-embeddings", "8"},
                      {"padded-vocab-size", "16"},
                      {"attention-dropout", "0.2"},
                      {"hidden-dropout", "0.2"},
                      {"position-embedding-type", GetParam()}};
    if (std::string(GetParam()) == "relative") {
        args["relative-attention-num-buckets"] = "6";
        args["relative-attention-max-distance"] = "5";
    }
    const plugins::t5::T5Config config = plugins::t5::t5_config_from_args(args);
    plugins::t5::T5Model model(config, single_process_context(), DType::f64);
    model.initialize(7);
    std::mt19937 rng(5);
    std::vector<nn::Parameter*> params = model.parameters();
    std::uniform_real_distribution<double> uniform(-0.5, 0.5);
    for (nn::Parameter* p : params)
        for (int64_t i = 0; i < p->value.numel(); ++i) p->value.data<double>()[i] = uniform(rng);
    const Batch batch = t5_batch({3, 5, 9, 2, 0, 0, 4, 4, 1, 7, 8, 6}, {1, 3, 7, 0, 1, 2, 5, 6},
                                 {3, 7, 2, -1, 2, 5, 6, 9}, 2, 6, 4);
    const nn::DropoutContext start{true, 99, 0};
    auto mean_loss = [&] {
        nn::DropoutContext ctx = start;
        const Losses l = model.forward(batch, ctx, nullptr);
        double sum = 0, count = 0;
        for (int64_t i = 0; i < l[0].values.numel(); ++i) {
            sum += mt::test::element(l[0].values, i) * mt::test::element(l[0].mask, i);
            count += mt::test::element(l[0].mask, i);
        }
        return sum / count;
    };
    nn::DropoutContext ctx = start;
    std::unique_ptr<Activations> acts;
    const Losses l = model.forward(batch, ctx, &acts);
    double count = 0;
    for (int64_t i = 0; i < l[0].mask.numel(); ++i) count += mt::test::element(l[0].mask, i);
    Tensor dloss = Tensor::empty(l[0].values.shape(), DType::f64);
    for (int64_t i = 0; i < dloss.numel(); ++i)
        dloss.data<double>()[i] = mt::test::element(l[0].mask, i) / count;
    for (nn::Parameter* p : params) p->grad = Tensor::zeros(p->grad.shape(), p->grad.dtype());
    model.backward({dloss}, *acts);
    for (nn::Parameter* p : params) {
        SCOPED_TRACE(p->name);
        double* v = p->value.data<double>();
        const int64_t n = p->value.numel();
        for (int64_t i = 0; i < n; i += std::max<int64_t>(1, n / 5)) {
            const double keep = v[i], h = 1e-6;
            v[i] = keep + h;
            const double up = mean_loss();
            v[i] = keep - h;
            const double down = mean_loss();
            v[i] = keep;
            EXPECT_NEAR(mt::test::element(p->grad, i), (up - down) / (2 * h), 1e-7) << i;
        }
    }
    if (config.relative)
        EXPECT_EQ(params[1]->name, "encoder_relative_pos_emb.relative_attention_bias.weight");
}

INSTANTIATE_TEST_SUITE_P(PositionEmbeddings, T5ModelGradients,
                         ::testing::Values("learned_absolute", "relative"));

}  // namespace
}  // namespace mt
