// The tiny models the GPT family's tests build (GPT-2, Llama, Gemma 3 and DeepSeek MLA layers
// at a few dozen parameters a matrix) as Megatron flags, and a flag changed on one.
#pragma once

#include <string>

#include "mt/model.h"

namespace mt::plugins::gpt {

inline ModelArgs gpt2_args() {
    return {{"num-layers", "2"},
            {"hidden-size", "16"},
            {"num-attention-heads", "4"},
            {"seq-length", "8"},
            {"max-position-embeddings", "8"},
            {"vocab-size", "50"},
            {"make-vocab-size-divisible-by", "16"}};
}

inline ModelArgs llama_args() {
    ModelArgs a = gpt2_args();
    a["normalization"] = "RMSNorm";
    a["position-embedding-type"] = "rope";
    a["swiglu"] = "";
    a["ffn-hidden-size"] = "24";
    a["group-query-attention"] = "";
    a["num-query-groups"] = "2";
    a["disable-bias-linear"] = "";
    a["untie-embeddings-and-output-weights"] = "";
    return a;
}

// Gemma 3's layers (--geglu --post-sublayer-norm --scale-embeddings, zero-centred RMSNorm, q/k
// norms, a window on the first layer with its own rope base, a softmax scale of its own) on
// Llama's, with GeGLU for SwiGLU and tied embeddings.
inline ModelArgs gemma_args() {
    ModelArgs a = llama_args();
    a.erase("swiglu");
    a.erase("untie-embeddings-and-output-weights");
    for (auto [k, v] : {std::pair{"num-layers", "3"},
                        {"apply-layernorm-1p", ""},
                        {"rotary-base", "1000000"},
                        {"rotary-base-local", "10000"},
                        {"window-size", "(2, 0)"},
                        {"window-attn-skip-freq", "[1,0,1]"},
                        {"geglu", ""},
                        {"post-sublayer-norm", ""},
                        {"scale-embeddings", ""},
                        {"qk-layernorm", ""},
                        {"softmax-scale", "0.4"}})
        a[k] = v;
    return a;
}

inline ModelArgs mla_args() {
    ModelArgs a = llama_args();
    a.erase("group-query-attention");
    a.erase("num-query-groups");
    for (auto [k, v] : {std::pair{"multi-latent-attention", ""},
                        {"q-lora-rank", "6"},
                        {"kv-lora-rank", "5"},
                        {"qk-head-dim", "4"},
                        {"qk-pos-emb-head-dim", "4"},
                        {"v-head-dim", "3"},
                        {"qk-layernorm", ""},
                        {"rotary-scaling-factor", "4"},
                        {"mscale", "0.9"},
                        {"mscale-all-dim", "0.7"},
                        {"max-position-embeddings", "32"}})
        a[k] = v;
    return a;
}

inline ModelArgs with(ModelArgs a, const std::string& key, const std::string& value) {
    a[key] = value;
    return a;
}

}  // namespace mt::plugins::gpt
