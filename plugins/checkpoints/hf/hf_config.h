// What a Hugging Face config.json (GPT-2, Llama, Mistral, Qwen, DeepSeek-V3, Megatron-BERT,
// Mamba-2, Nemotron-H) says about the model, the Megatron model flags (ModelArgs) that build the
// same network with the gpt, bert or mamba family, and the way back: the Hugging Face model a
// checkpoint's Megatron args describe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mt/checkpoint.h"
#include "mt/model.h"
#include "mt/nn/mamba_config.h"

namespace mt::plugins::hf {

class HfArchitecture;  // hf_architecture.h: the families, one description each

// A BERT's parts that its Megatron args do not say (they have no token-type count).
struct BertParts {
    int64_t tokentypes = 2;   // rows of the token-type embedding (0: none)
    bool binary_head = true;  // the pooler and the sentence-order head
    // model_type bert, the original post-LayerNorm BERT: Megatron's
    // --apply-residual-connection-post-layernorm (from the args when saving)
    bool post_layer_norm = false;
};

// Nemotron-H's MoE layers (NemotronHMoE) and DeepSeek-V3's (DeepseekV3MoE): HfConfig's
// num_experts experts of expert_ffn, each token to the top experts_per_token of sigmoid(router
// logits) + a score correction bias (Megatron's --moe-router-score-function sigmoid
// --moe-router-enable-expert-bias) within its best group_topk of num_groups expert groups, the
// chosen sigmoids renormalised (when more than one) and scaled by scaling_factor; plus a shared
// expert of shared_ffn.
struct GroupedMoe {
    int64_t expert_ffn = 0, shared_ffn = 0, num_groups = 1, group_topk = 1;
    double scaling_factor = 1.0;
    // DeepSeek-V2's routing: softmax over every expert, the top k taken greedily, scaled and not
    // renormalised, no correction bias (Megatron's --moe-router-pre-softmax); else sigmoid
    // scores with the expert bias (DeepSeek-V3, Nemotron-H).
    bool softmax = false;
};

// A Mamba/hybrid model's parts beyond the transformer sizes (its attention and MLP layers use
// HfConfig's heads and ffn_hidden_size).
struct HybridParts {
    std::string pattern;    // a symbol per layer: 'M' Mamba, '*' attention, '-' MLP, 'E' MoE
    nn::MambaConfig mixer;  // its num_heads always given (never 0, "from the hidden size")
};

// DeepSeek-V3's multi-latent attention (Megatron's --multi-latent-attention sizes), its YaRN
// rope and which layers are dense.
struct MlaParts {
    int64_t q_lora_rank = 0;  // 0: q_proj (no q-lora)
    int64_t kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
    // YaRN (0: plain rope): its factor, mscale (= mscale_all_dim, as Megatron's MLA needs) and
    // the original positions (Megatron's --max-position-embeddings).
    double yarn_factor = 0, yarn_mscale = 1;
    int64_t original_max_positions = 0;
    // transformers' rope_interleave: the rotary rows of q and of the rope key in interleaved
    // pairs, as DeepSeek's weights and Megatron's MLA have them (false: in halves).
    bool rope_interleave = true;
    int64_t first_dense_layers = 0;  // first_k_dense_replace (all layers without experts)
};

// GPT-OSS beyond Mixtral's shape: q/k/v/o, router and expert biases (Megatron's add_bias_linear),
// a learned softmax offset per head (self_attn.sinks: --softmax-type learnable), quick GeGLU
// experts, (up + 1) * gate sigmoid(1.702 gate) (--quick-geglu --glu-linear-offset 1), both halves
// clamped at swiglu_limit (--activation-func-clamp-value), and YaRN rope
// (--position-embedding-type yarn; yarn_factor 0: plain rope).
struct GptOssParts {
    double swiglu_limit = 7.0;
    double yarn_factor = 0, yarn_beta_fast = 32, yarn_beta_slow = 1;
    int64_t yarn_original_max_positions = 4096;
    bool yarn_truncate = true;  // the ramp's bounds floored and ceiled
};

// Gemma 3 beyond Llama's shape: its windowed ("local") layers' rope base (rope_theta stays the
// full layers', with their linear scaling) and the queries' pre-attention scalar (the scores'
// scale is its inverse square root; Megatron's --softmax-scale). A multimodal folder (model_type
// gemma3) holds the text model under "language_model.": its weights' names start there.
struct Gemma3Parts {
    double local_rope_theta = 10000;
    double query_pre_attn_scalar = 0;
    std::string text_prefix;  // "" (gemma3_text) or "language_model." (gemma3)
};

struct HfConfig {
    const HfArchitecture* arch = nullptr;  // the family that reads and writes it
    // one of the family's model_types: "gpt2", "llama", "mistral", "qwen3_moe", "bert", ...
    std::string model_type;
    int64_t num_layers = 0, hidden_size = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0;
    int64_t ffn_hidden_size = 0, vocab_size = 0, max_position_embeddings = 0;
    double norm_epsilon = 1e-5, rope_theta = 10000;
    // rope_scaling: "llama3" (Megatron's --use-rope-scaling --rope-scaling-factor; its low/high
    // frequency factors 1 and 4 and original context 8192 are fixed), or "linear" (positions
    // divided by the factor: --rotary-seq-len-interpolation-factor). 0: none.
    double llama3_rope_factor = 0;
    int64_t linear_rope_factor = 0;
    bool tied = true;
    // Qwen2's q/k/v biases (Megatron's --add-qkv-bias); Qwen3's per-head q and k RMSNorm before
    // rope (--qk-layernorm).
    bool qkv_bias = false, qk_norm = false;
    // A sliding window (Mistral's sliding_window; Qwen's with use_sliding_window): each query
    // sees itself and the sliding_window - 1 keys before it (Megatron's --window-size
    // (sliding_window - 1, 0)) in the layers windowed_layers marks (empty: every layer;
    // --window-attn-skip-freq); 0: no window.
    int64_t sliding_window = 0;
    std::vector<bool> windowed_layers;
    // Mixtral: each layer's MLP is num_experts experts (ffn_hidden_size each), top_k per token
    // (Megatron's --num-experts, --moe-router-topk); 0: a dense model.
    int64_t num_experts = 0, experts_per_token = 0;
    // Qwen3-MoE's norm_topk_prob false: the softmax over every expert, its top k not
    // renormalised (Megatron's --moe-router-pre-softmax); Mixtral's routing renormalises.
    bool router_pre_softmax = false;
    double initializer_range = 0.02;  // written to config.json (Megatron's init_method_std)
    BertParts bert;                   // bert: type_vocab_size, cls.seq_relationship, post-LN
    HybridParts hybrid;               // hybrid: the layer pattern and the Mamba mixer's sizes
    GroupedMoe moe;                   // Nemotron-H's 'E' layers, DeepSeek's MoE layers
    MlaParts mla;                     // deepseek
    GptOssParts gpt_oss;              // gpt_oss
    Gemma3Parts gemma3;               // gemma3_text
    // deepseek: the multi-token prediction layers the folder holds (num_nextn_predict_layers
    // of them as model.layers.<num_layers + k>; 0 when its weights leave them out, as
    // transformers' own saves do): Megatron's --mtp-num-layers.
    int64_t mtp_layers = 0;
};

// The args entry naming the Hugging Face model_type a checkpoint came from ("mistral"), which
// Megatron's args cannot tell from Llama's; hf_checkpoint_args records it, the saver reads it.
inline constexpr const char* kHfModelTypeArg = "hf_model_type";

// Reads dir/config.json (and, for a BERT, which heads the weight files hold). mt::Error naming
// the file and key for anything missing or malformed, and "not supported yet: ..." naming the
// key for models this converter does not map (rope scaling other than llama3's and linear, an
// active sliding window, attention or MLP biases in Llama, a BERT without the masked-LM head or
// with a tanh GeLU, other model_types).
HfConfig read_hf_config(const std::filesystem::path& dir);

// The Megatron flags of that model (dropout off, vocabulary unpadded, seq-length the maximum
// positions); a caller may override seq-length, dropout or --transformer-impl. BERT: the bert
// family's flags (--no-bias-gelu-fusion: the erf GeLU; --bert-no-binary-head without the binary
// head; --num-tokentypes the token types; --apply-residual-connection-post-layernorm for
// model_type bert).
ModelArgs hf_model_args(const HfConfig& config);

// The same as the args Namespace a Megatron checkpoint stores (Megatron's names and Python
// values: "num_layers" 4, "swiglu" True, "add_bias_linear" False, ...) plus padded_vocab_size,
// so tools build the model from the folder alone.
CheckpointArgs hf_checkpoint_args(const HfConfig& config);

// The inverse, for saving: the Hugging Face model that Megatron args describe (Megatron's
// defaults for absent entries). GPT-2: learned absolute positions, LayerNorm, tanh GeLU, linear
// biases, tied embeddings; Llama (Mistral when kHfModelTypeArg says so): rope, RMSNorm, SwiGLU,
// no biases; with `bert` (a BERT's parts, from its tensors): megatron-bert (bert when
// post-LayerNorm), learned absolute positions, LayerNorm, the erf GeLU, linear biases.
// vocab_size is left 0 (the caller knows the table). Anything else is an mt::Error "not
// supported yet: <field>=<value> in --saver hf (...)".
HfConfig hf_config_from_args(const CheckpointArgs& args, const std::optional<BertParts>& bert);

}  // namespace mt::plugins::hf
