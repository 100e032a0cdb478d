// A checkpoint's args as Megatron's parse_args + validate_args fill them (core_v0.13 and
// core_v0.19) read into the gpt family's flags: every model-shaping field of both versions,
// set to something else than Megatron's default, drives the model, is accepted as changing
// nothing, or stops the load naming the field; what validate_args derives (encoder_num_layers =
// num_layers, ...) and either version's defaults load; a feature's options are inert while the
// feature is off; fields core_v0.19 renamed (layernorm_epsilon) are read under both names.
// The real checkpoints are in tests/tools/megatron_checkpoints_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/cli/megatron_flags.h"
#include "mt/error.h"
#include "mt/nn/transformer_args.h"
#include "mt/registry.h"
#include "register.h"
#include "test_support.h"

namespace mt::plugins::gpt {
namespace {

std::vector<FlagInfo> gpt_family_flags() {
    Registry registry;
    register_gpt(registry);
    return registry.create_model("gpt")->flags();
}

const CheckpointArgs kBase = {{"num_layers", int64_t(2)},
                              {"hidden_size", int64_t(64)},
                              {"num_attention_heads", int64_t(4)},
                              {"max_position_embeddings", int64_t(32)},
                              {"vocab_size", int64_t(100)}};

// A value other than the row's default.
ArgValue changed_value(const cli::MegatronFlag& f) {
    if (f.kind != "value") return f.kind != "store_false";
    const std::string def(f.default_value);
    if (!f.choices.empty()) {
        for (std::string_view choice : cli::megatron_choices(f))
            if (def.find(std::string(choice)) == std::string::npos && choice != "None")
                return std::string(choice);
    }
    if (f.type == "int") return def == "None" ? int64_t(3) : int64_t(std::stoll(def) + 3);
    if (f.type == "float") return def == "None" ? 0.75 : std::stod(def) * 2 + 0.75;
    return std::string("changed");
}

// The switch a feature's options wait for (the spec this test holds the walk to): MoE options
// need experts, MLA options multi-latent attention, ...; none for the rest.
CheckpointArgs feature_on(const std::string& dest, std::string_view group) {
    const auto starts = [&](const char* p) { return dest.rfind(p, 0) == 0; };
    if (dest != "num_experts" && (group == "moe" || starts("moe_")))
        return {{"num_experts", int64_t(4)}};
    if (starts("yarn_")) return {{"position_embedding_type", std::string("yarn")}};
    if (group == "mla") return {{"multi_latent_attention", true}};
    if (starts("relative_attention_"))
        return {{"position_embedding_type", std::string("relative")}};
    if (starts("mtp_") && dest != "mtp_num_layers") return {{"mtp_num_layers", int64_t(1)}};
    if (starts("dsa_") || (starts("linear_") && dest != "linear_attention_freq"))
        return {{"experimental_attention_variant", std::string("dsa")}};
    if (starts("mup_")) return {{"use_mup", true}};
    if (starts("qk_clip_")) return {{"qk_clip", true}};
    if (starts("mamba_")) return {{"is_hybrid_model", true}};
    if (dest == "window_attn_skip_freq") return {{"window_size", std::string("(4, 0)")}};
    if (dest == "kitchen_attention_backend") return {{"use_kitchen_attention", true}};
    return {};
}

std::string error_of_load(const CheckpointArgs& args, const std::vector<FlagInfo>& flags,
                          ModelArgs* out = nullptr) {
    try {
        ModelArgs got = model_args_from_checkpoint(args, flags);
        if (out) *out = got;
    } catch (const mt::Error& e) {
        return e.what();
    }
    return "";
}

// Every model-shaping argument of Megatron's arguments.py (core_v0.13's groups, and core_v0.19's
// options core_v0.13 lacks), set to something other than its default in a checkpoint's args,
// either reaches the gpt family's flags (it drives the model), is one the inference tools accept
// as changing nothing, or stops the load with "not supported yet: <capability>": none is dropped
// silently, and none is unknown (a newer option without a verdict says "not supported yet:
// <dest>", which this test does not take).
TEST(GptCheckpointArgs, EveryModelShapingFieldDrivesTheModelIsAcceptedOrIsRefused) {
    const std::vector<FlagInfo> flags = gpt_family_flags();
    const std::set<std::string> older_groups = {"network size", "moe", "mla",
                                                "heterogeneous architecture", "experimental"};
    const std::set<std::string> newer_groups = {"transformer configuration",
                                                "network size",
                                                "moe",
                                                "mla",
                                                "experimental_attention_variant",
                                                "heterogeneous architecture",
                                                "experimental"};
    std::set<std::string> older_flags;
    for (const cli::MegatronFlag& f : cli::megatron_flags())
        older_flags.insert(std::string(f.flag));
    std::vector<const cli::MegatronFlag*> rows;
    for (const cli::MegatronFlag& f : cli::megatron_flags())
        if (older_groups.count(std::string(f.group)) || f.flag == "--qk-l2-norm" ||
            f.flag == "--qk-layernorm")
            rows.push_back(&f);
    for (const cli::MegatronFlag& f : cli::newer_megatron_flags())
        if (!older_flags.count(std::string(f.flag)) && newer_groups.count(std::string(f.group)))
            rows.push_back(&f);
    int driven = 0, accepted = 0, refused = 0, newer = 0;
    std::set<std::string> seen;
    for (const cli::MegatronFlag* f : rows) {
        const std::string flag(f->flag), dest(f->dest);
        if (f->nargs == "*" || f->nargs == "+") continue;  // lists: not an ArgValue
        if (find_arg(kBase, dest) || !seen.insert(dest).second) continue;
        newer += !older_flags.count(flag);
        CheckpointArgs args = kBase;
        for (const auto& [k, v] : feature_on(dest, f->group)) set_arg(args, k, v);
        const bool gated = args.size() > kBase.size();
        ModelArgs before, got;
        const std::string switch_error = error_of_load(args, flags, &before);
        set_arg(args, dest, changed_value(*f));
        const std::string error = error_of_load(args, flags, &got);
        const bool family_reads = std::any_of(flags.begin(), flags.end(), [&](const FlagInfo& fi) {
            return "--" + fi.name == flag || fi.store_false_dest == dest;
        });
        SCOPED_TRACE(flag + " (" + dest + ")");
        if (family_reads) {
            EXPECT_EQ(error, switch_error);
            if (error.empty()) {
                EXPECT_NE(got, before) << "read by the family but changes nothing";
            }
            ++driven;
        } else if (error.empty()) {
            ++accepted;
        } else {
            // The field, or the feature it waits for (itself refused), is named.
            const bool names_field = error.find("checkpoint args: " + dest + " = ") == 0;
            EXPECT_TRUE(names_field || (gated && error == switch_error)) << error;
            EXPECT_EQ(error.find(": not supported yet: " + dest), std::string::npos)
                << "no verdict for it: " << error;
            EXPECT_NE(error.find(": not supported yet: "), std::string::npos) << error;
            ++refused;
        }
        // Inert while its feature is off.
        if (gated) {
            CheckpointArgs off = kBase;
            set_arg(off, dest, changed_value(*f));
            EXPECT_EQ(error_of_load(off, flags), "") << "matters without its feature";
        }
    }
    EXPECT_GT(driven, 20);
    EXPECT_GT(refused, 60);  // MoE, MLA, T5, Mamba, MTP, GPT-OSS, attention variants, ...
    EXPECT_GT(accepted, 40);
    EXPECT_GT(newer, 100);
    // A MoE checkpoint's experts and pattern reach the family (the pattern as a list).
    CheckpointArgs moe = kBase;
    set_arg(moe, "num_experts", int64_t(8));
    set_arg(moe, "moe_layer_freq", std::vector<int64_t>{0, 1});
    const ModelArgs moe_args = model_args_from_checkpoint(moe, flags);
    EXPECT_EQ(moe_args.at("num-experts"), "8");
    EXPECT_EQ(moe_args.at("moe-layer-freq"), "[0, 1]");
}

// What validate_args stores when a flag is not given loads: encoder_num_layers = num_layers and
// encoder_seq_length = seq_length (every model), core_v0.19's defaults where they changed
// (mscale_all_dim 0.0, moe_deepep_num_sms None) and its derived weight-shard counts (1).
TEST(GptCheckpointArgs, ValidateArgsDerivedValuesLoad) {
    const std::vector<FlagInfo> flags = gpt_family_flags();
    CheckpointArgs args = kBase;
    set_arg(args, "seq_length", int64_t(32));
    set_arg(args, "encoder_num_layers", int64_t(2));
    set_arg(args, "encoder_seq_length", int64_t(32));
    set_arg(args, "mscale_all_dim", 0.0);
    set_arg(args, "mscale", 1.0);
    set_arg(args, "tensor_parallel_num_weight_shards", int64_t(1));
    set_arg(args, "expert_tensor_parallel_num_weight_shards", int64_t(1));
    EXPECT_EQ(error_of_load(args, flags), "");
    set_arg(args, "num_experts", int64_t(4));
    set_arg(args, "moe_deepep_num_sms", ArgValue{});  // core_v0.19
    EXPECT_EQ(error_of_load(args, flags), "");
    set_arg(args, "moe_deepep_num_sms", int64_t(20));  // core_v0.13
    EXPECT_EQ(error_of_load(args, flags), "");

    // An encoder of another depth is T5's; a decoder depth too.
    CheckpointArgs t5 = args;
    set_arg(t5, "encoder_num_layers", int64_t(3));
    EXPECT_EQ(error_of_load(t5, flags).rfind("checkpoint args: encoder_num_layers = 3: not "
                                             "supported yet: --encoder-num-layers is read by T5 "
                                             "models (pretrain_t5.py): give --model t5",
                                             0),
              0u)
        << error_of_load(t5, flags);
    t5 = args;
    set_arg(t5, "decoder_num_layers", int64_t(2));
    EXPECT_NE(error_of_load(t5, flags).find("decoder_num_layers = 2"), std::string::npos);
    // Weight shards other than 1 are a layout this project does not read.
    CheckpointArgs sharded = args;
    set_arg(sharded, "tensor_parallel_num_weight_shards", int64_t(2));
    EXPECT_NE(error_of_load(sharded, flags).find("tensor_parallel_num_weight_shards = 2"),
              std::string::npos);
}

// core_v0.19 stores --norm-epsilon as layernorm_epsilon and --apply-layernorm-1p as
// layernorm_zero_centered_gamma: read as core_v0.13's names (a checkpoint trained with
// --norm-epsilon 1e-6 must not load with 1e-5).
TEST(GptCheckpointArgs, RenamedFieldsAreReadUnderBothNames) {
    const std::vector<FlagInfo> flags = gpt_family_flags();
    CheckpointArgs args = kBase;
    set_arg(args, "layernorm_epsilon", 1e-6);
    set_arg(args, "layernorm_zero_centered_gamma", true);
    as_core_v013_args(args);
    const nn::TransformerArgs c =
        nn::read_transformer_args(model_args_from_checkpoint(args, flags));
    EXPECT_EQ(c.norm_epsilon, 1e-6);
    EXPECT_TRUE(c.apply_layernorm_1p);
    // core_v0.13's name, where both are present, is the one read.
    CheckpointArgs both = kBase;
    set_arg(both, "norm_epsilon", 1e-5);
    set_arg(both, "layernorm_epsilon", 1e-6);
    as_core_v013_args(both);
    EXPECT_EQ(nn::read_transformer_args(model_args_from_checkpoint(both, flags)).norm_epsilon,
              1e-5);
    // A switch whose polarity changed holds the negation under the older name.
    CheckpointArgs mamba = kBase;
    set_arg(mamba, "use_mamba_mem_eff_path", false);
    as_core_v013_args(mamba);
    ASSERT_NE(find_arg(mamba, "disable_mamba_mem_eff_path"), nullptr);
    EXPECT_TRUE(bool_arg(mamba, "disable_mamba_mem_eff_path"));
}

// Megatron-DeepSpeed's args (its `deepspeed` field) spell the same model its own way: read as
// core_v0.13's fields; its own mixture of experts is refused by name.
TEST(GptCheckpointArgs, MegatronDeepSpeedsArgsReadAsTheSameModel) {
    const std::vector<FlagInfo> flags = gpt_family_flags();
    CheckpointArgs args = kBase;
    set_arg(args, "deepspeed", false);
    set_arg(args, "normalization", std::string("rmsnorm"));
    set_arg(args, "layernorm_epsilon", 1e-6);
    set_arg(args, "rope_theta", int64_t(500000));
    set_arg(args, "use_rotary_position_embeddings", true);
    set_arg(args, "add_position_embedding", false);
    set_arg(args, "num_key_value_heads", int64_t(2));
    set_arg(args, "num_experts", std::vector<int64_t>{1});
    set_arg(args, "mlp_type", std::string("standard"));
    set_arg(args, "encoder_num_layers", int64_t(2));
    as_core_v013_args(args);
    const nn::TransformerArgs c =
        nn::read_transformer_args(model_args_from_checkpoint(args, flags));
    EXPECT_EQ(c.normalization, nn::Normalization::rms_norm);
    EXPECT_EQ(c.norm_epsilon, 1e-6);
    EXPECT_EQ(c.position_embedding, nn::PositionEmbedding::rope);
    EXPECT_EQ(c.rotary_base, 500000);
    EXPECT_EQ(c.num_query_groups, 2);
    EXPECT_FALSE(c.moe.enabled());
    // The same args without `deepspeed` are Megatron-LM's: nothing is added.
    CheckpointArgs lm = kBase;
    set_arg(lm, "normalization", std::string("rmsnorm"));
    as_core_v013_args(lm);
    EXPECT_EQ(std::get<std::string>(*find_arg(lm, "normalization")), "rmsnorm");
    // Its num_experts list with expert_interval (always in its args): DeepSpeed's MoE layers,
    // one count per MoE layer; mlp_type residual: PR-MoE.
    CheckpointArgs moe = kBase;
    set_arg(moe, "deepspeed", true);
    set_arg(moe, "num_experts", std::vector<int64_t>{4, 8});
    set_arg(moe, "expert_interval", int64_t(1));
    set_arg(moe, "mlp_type", std::string("residual"));
    as_core_v013_args(moe);
    const nn::TransformerArgs m = nn::read_transformer_args(model_args_from_checkpoint(moe, flags));
    EXPECT_TRUE(m.moe.router.gshard.enabled);
    EXPECT_TRUE(m.moe.residual_mlp);
    EXPECT_EQ(m.moe_layers.experts, (std::vector<int64_t>{4, 8}));
}

// Options of core_v0.19 that change the model and that the family lacks stop the load (before,
// they were dropped: a GPT-OSS checkpoint loaded as full attention with a vanilla softmax).
TEST(GptCheckpointArgs, NewerModelOptionsAreRefusedByName) {
    const std::vector<FlagInfo> flags = gpt_family_flags();
    const std::pair<const char*, ArgValue> cases[] = {
        {"attention_output_gate", true},
        {"experimental_attention_variant", std::string("gated_delta_net")},
    };
    for (const auto& [dest, value] : cases) {
        CheckpointArgs args = kBase;
        set_arg(args, dest, value);
        const std::string error = error_of_load(args, flags);
        EXPECT_EQ(error.rfind("checkpoint args: " + std::string(dest) + " = ", 0), 0u) << error;
        EXPECT_NE(error.find("not supported yet: "), std::string::npos) << error;
    }
    // ... and options that change nothing here, or that the family reads (the sliding window:
    // a tuple in the args; attention sinks; GPT-OSS's quick GeGLU with its offset and clamp),
    // load.
    for (const auto& [dest, value] : std::vector<std::pair<const char*, ArgValue>>{
             {"cuda_graph_impl", std::string("local")},
             {"use_mup", true},
             {"cpu_offloading_num_layers", int64_t(2)},
             {"qk_clip", true},
             {"fp4", std::string("nvfp4")},
             {"window_size", std::vector<int64_t>{128, 0}},
             {"softmax_type", std::string("learnable")},
             {"quick_geglu", true},
             {"glu_linear_offset", 1.0},
             {"activation_func_clamp_value", 7.0}}) {
        CheckpointArgs args = kBase;
        set_arg(args, dest, value);
        EXPECT_EQ(error_of_load(args, flags), "") << dest;
    }
}

// --use-checkpoint-args as Megatron's load_args_from_checkpoint reads its own source says
// (tests/fixtures/megatron_checkpoints, by make_fixtures.py: load_args_fields_0.13.txt, the
// fields it reads, and load_args_unforced_0.13.txt, those it takes only where the run left them
// unset): each gpt family flag among them keeps a given value when unforced (and takes the
// checkpoint's when none is given), and takes the checkpoint's over the given one when forced.
TEST(GptCheckpointArgs, UseCheckpointArgsForcesWhatMegatronForces) {
    const std::vector<FlagInfo> flags = gpt_family_flags();
    const auto lines = [](const char* name) {
        std::set<std::string> out;
        std::istringstream in(
            mt::test::read_file(mt::test::fixtures_dir() / "megatron_checkpoints" / name));
        for (std::string line; std::getline(in, line);) out.insert(line);
        return out;
    };
    const std::set<std::string> fields = lines("load_args_fields_0.13.txt");
    const std::set<std::string> unforced = lines("load_args_unforced_0.13.txt");
    std::map<std::string, const cli::MegatronFlag*> rows;
    for (const cli::MegatronFlag& f : cli::megatron_flags()) rows[std::string(f.dest)] = &f;
    int forced_checked = 0, unforced_checked = 0;
    for (const FlagInfo& flag : flags) {
        const bool is_switch = flag.is_switch || !flag.store_false_dest.empty();
        const std::string dest =
            flag.store_false_dest.empty() ? python_arg_name(flag.name) : flag.store_false_dest;
        if (!fields.count(dest) || !rows.count(dest)) continue;
        SCOPED_TRACE(flag.name + " (" + dest + ")");
        CheckpointArgs saved = kBase;
        for (const auto& [k, v] : feature_on(dest, rows[dest]->group)) set_arg(saved, k, v);
        set_arg(saved, dest, changed_value(*rows[dest]));
        const ModelArgs from_checkpoint = model_args_from_checkpoint(saved, flags);
        const auto saved_value = from_checkpoint.find(flag.name);
        // A switch given the other way than the checkpoint has it; a value given as text.
        ModelArgs given;
        if (!is_switch)
            given[flag.name] = "given";
        else if (saved_value == from_checkpoint.end())
            given[flag.name] = "";
        const ModelArgs got = load_args_from_checkpoint(given, saved, flags);
        const auto got_value = got.find(flag.name);
        if (unforced.count(dest)) {
            ASSERT_FALSE(is_switch);
            EXPECT_EQ(got.at(flag.name), "given");
            const ModelArgs unset = load_args_from_checkpoint({}, saved, flags);
            ASSERT_NE(saved_value, from_checkpoint.end());
            EXPECT_EQ(unset.at(flag.name), saved_value->second);
            ++unforced_checked;
        } else {
            ASSERT_EQ(got_value != got.end(), saved_value != from_checkpoint.end());
            if (saved_value != from_checkpoint.end())
                EXPECT_EQ(got_value->second, saved_value->second);
            ++forced_checked;
        }
    }
    EXPECT_GE(unforced_checked, 6);
    EXPECT_GE(forced_checked, 12);
}

// megatron.cpp's flags for Gemma's layers (Megatron's parser has none) come from the checkpoint
// under --use-checkpoint-args like Megatron's model args: the run rebuilds the saved model.
TEST(GptCheckpointArgs, UseCheckpointArgsTakesOurGemmaFlags) {
    const std::vector<FlagInfo> flags = gpt_family_flags();
    CheckpointArgs saved = kBase;
    for (const char* dest : {"geglu", "post_sublayer_norm", "scale_embeddings"})
        set_arg(saved, dest, true);
    set_arg(saved, "rotary_base_local", 10000.0);
    set_arg(saved, "softmax_scale", 0.125);
    const ModelArgs got = load_args_from_checkpoint({{"softmax-scale", "0.5"}}, saved, flags);
    for (const char* flag : {"geglu", "post-sublayer-norm", "scale-embeddings"})
        EXPECT_EQ(got.count(flag), 1u) << flag;
    EXPECT_EQ(got.at("rotary-base-local"), "10000");
    EXPECT_EQ(got.at("softmax-scale"), "0.125");
    set_arg(saved, "geglu", false);
    EXPECT_EQ(load_args_from_checkpoint({{"geglu", ""}}, saved, flags).count("geglu"), 0u);
}

}  // namespace
}  // namespace mt::plugins::gpt
