// Model's inference entry points for families that have none yet, the one-process build
// context, and the state-dict order of parameters and buffers.
#include "mt/model.h"

#include "mt/backend.h"
#include "mt/error.h"
#include "mt/nn/inference_state.h"
#include "mt/nn/parameter.h"
#include "mt/parallel/parallel_state.h"
#include "shape_only_backend.h"

namespace mt {

const BuildContext& single_process_context() {
    static const std::unique_ptr<Backend> backend = make_cpu_backend();
    static const std::unique_ptr<parallel::ParallelState> state =
        parallel::ParallelState::single_process();
    static const BuildContext context{*backend, *state};
    return context;
}

const Tensor& batch_entry(const Batch& batch, std::string_view key, std::string_view model) {
    auto it = batch.find(key);
    MT_CHECK(it != batch.end(), model, ": the batch has no \"", key, "\"");
    return it->second;
}

const LossTerm& loss_term(const Losses& losses, std::string_view name) {
    std::string names;
    for (const LossTerm& t : losses) {
        if (t.name == name) return t;
        names += (names.empty() ? "" : ", ") + t.name;
    }
    MT_FAIL("the model reports no loss \"", name, "\" (its losses: ", names, ")");
}

std::array<std::shared_ptr<data::SampleDataset>, 3> ModelFamily::datasets(
    const data::DatasetRequest&) const {
    MT_FAIL("not supported yet: training data for the ", name(), " model family");
}

size_t buffer_slot(size_t count, const std::function<const std::string&(size_t)>& name,
                   std::string_view buffer) {
    const size_t dot = buffer.rfind('.');
    const std::string_view module = buffer.substr(0, dot == std::string_view::npos ? 0 : dot + 1);
    for (size_t i = count; i > 0; --i)
        if (!module.empty() && name(i - 1).starts_with(module)) return i;
    return count;
}

std::vector<nn::Parameter*> state_tensors(Model& model) {
    std::vector<nn::Parameter*> out = model.parameters();
    for (nn::Parameter* b : model.buffers()) {
        const size_t at = buffer_slot(
            out.size(), [&](size_t i) -> const std::string& { return out[i]->name; }, b->name);
        out.insert(out.begin() + std::ptrdiff_t(at), b);
    }
    return out;
}

std::vector<ParameterInfo> ModelFamily::parameters(const ModelArgs& args) const {
    // Built on a backend that allocates nothing: listing a model costs no memory of its size.
    static ShapeOnlyBackend shapes;
    const BuildContext context{shapes, single_process_context().parallel};
    const std::unique_ptr<Model> model =
        build(args, context);  // alive while its parameters are read
    std::vector<ParameterInfo> out;
    for (const nn::Parameter* p : state_tensors(*model)) out.push_back(nn::describe(*p));
    return out;
}

Tensor Model::logits(const Tensor&, nn::InferenceState*, int64_t) {
    MT_FAIL("not supported yet: inference (logits) for this model family");
}

Tensor Model::decode_rows(const Tensor&, std::span<nn::InferenceState* const>, int64_t) {
    MT_FAIL("not supported yet: continuous batching (decode_rows) for this model");
}

void Model::encode(const Tensor&, const Tensor&, nn::InferenceState&) {
    MT_FAIL("not supported: encode() on a model without an encoder");
}

Tensor Model::predict(const Batch&) {
    MT_FAIL("not supported yet: task predictions (predict) for this model");
}

StageTensor Model::stage_tensor(int64_t, int64_t) const {
    MT_FAIL("not supported yet: pipeline parallelism for this model family");
}

std::unique_ptr<nn::InferenceState> Model::make_inference_state(int64_t, int64_t) const {
    MT_FAIL("not supported yet: an inference state (KV cache) for this model family");
}

int64_t Model::inference_state_bytes(int64_t batch, int64_t capacity) const {
    return make_inference_state(batch, capacity)->bytes();
}

}  // namespace mt
