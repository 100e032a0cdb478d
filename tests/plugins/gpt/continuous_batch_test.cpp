// Continuous batching on real GPT models (learned positions, rope with grouped queries, Gemma's
// windows and sandwich norms, dropless MoE, multi-latent attention, Mamba layers): requests that
// join a running batch at different steps, their prompts read in chunks, get what infer::generate
// gives each alone — the same tokens (greedy and seeded sampling) and log-probs to the last bits (a
// batch's products sum in another order).
#include <gtest/gtest.h>

#include <deque>
#include <optional>

#include "gpt_model.h"
#include "hybrid_args.h"
#include "mt/infer/continuous_batch.h"
#include "mt/infer/generator.h"
#include "test_support.h"
#include "tiny_model_args.h"

namespace mt::plugins::gpt {
namespace {

// The tiny models with room for prompt + generation.
ModelArgs roomy(ModelArgs a) {
    a["seq-length"] = "64";
    a["max-position-embeddings"] = "64";
    return a;
}

ModelArgs hybrid_args() {  // a Mamba layer, attention, a Mamba layer, an MLP
    ModelArgs a = roomy(llama_args());
    a["num-layers"] = "4";
    a["position-embedding-type"] = "none";
    for (auto [k, v] : {std::pair{"hybrid-layer-pattern", "M*M-"},
                        {"mamba-state-dim", "8"},
                        {"mamba-head-dim", "4"},
                        {"mamba-num-groups", "2"},
                        {"is-hybrid-model", ""}})
        a[k] = v;
    return a;
}

std::unique_ptr<GptModel> build(const ModelArgs& args) {
    const nn::TransformerArgs config = nn::read_transformer_args(args);
    if (!args.contains("is-hybrid-model")) return std::make_unique<GptModel>(config);
    return std::make_unique<GptModel>(config, single_process_context(), DType::f32,
                                      read_hybrid_args(args, config.num_layers));
}

ModelArgs moe_args() {
    ModelArgs a = roomy(llama_args());
    a["num-experts"] = "4";
    a["moe-router-topk"] = "2";
    a["moe-ffn-hidden-size"] = "12";
    return a;
}

struct Case {
    std::vector<int32_t> prompt;
    int64_t max_tokens;
    infer::SamplingParams sampling;
    uint64_t seed;
    bool echo;
};

std::vector<Case> cases() {
    infer::SamplingParams greedy, sampled;
    greedy.top_k = 1;
    sampled.top_k = 5;
    sampled.temperature = 0.7;
    return {{{3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 9, 3}, 7, greedy, 0, false},
            {{1}, 9, greedy, 0, true},
            {{27, 18, 28, 18, 28, 45, 9}, 6, sampled, 11, false},
            {{2, 7, 1, 8, 2, 8}, 0, greedy, 0, true},  // score only
            {{31, 41, 5, 9}, 12, greedy, 0, true},
            {{16, 18, 3, 39, 8, 8, 7, 4, 9, 4, 8, 2, 1}, 5, sampled, 5, false}};
}

infer::GenerationResult alone(Model& model, const Case& c, const infer::GenerationTokens& ids) {
    infer::GenerationRequest r;
    r.prompts = {c.prompt};
    r.tokens_to_generate = c.max_tokens;
    r.sampling = c.sampling;
    r.return_log_probs = true;
    r.prompt_log_probs = c.echo;
    r.top_n_log_probs = 2;
    r.log_probs_over_vocab = true;
    infer::SamplingRng rng(c.seed);
    infer::GenerationResult out = infer::generate(model, r, ids, rng);
    // generate() keeps a scored row's whole length; a generating one ends at its EOD.
    return out;
}

void expect_same(const infer::GenerationResult& got, const infer::GenerationResult& want,
                 const std::string& what) {
    ASSERT_EQ(got.tokens, want.tokens) << what;
    ASSERT_EQ(got.log_probs[0].size(), want.log_probs[0].size()) << what;
    for (size_t i = 0; i < want.log_probs[0].size(); ++i)
        EXPECT_NEAR(got.log_probs[0][i], want.log_probs[0][i], 1e-5) << what << " position " << i;
    ASSERT_EQ(got.top_log_probs[0].size(), want.top_log_probs[0].size()) << what;
    for (size_t i = 0; i < want.top_log_probs[0].size(); ++i) {
        ASSERT_EQ(got.top_log_probs[0][i].size(), want.top_log_probs[0][i].size()) << what;
        for (size_t k = 0; k < want.top_log_probs[0][i].size(); ++k)
            EXPECT_EQ(got.top_log_probs[0][i][k].id, want.top_log_probs[0][i][k].id) << what;
    }
}

TEST(ContinuousBatch, RequestsJoiningARunningBatchGetWhatTheyGetAlone) {
    for (const auto& [name, args] : {std::pair{"gpt2", roomy(gpt2_args())},
                                     {"llama", roomy(llama_args())},
                                     {"gemma", roomy(gemma_args())},
                                     {"moe", moe_args()},
                                     {"mla", roomy(mla_args())},
                                     {"hybrid", hybrid_args()}}) {
        std::unique_ptr<GptModel> built = build(args);
        GptModel& model = *built;
        model.initialize(7);
        ASSERT_TRUE(model.can_decode_rows()) << name;
        const infer::GenerationTokens ids{0, 50, {}, {}, {}};
        const std::vector<Case> all = cases();
        // At most 3 at once, 8 prompt tokens a step, one request joining per step.
        infer::ContinuousBatch batch(model, ids, 3, 8);
        std::vector<std::optional<infer::GenerationResult>> got(all.size());
        std::vector<size_t> joined_at(all.size()), left_at(all.size());
        std::deque<size_t> waiting;
        for (size_t i = 0; i < all.size(); ++i) waiting.push_back(i);
        size_t steps = 0, most_active = 0;
        while (!waiting.empty() || !batch.idle()) {
            if (!waiting.empty() && batch.has_room()) {
                const size_t i = waiting.front();
                waiting.pop_front();
                infer::SequenceRequest r;
                r.prompt = all[i].prompt;
                r.max_tokens = all[i].max_tokens;
                r.sampling = all[i].sampling;
                r.seed = all[i].seed;
                r.prompt_log_probs = all[i].echo;
                r.top_n_log_probs = 2;
                r.on_done = [&, i](infer::GenerationResult out) {
                    got[i] = std::move(out);
                    left_at[i] = steps;
                };
                r.on_error = [](std::exception_ptr e) { std::rethrow_exception(e); };
                ASSERT_TRUE(batch.add(r));
                joined_at[i] = steps;
            }
            most_active = std::max(most_active, batch.active());
            batch.step();
            ++steps;
        }
        EXPECT_EQ(most_active, 3u) << name;
        for (size_t i = 0; i < all.size(); ++i) {
            ASSERT_TRUE(got[i]) << name << " request " << i;
            expect_same(*got[i], alone(model, all[i], ids),
                        std::string(name) + " request " + std::to_string(i));
        }
        // The first request was still generating when the third joined.
        EXPECT_GT(left_at[0], joined_at[2]) << name;
    }
}

// A model that records the shape of each decode_rows call and hands it on.
class RecordingModel final : public Model {
  public:
    explicit RecordingModel(Model& inner) : inner_(inner) {}
    std::vector<nn::Parameter*> parameters() override { return inner_.parameters(); }
    void initialize(uint64_t) override {}
    Losses forward(const Batch&, nn::DropoutContext&, std::unique_ptr<Activations>*) override {
        return {};
    }
    void backward(const std::vector<Tensor>&, const Activations&) override {}
    double training_flops(int64_t) const override { return 0; }
    int64_t max_positions() const override { return inner_.max_positions(); }
    std::unique_ptr<nn::InferenceState> make_inference_state(int64_t batch,
                                                             int64_t capacity) const override {
        return inner_.make_inference_state(batch, capacity);
    }
    Tensor logits(const Tensor& tokens, nn::InferenceState* state, int64_t keep_last) override {
        return inner_.logits(tokens, state, keep_last);
    }
    bool can_decode_rows() const override { return inner_.can_decode_rows(); }
    Tensor decode_rows(const Tensor& tokens, std::span<nn::InferenceState* const> states,
                       int64_t keep_last) override {
        calls.push_back({tokens.size(0), tokens.size(1)});
        return inner_.decode_rows(tokens, states, keep_last);
    }
    std::vector<std::pair<int64_t, int64_t>> calls;  // [B, T] of each decode_rows

