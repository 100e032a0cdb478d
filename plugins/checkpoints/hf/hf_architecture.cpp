#include "hf_architecture.h"

#include <algorithm>
#include <sstream>

#include "mt/error.h"

namespace mt::plugins::hf {

void HfArchitecture::unsupported(const char* what) const {
    MT_FAIL("not supported yet: ", what, " of a ", model_types().front(), " model");
}

void HfArchitecture::add_model_args(const HfConfig&, ModelArgs&) const {
    unsupported("Megatron flags");
}

void HfArchitecture::import_tensors(HfImport&) const {
    unsupported("the weights");
}

void HfArchitecture::export_tensors(HfExport&) const {
    unsupported("--saver hf");
}

json::Members HfArchitecture::config_members(const HfConfig&) const {
    unsupported("config.json");
}

bool HfArchitecture::exports(const SaverArgs&, const std::optional<BertParts>&) const {
    return false;
}

HfConfig HfArchitecture::config_from_args(const SaverArgs&, const std::optional<BertParts>&) const {
    unsupported("--saver hf");
}

const std::vector<const HfArchitecture*>& hf_architectures() {
    // Mamba models, multi-latent attention and Gemma first: their args also say rope or learned
    // positions, which the GPT-2 and Llama families would otherwise claim.
    static const std::vector<const HfArchitecture*> kAll = {
        &hybrid_architecture(), &deepseek_architecture(), &bert_architecture(),
        &gpt2_architecture(),   &gpt_oss_architecture(),  &gemma3_architecture(),
        &llama_architecture(),  &t5_architecture()};
    return kAll;
}

const HfArchitecture* hf_architecture_of(const std::string& type) {
    for (const HfArchitecture* arch : hf_architectures()) {
        const std::vector<std::string> types = arch->model_types();
        if (std::find(types.begin(), types.end(), type) != types.end()) return arch;
    }
    return nullptr;
}

std::string number_text(double v) {
    std::ostringstream s;
    s.precision(17);
    s << v;
    return s.str();
}

}  // namespace mt::plugins::hf
