// T5 folders (T5ForConditionalGeneration, mT5, umT5), read only to be refused by name.
#include "hf_architecture.h"
#include "hf_config_reader.h"

namespace mt::plugins::hf {

namespace {

// transformers' T5ForConditionalGeneration (and mT5, umT5) is not Megatron's T5Model: besides an
// RMSNorm without bias, unscaled attention and a tied head scaled by 1/sqrt(d_model), which a
// Megatron T5 could be given (--normalization RMSNorm, weights folded), its MLP and its position
// encoding have no Megatron T5 configuration here. The folder is refused naming the first of
// those fields, rather than loaded as a different model.
[[noreturn]] void refuse_t5(const ConfigJson& j) {
    const std::string& where = j.where();
    const std::string mlp = j.text("feed_forward_proj", "relu");
    MT_CHECK(mlp == "gelu", where, ": not supported: 'feed_forward_proj' '",
             mlp.size() > 64 ? mlp.substr(0, 64) + "..." : mlp,
             "' (Megatron's T5 MLP is fc1, GeLU, fc2: it has no ReLU or gated-GeLU T5 "
             "configuration, so this model does not map onto a Megatron T5)");
    MT_FAIL(where, ": not supported yet: 'relative_attention_num_buckets' ",
            j.integer("relative_attention_num_buckets", 32),
            " (T5's relative position buckets: megatron-core's --position-embedding-type "
            "relative)");
}

class T5 final : public HfArchitecture {
  public:
    std::vector<std::string> model_types() const override { return {"t5", "mt5", "umt5"}; }
    void read_config(const ConfigJson& j, const std::filesystem::path&, HfConfig&) const override {
        refuse_t5(j);
    }
    bool supported() const override { return false; }
};

}  // namespace

const HfArchitecture& t5_architecture() {
    static const T5 kT5;
    return kT5;
}

}  // namespace mt::plugins::hf