  private:
    Model& inner_;
};

TEST(ContinuousBatch, PromptsThatArriveTogetherAreReadInOnePassWithinTheBudget) {
    GptModel gpt(nn::read_transformer_args(roomy(llama_args())));
    gpt.initialize(7);
    RecordingModel model(gpt);
    const infer::GenerationTokens ids{0, 50, {}, {}, {}};
    infer::SamplingParams greedy;
    greedy.top_k = 1;
    const std::vector<Case> requests{{{5, 6, 7, 8, 9, 10}, 3, greedy, 0, false},
                                     {{11, 12, 13, 14, 15, 16}, 3, greedy, 0, true},
                                     {{1, 2, 3, 4, 5, 6, 7, 8, 9}, 3, greedy, 0, false}};
    infer::ContinuousBatch batch(model, ids, 4, 16);  // 16 prompt tokens a step
    std::vector<infer::GenerationResult> got(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
        infer::SequenceRequest r;
        r.prompt = requests[i].prompt;
        r.max_tokens = requests[i].max_tokens;
        r.sampling = greedy;
        r.prompt_log_probs = requests[i].echo;
        r.top_n_log_probs = 2;
        r.on_done = [&, i](infer::GenerationResult out) { got[i] = std::move(out); };
        ASSERT_TRUE(batch.add(r));
    }
    while (!batch.idle()) batch.step();
    // Step 1: the two 6-token prompts in one pass (the 9-token one would pass the budget), then
    // their first decoding step; step 2: the third prompt, then a step of all three.
    ASSERT_GE(model.calls.size(), 4u);
    EXPECT_EQ(model.calls[0], (std::pair<int64_t, int64_t>{2, 6}));
    EXPECT_EQ(model.calls[1], (std::pair<int64_t, int64_t>{2, 1}));
    EXPECT_EQ(model.calls[2], (std::pair<int64_t, int64_t>{1, 9}));
    EXPECT_EQ(model.calls[3], (std::pair<int64_t, int64_t>{3, 1}));
    for (size_t i = 0; i < requests.size(); ++i)
        expect_same(got[i], alone(gpt, requests[i], ids), "request " + std::to_string(i));
}

TEST(ContinuousBatch, ASequenceEndsWhereItsCallerSaysAndAtTheEndOfDocument) {
    GptModel model(nn::read_transformer_args(roomy(llama_args())));
    model.initialize(7);
    infer::GenerationTokens ids{0, 50, {}, {}, {}};
    infer::SamplingParams greedy;
    greedy.top_k = 1;
    const std::vector<int32_t> prompt{4, 8, 15, 16, 23, 42};
    infer::GenerationRequest r;
    r.prompts = {prompt};
    r.tokens_to_generate = 8;
    r.sampling = greedy;
    r.return_log_probs = true;
    infer::SamplingRng rng;
    const std::vector<int32_t> free_run = infer::generate(model, r, ids, rng).tokens[0];
    ASSERT_EQ(free_run.size(), prompt.size() + 8);

    infer::ContinuousBatch batch(model, ids, 2, 64);
    std::vector<int32_t> stopped, at_eod;
    infer::SequenceRequest s;
    s.prompt = prompt;
    s.max_tokens = 8;
    s.sampling = greedy;
    int seen = 0;
    s.on_token = [&](int32_t) { return ++seen < 3; };  // a stop string at the third token
    s.on_done = [&](infer::GenerationResult out) { stopped = out.tokens[0]; };
    infer::SequenceRequest first = s;
    ASSERT_TRUE(batch.add(first));
    // The third generated id taken as the end of document ends the sequence there too.
    infer::ContinuousBatch eod_batch(model, {free_run[prompt.size() + 2], 50, {}, {}, {}}, 1, 64);
    s.on_token = {};
    s.on_done = [&](infer::GenerationResult out) { at_eod = out.tokens[0]; };
    ASSERT_TRUE(eod_batch.add(s));
    while (!batch.idle()) batch.step();
    while (!eod_batch.idle()) eod_batch.step();
    const std::vector<int32_t> three(free_run.begin(), free_run.begin() + prompt.size() + 3);
    EXPECT_EQ(stopped, three);
    EXPECT_EQ(at_eod, three);
}

TEST(ContinuousBatch, RefusesWhatGenerateRefusesAndModelsThatCannotDecodeRows) {
    GptModel model(nn::read_transformer_args(roomy(gpt2_args())));
    model.initialize(7);
    infer::ContinuousBatch batch(model, {0, 50, {}, {}, {}}, 2, 8);
    infer::SequenceRequest r;
    r.prompt = std::vector<int32_t>(60, 1);
    r.max_tokens = 5;
    EXPECT_NE(mt::test::error_of([&] { batch.check(r); }).find("longer than allowed (60 + 5 > 64)"),
              std::string::npos);
    r.prompt.clear();
    EXPECT_NE(mt::test::error_of([&] { batch.check(r); }).find("has no tokens"), std::string::npos);
    r.prompt = {1};
    r.sampling.top_k = 2;
    r.sampling.top_p = 0.5;
    EXPECT_FALSE(mt::test::error_of([&] { batch.check(r); }).empty());

    ModelArgs capacity = moe_args();
    capacity["moe-expert-capacity-factor"] = "1.0";
    GptModel bounded(nn::read_transformer_args(capacity));
    EXPECT_FALSE(bounded.can_decode_rows());  // which tokens an expert drops depends on the rest
    EXPECT_NE(mt::test::error_of([&] {
                  infer::ContinuousBatch(bounded, {0, 50}, 2, 8);
              }).find("not supported yet: continuous batching"),
              std::string::npos);
}

}  // namespace
// --inference-dynamic-batching-buffer-size-gb: the running sequences' states hold at most the
// batch's memory together (each its prompt + max_tokens positions), so with room for two states
// a third request waits for one to end although a place is free; one that alone needs more is
// refused, naming the flag.
TEST(ContinuousBatch, TheStatesMemoryBoundsWhatRunsAtOnce) {
    GptModel model(nn::read_transformer_args(roomy(llama_args())));
    model.initialize(7);
    const infer::GenerationTokens ids{0, 50, {}, {}, {}};
    const int64_t one = model.make_inference_state(1, 6 + 4)->bytes();
    ASSERT_GT(one, 0);
    infer::ContinuousBatch batch(model, ids, 8, 64, 2 * one);
    infer::SamplingParams greedy;
    greedy.top_k = 1;
    int done = 0;
    const auto request = [&](int64_t max_tokens) {
        infer::SequenceRequest r;
        r.prompt = {4, 8, 15, 16, 23, 42};
        r.max_tokens = max_tokens;
        r.sampling = greedy;
        r.on_done = [&](infer::GenerationResult) { ++done; };
        return r;
    };
    infer::SequenceRequest a = request(4), b = request(4), c = request(4);
    ASSERT_TRUE(batch.add(a));
    ASSERT_TRUE(batch.add(b));
    EXPECT_EQ(batch.reserved_bytes(), 2 * one);
    EXPECT_FALSE(batch.add(c));  // a place, but no memory: c is kept as it was
    EXPECT_EQ(c.prompt.size(), 6u);
    EXPECT_EQ(batch.active(), 2u);
    while (!batch.idle()) batch.step();
    EXPECT_EQ(done, 2);
    EXPECT_EQ(batch.reserved_bytes(), 0);
    EXPECT_TRUE(batch.add(c));
    infer::SequenceRequest huge = request(4 + 2 * 10);  // three times the positions
    try {
        batch.add(huge);
        FAIL() << "a request larger than the batch's memory was admitted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--inference-dynamic-batching-buffer-size-gb"),
                  std::string::npos)
            << e.what();
    }
    while (!batch.idle()) batch.step();
    EXPECT_EQ(done, 3);
}

}  // namespace mt::plugins::gpt
