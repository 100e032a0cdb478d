#include "mt/model_chunks.h"

#include "mt/error.h"
#include "mt/parallel/parallel_state.h"

namespace mt {

ModelChunks::ModelChunks(std::vector<std::unique_ptr<Model>> chunks) : chunks_(std::move(chunks)) {
    MT_CHECK(!chunks_.empty(), "ModelChunks: no model chunks");
}

namespace {

// Every chunk's list (its parameters or buffers), chunk 0's first.
std::vector<nn::Parameter*> joined(const std::vector<std::unique_ptr<Model>>& chunks,
                                   std::vector<nn::Parameter*> (Model::*list)()) {
    std::vector<nn::Parameter*> out;
    for (const auto& chunk : chunks) {
        std::vector<nn::Parameter*> own = (chunk.get()->*list)();
        out.insert(out.end(), own.begin(), own.end());
    }
    return out;
}

}  // namespace

std::vector<nn::Parameter*> ModelChunks::parameters() {
    return joined(chunks_, &Model::parameters);
}

std::vector<nn::Parameter*> ModelChunks::buffers() {
    return joined(chunks_, &Model::buffers);
}

void ModelChunks::initialize(uint64_t seed) {
    for (auto& chunk : chunks_) chunk->initialize(seed);
}

Losses ModelChunks::forward(const Batch&, nn::DropoutContext&, std::unique_ptr<Activations>*) {
    MT_FAIL("a model in ", chunks_.size(),
            " virtual pipeline chunks runs through the interleaved schedule, chunk by chunk");
}

void ModelChunks::backward(const std::vector<Tensor>&, const Activations&) {
    MT_FAIL("a model in ", chunks_.size(),
            " virtual pipeline chunks runs through the interleaved schedule, chunk by chunk");
}

void ModelChunks::set_grad_ready_hook(GradReadyHook hook) {
    for (auto& chunk : chunks_) chunk->set_grad_ready_hook(hook);
}

StageTensor ModelChunks::stage_tensor(int64_t micro_batch_size, int64_t seq_length) const {
    return chunks_.front()->stage_tensor(micro_batch_size, seq_length);
}

double ModelChunks::training_flops(int64_t samples) const {
    return chunks_.front()->training_flops(samples);
}

std::vector<Model*> ModelChunks::pipeline_chunks() {
    std::vector<Model*> out;
    for (auto& chunk : chunks_) out.push_back(chunk.get());
    return out;
}

std::unique_ptr<Model> build_stage_model(const ModelFamily& family, const ModelArgs& args,
                                         const BuildContext& context) {
    const int chunks = context.parallel.config().virtual_stages;
    if (chunks <= 1) return family.build(args, context);
    MT_CHECK(context.parallel.pp().size() > 1,
             "virtual pipeline stages need --pipeline-model-parallel-size > 1");
    std::vector<std::unique_ptr<Model>> built;
    for (int c = 0; c < chunks; ++c) {
        BuildContext chunk = context;
        chunk.virtual_stage = c;
        built.push_back(family.build(args, chunk));
    }
    return std::make_unique<ModelChunks>(std::move(built));
}

}  // namespace mt
