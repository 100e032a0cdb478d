#include "deepspeed_moe_args.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "mt/error.h"
#include "mt/nn/moe/args.h"
#include "mt/nn/transformer_args.h"

namespace mt::nn {

std::vector<FlagInfo> deepspeed_moe_flags() {
    FlagInfo no_dropping =
        switch_flag("disable-moe-token-dropping",
                    "Megatron-DeepSpeed: experts take every token routed to them (no capacity)");
    no_dropping.store_false_dest = "moe_token_dropping";
    FlagInfo argmax_second =
        switch_flag("disable-moe-top2-2nd-expert-sampling",
                    "Megatron-DeepSpeed: top-2 takes the second largest probability instead of "
                    "sampling the second expert");
    argmax_second.store_false_dest = "moe_top2_2nd_expert_sampling";
    return {
        value_flag("expert-interval",
                   "Megatron-DeepSpeed: every k-th layer is a MoE layer (with it, --num-experts "
                   "means DeepSpeed's MoE layers; --deepspeed supplies 2)"),
        value_flag("topk", "Megatron-DeepSpeed: experts each token goes to (1 or 2)", "1"),
        value_flag("mlp-type",
                   "Megatron-DeepSpeed: standard, or residual (PR-MoE: a dense MLP beside the "
                   "experts)",
                   "standard"),
        value_flag("moe-train-capacity-factor",
                   "Megatron-DeepSpeed: an expert's capacity in training, x tokens / experts",
                   "1.0"),
        value_flag("moe-eval-capacity-factor",
                   "Megatron-DeepSpeed: an expert's capacity in evaluation, x tokens / experts",
                   "1.0"),
        value_flag("moe-min-capacity", "Megatron-DeepSpeed: an expert's least capacity", "4"),
        no_dropping,
        argmax_second,
        value_flag("moe-loss-coeff",
                   "Megatron-DeepSpeed: the MoE load-balancing loss's coefficient", "0.1"),
    };
}

std::vector<int64_t> deepspeed_expert_counts(const std::string& text) {
    std::vector<int64_t> out;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t end = std::min(text.find_first_of(", []", at), text.size());
        const std::string word = text.substr(at, end - at);
        if (!word.empty()) {
            char* stop = nullptr;
            const long long n = std::strtoll(word.c_str(), &stop, 10);
            MT_CHECK(*stop == '\0' && n > 0, "--num-experts ", text.substr(0, 200),
                     ": expected positive integers");
            out.push_back(n);
        }
        at = end + 1;
    }
    MT_CHECK(!out.empty(), "--num-experts needs a value");
    return out;
}

void read_deepspeed_moe_args(const ModelArgsReader& f, TransformerArgs& c) {
    const std::vector<int64_t> counts = deepspeed_expert_counts(f.text("num-experts"));
    MoeLayerPattern pattern =
        MoeLayerPattern::deepspeed(counts, f.integer("expert-interval"), c.num_layers);
    if (pattern.count() == 0) return;  // one expert everywhere: dense (Megatron-DeepSpeed's MLP)
    MoeConfig& m = c.moe;
    RouterConfig& r = m.router;
    r.num_experts = *std::max_element(pattern.experts.begin(), pattern.experts.end());
    c.moe_layers = std::move(pattern);
    // (Each expert is Megatron-DeepSpeed's ParallelMLP: --ffn-hidden-size, its biases.)
    m.ffn_hidden_size = c.ffn_hidden_size;
    r.topk = f.integer("topk", 1);
    MT_CHECK(r.topk == 1 || r.topk == 2, "--topk ", r.topk,
             ": not supported yet: DeepSpeed's top-k gating above 2");
    const std::string mlp_type = f.has("mlp-type") ? f.text("mlp-type") : "standard";
    MT_CHECK(mlp_type == "standard" || mlp_type == "residual", "--mlp-type ",
             mlp_type.substr(0, 100), ": Megatron-DeepSpeed accepts standard and residual");
    m.residual_mlp = mlp_type == "residual";
    GShardGating& g = r.gshard;
    g.enabled = true;
    g.train_capacity_factor = f.real("moe-train-capacity-factor", 1.0);
    g.eval_capacity_factor = f.real("moe-eval-capacity-factor", 1.0);
    g.min_capacity = f.integer("moe-min-capacity", 4);
    g.drop_tokens = !f.flag("disable-moe-token-dropping");
    g.sample_second_expert = !f.flag("disable-moe-top2-2nd-expert-sampling");
    MT_CHECK(g.train_capacity_factor > 0 && g.eval_capacity_factor > 0 && g.min_capacity >= 0,
             "--moe-train-capacity-factor and --moe-eval-capacity-factor must be positive and "
             "--moe-min-capacity not negative");
    // DeepSpeed's gate: f32 logits of the f32 input and weight, no bias; softmax over all
    // experts; the load-balancing loss times --moe-loss-coeff joins the loss.
    r.logits_in_f32 = true;
    r.score_function = ScoreFunction::softmax;
    r.load_balancing = LoadBalancing::aux_loss;
    r.aux_loss_coeff = f.real("moe-loss-coeff", 0.1);
    MT_CHECK(r.aux_loss_coeff >= 0, "--moe-loss-coeff must not be negative");
}

}  // namespace mt::nn
