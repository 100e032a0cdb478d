#include "architectures/hybrid_tensors.h"

#include "mt/error.h"

namespace mt::plugins::hf {

std::vector<HybridTensor> hybrid_tensors(const HfConfig& c, const std::string& backbone) {
    using Kind = HybridTensor::Kind;
    const int64_t h = c.hidden_size, v = c.vocab_size;
    const nn::MambaConfig& m = c.hybrid.mixer;
    const int64_t di = m.num_heads * m.head_dim, gn = m.num_groups * m.state_dim;
    std::vector<HybridTensor> out;
    auto add = [&](std::string megatron, std::string hf, Shape shape, Kind kind = Kind::same) {
        out.push_back({std::move(megatron), backbone + hf, std::move(shape), kind});
    };
    add("embedding.word_embeddings.weight", "embeddings.weight", {v, h}, Kind::vocab);
    for (size_t i = 0; i < c.hybrid.pattern.size(); ++i) {
        const std::string src = "layers." + std::to_string(i) + ".";
        const std::string dst = "decoder.layers." + std::to_string(i) + ".";
        const std::string mixer = src + "mixer.";
        switch (c.hybrid.pattern[i]) {
            case 'M':
                add(dst + "mixer.in_proj.layer_norm_weight", src + "norm.weight", {h});
                add(dst + "mixer.in_proj.weight", mixer + "in_proj.weight",
                    {2 * di + 2 * gn + m.num_heads, h});
                add(dst + "mixer.conv1d.weight", mixer + "conv1d.weight",
                    {di + 2 * gn, 1, m.conv_width});
                add(dst + "mixer.conv1d.bias", mixer + "conv1d.bias", {di + 2 * gn});
                add(dst + "mixer.dt_bias", mixer + "dt_bias", {m.num_heads});
                add(dst + "mixer.A_log", mixer + "A_log", {m.num_heads});
                add(dst + "mixer.D", mixer + "D", {m.num_heads});
                add(dst + "mixer.norm.weight", mixer + "norm.weight", {di});
                add(dst + "mixer.out_proj.weight", mixer + "out_proj.weight", {h, di});
                break;
            case '*': {
                const std::string attn = dst + "self_attention.";
                add(attn + "linear_qkv.layer_norm_weight", src + "norm.weight", {h});
                add(attn + "linear_qkv.weight", mixer,
                    {(c.num_heads + 2 * c.num_kv_heads) * c.head_dim, h}, Kind::qkv);
                add(attn + "linear_proj.weight", mixer + "o_proj.weight",
                    {h, c.num_heads * c.head_dim});
                break;
            }
            case '-':
                add(dst + "mlp.linear_fc1.layer_norm_weight", src + "norm.weight", {h});
                add(dst + "mlp.linear_fc1.weight", mixer + "up_proj.weight",
                    {c.ffn_hidden_size, h});
                add(dst + "mlp.linear_fc2.weight", mixer + "down_proj.weight",
                    {h, c.ffn_hidden_size});
                break;
            case 'E': {  // NemotronHMoE
                const GroupedMoe& moe = c.moe;
                add(dst + "pre_mlp_layernorm.weight", src + "norm.weight", {h});
                add(dst + "mlp.router.weight", mixer + "gate.weight", {c.num_experts, h});
                add(dst + "mlp.router.expert_bias", mixer + "gate.e_score_correction_bias",
                    {c.num_experts});
                for (int64_t e = 0; e < c.num_experts; ++e) {
                    const std::string ours = dst + "mlp.experts.local_experts." +
                                             std::to_string(e) + ".",
                                      theirs = mixer + "experts." + std::to_string(e) + ".";
                    add(ours + "linear_fc1.weight", theirs + "up_proj.weight", {moe.expert_ffn, h});
                    add(ours + "linear_fc2.weight", theirs + "down_proj.weight",
                        {h, moe.expert_ffn});
                }
                add(dst + "mlp.shared_experts.linear_fc1.weight",
                    mixer + "shared_experts.up_proj.weight", {moe.shared_ffn, h});
                add(dst + "mlp.shared_experts.linear_fc2.weight",
                    mixer + "shared_experts.down_proj.weight", {h, moe.shared_ffn});
                break;
            }
            default:
                MT_FAIL("hybrid layer ", i, " is '", c.hybrid.pattern[i],
                        "': only Mamba ('M'), attention ('*'), MLP ('-') and MoE ('E') layers "
                        "map to Hugging Face here");
        }
    }
    add("decoder.final_norm.weight", "norm_f.weight", {h});
    if (!c.tied) out.push_back({"output_layer.weight", "lm_head.weight", {v, h}, Kind::vocab});
    return out;
}

}  // namespace mt::plugins::hf
