#include "mt/model_stage.h"

#include "mt/error.h"
#include "mt/nn/parameter.h"
#include "mt/parallel/parallel_state.h"

namespace mt {

ModelStage model_stage(int64_t num_layers, const BuildContext& context) {
    const parallel::ParallelConfig& pc = context.parallel.config();
    const int stages = context.parallel.pp().size(), stage = context.parallel.pp().rank();
    const int chunks = pc.virtual_stages, chunk = context.virtual_stage;
    const parallel::PipelineSplit split{num_layers,
                                        stages,
                                        pc.first_stage_layers,
                                        pc.last_stage_layers,
                                        pc.account_for_embedding,
                                        pc.account_for_loss,
                                        chunks,
                                        pc.segments};
    return {stage == 0 && chunk == 0, stage == stages - 1 && chunk == chunks - 1,
            parallel::pipeline_stage_layers(split, stage, chunk)};
}

void tie_across_stages(nn::Parameter* word_embedding, nn::Parameter* last_stage_copy) {
    if (word_embedding && !last_stage_copy) word_embedding->tied_across_stages = true;
    if (last_stage_copy && !word_embedding) {
        last_stage_copy->tied_across_stages = true;
        last_stage_copy->copy_of = "embedding.word_embeddings.weight";  // nn::Embedding's
    }
}

void sync_tied_embeddings(const std::vector<nn::Parameter*>& params, Communicator* embedding_group,
                          Backend& backend) {
    nn::Parameter* tied = nullptr;
    for (nn::Parameter* p : params)
        if (p->tied_across_stages) tied = p;
    if (!tied) return;
    MT_CHECK(embedding_group != nullptr,
             "tied embeddings across pipeline stages without an embedding group");
    if (!tied->copy_of.empty()) backend.fill(tied->value, 0.0);
    embedding_group->all_reduce(tied->value, ReduceOp::sum);
}

}  // namespace mt
