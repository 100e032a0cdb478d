// A model's pipeline stage: the layers a rank builds, whether it holds the embedding (the first
// stage) and the loss (the last), and the word embeddings tied across those two stages, as
// Megatron-core's LanguageModule sets them up. Shared by the families that pipeline.
#pragma once

#include <cstdint>
#include <vector>

#include "mt/api.h"
#include "mt/communicator.h"
#include "mt/model.h"
#include "mt/parallel/pipeline_layers.h"

namespace mt {

struct ModelStage {
    bool first = true, last = true;
    parallel::StageLayers layers;
};

// This rank's stage (and model chunk context.virtual_stage) of a model of `num_layers` layers,
// split as the run's ParallelConfig says.
MT_API ModelStage model_stage(int64_t num_layers, const BuildContext& context);

// Word embeddings shared by the first pipeline stage and the last (pass null for the one this
// stage lacks): the first stage's, or the last stage's copy of them (its tied output layer's
// weight, or with multi-token prediction its own embedding's), is marked tied across stages, the
// copy also as one of "embedding.word_embeddings.weight" (Megatron's shared weight).
MT_API void tie_across_stages(nn::Parameter* word_embedding, nn::Parameter* last_stage_copy);

// Megatron's setup_embeddings_and_output_layer: the last stage's copy of tied word embeddings
// zeroed, then summed with the first stage's over the embedding group (a collective of both
// stages; nothing when no parameter of `params` is tied across stages).
MT_API void sync_tied_embeddings(const std::vector<nn::Parameter*>& params,
                                 Communicator* embedding_group, Backend& backend);

}  // namespace mt
