// Megatron's multi-latent attention flags, read as core_transformer_config_from_args fills an
// MLATransformerConfig.
#include "mt/nn/mla_args.h"

#include "mt/error.h"
#include "mt/nn/recompute.h"
#include "mt/nn/transformer_args.h"

namespace mt::nn {

std::vector<FlagInfo> mla_flags() {
    return {switch_flag("multi-latent-attention",
                        "multi-latent attention (DeepSeek-V2/V3) instead of self-attention"),
            value_flag("q-lora-rank",
                       "MLA: the rank of the queries' low-rank projection (default: none)"),
            value_flag("kv-lora-rank", "MLA: the rank of the keys' and values' latent", "32"),
            value_flag("qk-head-dim", "MLA: each query and key head's part without rope", "128"),
            value_flag("qk-pos-emb-head-dim", "MLA: each query and key head's rotary part", "64"),
            value_flag("v-head-dim", "MLA: each value head's size", "128"),
            value_flag("rotary-scaling-factor", "MLA: YaRN's rotary scaling factor", "1.0"),
            value_flag("mscale", "MLA: YaRN's mscale", "1.0"),
            // No default text: it differs (1.0 for multi-latent attention, core_v0.13's; 0.0 for
            // GPT's --position-embedding-type yarn, core_v0.19's), and a default would read as
            // given.
            value_flag("mscale-all-dim",
                       "YaRN's mscale over all dims (default 1.0 with multi-latent attention, 0.0 "
                       "with --position-embedding-type yarn)"),
            value_flag("rope-type", "MLA: yarn (its default) or rope")};
}

// rope_type and the YaRN betas keep MLATransformerConfig's defaults in Megatron 0.13.
void read_mla_args(const ModelArgsReader& f, TransformerArgs& c) {
    MlaConfig& m = c.mla;
    m.enabled = f.flag("multi-latent-attention");
    MT_CHECK(m.enabled || !recompute_module(c.recompute, "mla_up_proj"),
             "mla_up_proj in recompute_modules is only supported with multi_latent_attention.");
    if (!m.enabled) return;
    m.q_lora_rank = f.has("q-lora-rank") ? f.integer("q-lora-rank") : 0;
    MT_CHECK(!f.has("q-lora-rank") || m.q_lora_rank > 0, "--q-lora-rank must be positive, got ",
             m.q_lora_rank);
    m.kv_lora_rank = f.integer("kv-lora-rank", 32);
    m.qk_head_dim = f.integer("qk-head-dim", 128);
    m.qk_pos_emb_head_dim = f.integer("qk-pos-emb-head-dim", 64);
    m.v_head_dim = f.integer("v-head-dim", 128);
    m.rotary_scaling_factor = f.real("rotary-scaling-factor", 1.0);
    m.mscale = f.real("mscale", 1.0);
    m.mscale_all_dim = f.real("mscale-all-dim", 1.0);
    const std::string rope = f.has("rope-type") ? f.text("rope-type") : "yarn";
    MT_CHECK(rope == "yarn" || rope == "rope", "--rope-type ", rope,
             ": supported are yarn and rope");
    m.yarn = rope == "yarn";
    MT_CHECK(!m.yarn || m.rotary_scaling_factor > 0,
             "--rotary-scaling-factor must be positive, got ", m.rotary_scaling_factor);
    m.original_max_positions = c.max_position_embeddings;
    // Megatron's FLOPs count (training.py), which every iteration reaches, asserts against
    // query groups with MLA; its YaRN embedding against interleaving.
    MT_CHECK(!f.flag("group-query-attention"),
             "--multi-latent-attention with --group-query-attention: Megatron's MLA has no query "
             "groups");
    MT_CHECK(!c.qk_l2_norm,
             "--multi-latent-attention with --qk-l2-norm: qk_l2_norm is not "
             "supported with MLA (Megatron's layer specs)");
    MT_CHECK(!(m.yarn && c.rotary_interleaved),
             "--multi-latent-attention with --rotary-interleaved: Megatron's YaRN rotary "
             "embedding does not support interleaved rotary embeddings");
}

}  // namespace mt::nn
