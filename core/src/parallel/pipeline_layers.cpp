#include "mt/parallel/pipeline_layers.h"

#include "mt/error.h"

namespace mt::parallel {

StageLayers pipeline_stage_layers(const PipelineSplit& s, int stage) {
    MT_CHECK(s.stages >= 1 && stage >= 0 && stage < s.stages, "pipeline stage ", stage, " of ",
             s.stages);
    if (s.stages == 1) return {0, s.num_layers};
    const bool first_set = s.first_stage_layers >= 0, last_set = s.last_stage_layers >= 0;
    if (first_set || last_set) {
        MT_CHECK(!s.account_for_embedding && !s.account_for_loss,
                 "--decoder-first/last-pipeline-num-layers cannot be combined with "
                 "--account-for-embedding/loss-in-pipeline-split (as in Megatron)");
        const int64_t first = first_set ? s.first_stage_layers : 0;
        const int64_t last = last_set ? s.last_stage_layers : 0;
        const int middle_stages = s.stages - int(first_set) - int(last_set);
        const int64_t middle_layers = s.num_layers - first - last;
        MT_CHECK(middle_layers >= 0, "--num-layers ", s.num_layers,
                 " is fewer than the first and last pipeline stages' layers (", first, " + ", last,
                 ")");
        MT_CHECK(middle_stages == 0 ? middle_layers == 0 : middle_layers % middle_stages == 0,
                 "with uneven pipeline stages the ", middle_layers,
                 " layers left must divide over the ", middle_stages, " other stages");
        const int64_t per_middle = middle_stages > 0 ? middle_layers / middle_stages : 0;
        if (stage == 0 && first_set) return {0, first};
        const int middle_rank = first_set ? stage - 1 : stage;
        const int64_t offset = stage == 0 ? 0 : middle_rank * per_middle + first;
        if (stage == s.stages - 1 && last_set) return {offset, last};
        return {offset, per_middle};
    }
    const int64_t units =
        s.num_layers + int64_t(s.account_for_embedding) + int64_t(s.account_for_loss);
    MT_CHECK(units % s.stages == 0, "--num-layers ", s.num_layers,
             s.account_for_embedding || s.account_for_loss
                 ? " (with the embedding or loss counted as a layer)"
                 : "",
             " must be divisible by --pipeline-model-parallel-size ", s.stages);
    const int64_t per_stage = units / s.stages;
    int64_t offset = stage * per_stage, count = per_stage;
    if (s.account_for_embedding) {
        if (stage == 0)
            --count;
        else
            --offset;
    }
    if (s.account_for_loss && stage == s.stages - 1) --count;
    MT_CHECK(count >= 0, "pipeline stage ", stage, " has no room for its embedding or loss");
    return {offset, count};
}

}  // namespace mt::parallel
