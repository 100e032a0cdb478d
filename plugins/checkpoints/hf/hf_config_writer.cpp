#include "hf_config_writer.h"

#include <algorithm>
#include <optional>

#include "hf_json.h"
#include "mt/error.h"

namespace mt::plugins::hf {

namespace {

using namespace json;

std::string optional_id(const std::optional<int64_t>& id) {
    return id ? integer(*id) : "null";
}

std::string torch_dtype(DType d) {
    switch (d) {
        case DType::f32:
            return "float32";
        case DType::bf16:
            return "bfloat16";
        case DType::f16:
            return "float16";
        default:
            MT_FAIL("--saver hf: weights of dtype ", dtype_name(d), " (f32, bf16 or f16 only)");
    }
}

Members gpt2_members(const HfConfig& c) {
    return {{"activation_function", text("gelu_new")},
            {"architectures", strings({"GPT2LMHeadModel"}, 1)},
            {"attn_pdrop", real(0.0)},
            {"embd_pdrop", real(0.0)},
            {"initializer_range", real(c.initializer_range)},
            {"layer_norm_epsilon", real(c.norm_epsilon)},
            {"model_type", text("gpt2")},
            {"n_embd", integer(c.hidden_size)},
            {"n_head", integer(c.num_heads)},
            {"n_inner", integer(c.ffn_hidden_size)},
            {"n_layer", integer(c.num_layers)},
            {"n_positions", integer(c.max_position_embeddings)},
            {"reorder_and_upcast_attn", boolean(false)},
            {"resid_pdrop", real(0.0)},
            {"scale_attn_by_inverse_layer_idx", boolean(false)},
            {"scale_attn_weights", boolean(true)},
            {"tie_word_embeddings", boolean(true)}};
}

// rope_scaling's members (without rope_theta), or none for plain rope.
std::optional<Members> rope_scaling(const HfConfig& c) {
    if (c.llama3_rope_factor > 0)
        return Members{{"factor", real(c.llama3_rope_factor)},
                       {"high_freq_factor", real(4.0)},
                       {"low_freq_factor", real(1.0)},
                       {"original_max_position_embeddings", integer(8192)},
                       {"rope_type", text("llama3")}};
    if (c.linear_rope_factor > 0)
        return Members{{"factor", real(double(c.linear_rope_factor))},
                       {"rope_type", text("linear")}};
    return std::nullopt;
}

Members llama_members(const HfConfig& c) {
    const bool mistral = c.model_type == "mistral", mixtral = c.model_type == "mixtral";
    const bool qwen_moe = c.model_type == "qwen3_moe";
    const bool qwen = c.model_type == "qwen2" || c.model_type == "qwen3" || qwen_moe;
    const char* architecture = mixtral                   ? "MixtralForCausalLM"
                               : mistral                 ? "MistralForCausalLM"
                               : c.model_type == "qwen2" ? "Qwen2ForCausalLM"
                               : c.model_type == "qwen3" ? "Qwen3ForCausalLM"
                               : qwen_moe                ? "Qwen3MoeForCausalLM"
                                                         : "LlamaForCausalLM";
    Members m = {{"architectures", strings({architecture}, 1)},
                 {"attention_dropout", real(0.0)},
                 {"head_dim", integer(c.head_dim)},
                 {"hidden_act", text("silu")},
                 {"hidden_size", integer(c.hidden_size)},
                 {"initializer_range", real(c.initializer_range)},
                 {"intermediate_size", integer(c.ffn_hidden_size)},
                 {"max_position_embeddings", integer(c.max_position_embeddings)},
                 {"model_type", text(c.model_type)},
                 {"num_attention_heads", integer(c.num_heads)},
                 {"num_hidden_layers", integer(c.num_layers)},
                 {"num_key_value_heads", integer(c.num_kv_heads)},
                 {"rms_norm_eps", real(c.norm_epsilon)},
                 {"rope_theta", real(c.rope_theta)},
                 {"tie_word_embeddings", boolean(c.tied)}};
    // transformers 4 reads rope_scaling, 5 rope_parameters (which also holds rope_theta).
    const std::optional<Members> scaling = rope_scaling(c);
    Members parameters = scaling.value_or(Members{{"rope_type", text("default")}});
    parameters["rope_theta"] = real(c.rope_theta);
    m["rope_parameters"] = object(parameters, 1);
    m["rope_scaling"] = scaling ? object(*scaling, 1) : "null";
    if (mixtral) {
        m["sliding_window"] = "null";
        m["num_local_experts"] = integer(c.num_experts);
        m["num_experts_per_tok"] = integer(c.experts_per_token);
        m["router_jitter_noise"] = real(0.0);
        m["output_router_logits"] = boolean(false);
    } else if (mistral) {
        m["sliding_window"] = "null";  // Megatron's attention sees every earlier token
    } else if (qwen) {
        m["sliding_window"] = "null";
        m["use_sliding_window"] = boolean(false);
        if (c.model_type != "qwen2") m["attention_bias"] = boolean(false);
        if (qwen_moe) {
            // Every layer sparse: intermediate_size (the dense layers' size, none here) is left
            // at the experts' size the common members wrote.
            // transformers 5 reads either name, 4 only num_experts.
            m["num_experts"] = m["num_local_experts"] = integer(c.num_experts);
            m["num_experts_per_tok"] = integer(c.experts_per_token);
            m["moe_intermediate_size"] = integer(c.ffn_hidden_size);
            m["norm_topk_prob"] = boolean(!c.router_pre_softmax);
            m["decoder_sparse_step"] = integer(1);
            m["mlp_only_layers"] = "[]";
            m["output_router_logits"] = boolean(false);
        }
    } else {
        m["attention_bias"] = boolean(false);
        m["mlp_bias"] = boolean(false);
        m["pretraining_tp"] = integer(1);
    }
    return m;
}

// MegatronBertConfig (pre-LayerNorm) or BertConfig (post-LayerNorm): the same keys; the erf
// GeLU (hf_config_from_args admits no other).
Members bert_members(const HfConfig& c) {
    const std::string model = c.bert.post_layer_norm ? "Bert" : "MegatronBert";
    return {{"add_cross_attention", boolean(false)},
            {"architectures",
             strings({model + (c.bert.binary_head ? "ForPreTraining" : "ForMaskedLM")}, 1)},
            {"attention_probs_dropout_prob", real(0.0)},
            {"hidden_act", text("gelu")},
            {"hidden_dropout_prob", real(0.0)},
            {"hidden_size", integer(c.hidden_size)},
            {"initializer_range", real(c.initializer_range)},
            {"intermediate_size", integer(c.ffn_hidden_size)},
            {"is_decoder", boolean(false)},
            {"layer_norm_eps", real(c.norm_epsilon)},
            {"max_position_embeddings", integer(c.max_position_embeddings)},
            {"model_type", text(c.model_type)},
            {"num_attention_heads", integer(c.num_heads)},
            {"num_hidden_layers", integer(c.num_layers)},
            {"pad_token_id", integer(0)},
            {"position_embedding_type", text("absolute")},
            {"tie_word_embeddings", boolean(c.tied)},
            // At least one row: transformers always adds a token-type embedding.
            {"type_vocab_size", integer(std::max<int64_t>(1, c.bert.tokentypes))}};
}

// The Mamba mixer's keys of Mamba2Config and NemotronHConfig (Megatron's mixer: SiLU, width-4
// convolution with bias, no projection biases, dt from [0.001, 0.1] at initialisation).
Members mamba_members(const HfConfig& c, bool nemotron) {
    const nn::MambaConfig& m = c.hybrid.mixer;
    const std::string prefix = nemotron ? "mamba_" : "";
    return {{prefix + "num_heads", integer(m.num_heads)},
            {prefix + "head_dim", integer(m.head_dim)},
            {nemotron ? "ssm_state_size" : "state_size", integer(m.state_dim)},
            {"n_groups", integer(m.num_groups)},
            {"conv_kernel", integer(m.conv_width)},
            {nemotron ? "mamba_hidden_act" : "hidden_act", text("silu")},
            {"use_bias", boolean(false)},
            {"use_conv_bias", boolean(true)},
            {"time_step_min", real(nn::MambaConfig::dt_min)},
            {"time_step_max", real(nn::MambaConfig::dt_max)},
            {"chunk_size", integer(128)}};
}

Members mamba2_members(const HfConfig& c) {
    Members m = mamba_members(c, false);
    m["architectures"] = strings({"Mamba2ForCausalLM"}, 1);
    // hf_config_from_args checked that the inner width is a multiple of the hidden size.
    m["expand"] = integer(c.hybrid.mixer.num_heads * c.hybrid.mixer.head_dim / c.hidden_size);
    m["hidden_size"] = integer(c.hidden_size);
    m["initializer_range"] = real(c.initializer_range);
    m["layer_norm_epsilon"] = real(c.norm_epsilon);
    m["model_type"] = text("mamba2");
    m["num_hidden_layers"] = integer(c.num_layers);
    m["residual_in_fp32"] = boolean(false);  // Megatron's residual keeps the model's dtype
    m["rms_norm"] = boolean(true);
    m["tie_word_embeddings"] = boolean(c.tied);
    return m;
}

// The pattern as NemotronHConfig's hybrid_override_pattern, which transformers 4's and 5's both
// read (and the hub's configs hold).
Members nemotron_h_members(const HfConfig& c) {
    Members m = mamba_members(c, true);
    m["architectures"] = strings({"NemotronHForCausalLM"}, 1);
    m["attention_bias"] = boolean(false);
    m["attention_dropout"] = real(0.0);
    m["head_dim"] = integer(c.head_dim);
    m["hidden_size"] = integer(c.hidden_size);
    m["hybrid_override_pattern"] = text(c.hybrid.pattern);
    m["initializer_range"] = real(c.initializer_range);
    m["intermediate_size"] = integer(c.ffn_hidden_size);
    m["layer_norm_epsilon"] = real(c.norm_epsilon);
    m["max_position_embeddings"] = integer(c.max_position_embeddings);
    m["mlp_bias"] = boolean(false);
    m["mlp_hidden_act"] = text("relu2");
    m["model_type"] = text("nemotron_h");
    m["num_attention_heads"] = integer(c.num_heads);
    m["num_hidden_layers"] = integer(c.num_layers);
    m["num_key_value_heads"] = integer(c.num_kv_heads);
    m["residual_in_fp32"] = boolean(false);
    m["tie_word_embeddings"] = boolean(c.tied);
    if (c.num_experts > 0) {  // NemotronHMoE layers
        const GroupedMoe& moe = c.moe;
        m["n_routed_experts"] = integer(c.num_experts);
        m["num_experts_per_tok"] = integer(c.experts_per_token);
        m["moe_intermediate_size"] = integer(moe.expert_ffn);
        m["moe_shared_expert_intermediate_size"] = integer(moe.shared_ffn);
        m["n_shared_experts"] = integer(1);
        m["n_group"] = integer(moe.num_groups);
        m["topk_group"] = integer(moe.group_topk);
        m["norm_topk_prob"] = boolean(c.experts_per_token > 1);
        m["routed_scaling_factor"] = real(moe.scaling_factor);
    }
    return m;
}

// DeepseekV3Config: the multi-latent attention sizes, YaRN or plain rope (rope_parameters, with
// rope_scaling for transformers 4), the dense layers then the MoE ones, the multi-token
// prediction layers. DeepseekV2Config for V2's routing (c.moe.softmax): greedy top-k, no
// groups, no multi-token prediction, rope always interleaved.
Members deepseek_members(const HfConfig& c) {
    const MlaParts& mla = c.mla;
    const bool v2 = c.moe.softmax;
    Members m = {
        {"architectures", strings({v2 ? "DeepseekV2ForCausalLM" : "DeepseekV3ForCausalLM"}, 1)},
        {"attention_bias", boolean(false)},
        {"attention_dropout", real(0.0)},
        {"first_k_dense_replace", integer(mla.first_dense_layers)},
        // transformers writes the rotary part's width as head_dim
        {"head_dim", integer(mla.qk_rope_head_dim)},
        {"hidden_act", text("silu")},
        {"hidden_size", integer(c.hidden_size)},
        {"initializer_range", real(c.initializer_range)},
        {"intermediate_size", integer(c.ffn_hidden_size)},
        {"kv_lora_rank", integer(mla.kv_lora_rank)},
        {"max_position_embeddings", integer(c.max_position_embeddings)},
        {"model_type", text(v2 ? "deepseek_v2" : "deepseek_v3")},
        {"num_attention_heads", integer(c.num_heads)},
        {"num_hidden_layers", integer(c.num_layers)},
        {"num_key_value_heads", integer(c.num_heads)},
        {"num_nextn_predict_layers", integer(c.mtp_layers)},
        {"output_router_logits", boolean(false)},
        {"pretraining_tp", integer(1)},
        {"q_lora_rank", mla.q_lora_rank > 0 ? integer(mla.q_lora_rank) : "null"},
        {"qk_head_dim", integer(mla.qk_nope_head_dim + mla.qk_rope_head_dim)},
        {"qk_nope_head_dim", integer(mla.qk_nope_head_dim)},
        {"qk_rope_head_dim", integer(mla.qk_rope_head_dim)},
        {"rms_norm_eps", real(c.norm_epsilon)},
        {"rope_interleave", boolean(true)},
        {"rope_theta", real(c.rope_theta)},
        {"tie_word_embeddings", boolean(c.tied)},
        {"v_head_dim", integer(mla.v_head_dim)}};
    std::optional<Members> scaling;
    if (mla.yarn_factor > 0)
        scaling = Members{{"beta_fast", real(32.0)},
                          {"beta_slow", real(1.0)},
                          {"factor", real(mla.yarn_factor)},
                          {"mscale", real(mla.yarn_mscale)},
                          {"mscale_all_dim", real(mla.yarn_mscale)},
                          {"original_max_position_embeddings", integer(mla.original_max_positions)},
                          {"rope_type", text("yarn")}};
    Members parameters = scaling.value_or(Members{{"rope_type", text("default")}});
    parameters["rope_theta"] = real(c.rope_theta);
    m["rope_parameters"] = object(parameters, 1);
    m["rope_scaling"] = scaling ? object(*scaling, 1) : "null";
    const GroupedMoe& moe = c.moe;
    m["n_routed_experts"] = c.num_experts > 0 ? integer(c.num_experts) : "null";
    m["num_experts_per_tok"] = c.num_experts > 0 ? integer(c.experts_per_token) : "null";
    m["moe_intermediate_size"] = integer(c.num_experts > 0 ? moe.expert_ffn : c.ffn_hidden_size);
    m["n_shared_experts"] = integer(moe.expert_ffn > 0 ? moe.shared_ffn / moe.expert_ffn : 0);
    m["routed_scaling_factor"] = real(moe.scaling_factor);
    if (v2) {
        m.erase("num_nextn_predict_layers");
        m.erase("rope_interleave");
        m.erase("rope_scaling");
        m["mlp_bias"] = boolean(false);
        m["n_group"] = m["topk_group"] = "null";
        m["topk_method"] = text("greedy");
        m["norm_topk_prob"] = boolean(false);
        return m;
    }
    m["n_group"] = integer(moe.num_groups);
    m["topk_group"] = integer(moe.group_topk);
    m["norm_topk_prob"] = boolean(c.experts_per_token > 1);
    return m;
}

}  // namespace

std::string hf_config_json(const HfConfig& c, const HfConfigExtras& extras) {
    Members m = c.arch == HfArch::gpt2       ? gpt2_members(c)
                : c.arch == HfArch::llama    ? llama_members(c)
                : c.arch == HfArch::deepseek ? deepseek_members(c)
                : c.arch == HfArch::hybrid
                    ? (c.model_type == "mamba2" ? mamba2_members(c) : nemotron_h_members(c))
                    : bert_members(c);
    m["bos_token_id"] = optional_id(extras.bos_token_id);
    m["eos_token_id"] = optional_id(extras.eos_token_id);
    m["dtype"] = m["torch_dtype"] = text(torch_dtype(extras.dtype));
    m["use_cache"] = boolean(true);
    m["vocab_size"] = integer(c.vocab_size);
    return object(m, 0) + "\n";
}

std::string hf_generation_config_json(const HfConfigExtras& extras) {
    Members m = {{"_from_model_config", boolean(true)}};
    if (extras.bos_token_id) m["bos_token_id"] = integer(*extras.bos_token_id);
    if (extras.eos_token_id) m["eos_token_id"] = integer(*extras.eos_token_id);
    return object(m, 0) + "\n";
}

}  // namespace mt::plugins::hf
