#include "mt/parallel/pipeline_layers.h"

#include <vector>

#include "mt/error.h"

namespace mt::parallel {

namespace {

// Each stage's units: its layers, plus the embedding (first stage) and the loss (last stage)
// where they are counted as layers.
std::vector<int64_t> stage_units(const PipelineSplit& s) {
    const int64_t extra = int64_t(s.account_for_embedding) + int64_t(s.account_for_loss);
    if (s.stages == 1) return {s.num_layers + extra};
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
        std::vector<int64_t> units(size_t(s.stages),
                                   middle_stages > 0 ? middle_layers / middle_stages : 0);
        if (first_set) units.front() = first;
        if (last_set) units.back() = last;
        return units;
    }
    const int64_t units = s.num_layers + extra;
    MT_CHECK(units % s.stages == 0, "--num-layers ", s.num_layers,
             extra ? " (with the embedding or loss counted as a layer)" : "",
             " must be divisible by --pipeline-model-parallel-size ", s.stages);
    return std::vector<int64_t>(size_t(s.stages), units / s.stages);
}

}  // namespace

StageLayers pipeline_stage_layers(const PipelineSplit& s, int stage, int virtual_stage) {
    MT_CHECK(s.stages >= 1 && stage >= 0 && stage < s.stages, "pipeline stage ", stage, " of ",
             s.stages);
    MT_CHECK(s.virtual_stages >= 1 && virtual_stage >= 0 && virtual_stage < s.virtual_stages,
             "virtual pipeline stage ", virtual_stage, " of ", s.virtual_stages);
    if (!s.segments.empty()) {
        MT_CHECK(int64_t(s.segments.size()) == int64_t(s.stages) * s.virtual_stages,
                 "the hybrid layer pattern's ", s.segments.size(),
                 " pipeline segments are not one per model chunk of ", s.stages, " stages x ",
                 s.virtual_stages, " virtual stages");
        MT_CHECK(s.first_stage_layers < 0 && s.last_stage_layers < 0 && !s.account_for_embedding &&
                     !s.account_for_loss,
                 "pipeline segments ('|' in --hybrid-layer-pattern) cannot be combined with "
                 "--decoder-first/last-pipeline-num-layers or "
                 "--account-for-embedding/loss-in-pipeline-split (as in Megatron)");
        const size_t index = size_t(virtual_stage) * size_t(s.stages) + size_t(stage);
        int64_t offset = 0;
        for (size_t i = 0; i < index; ++i) offset += s.segments[i];
        return {offset, s.segments[index]};
    }
    const std::vector<int64_t> units = stage_units(s);
    // The units in order: chunk 0 of every stage, then chunk 1 of every stage, ...
    int64_t round = 0, before = 0;
    for (int r = 0; r < s.stages; ++r) {
        MT_CHECK(units[size_t(r)] % s.virtual_stages == 0, "pipeline stage ", r, "'s ",
                 units[size_t(r)],
                 " layers must be divisible by the virtual pipeline stages per rank (",
                 s.virtual_stages, ")");
        const int64_t chunk = units[size_t(r)] / s.virtual_stages;
        round += chunk;
        if (r < stage) before += chunk;
    }
    int64_t offset = virtual_stage * round + before;
    int64_t count = units[size_t(stage)] / s.virtual_stages;
    const bool first_chunk = stage == 0 && virtual_stage == 0;
    const bool last_chunk = stage == s.stages - 1 && virtual_stage == s.virtual_stages - 1;
    if (s.account_for_embedding) {
        if (first_chunk)
            --count;
        else
            --offset;
    }
    if (s.account_for_loss && last_chunk) --count;
    MT_CHECK(count >= 0, "pipeline stage ", stage, " has no room for its embedding or loss");
    return {offset, count};
}

int virtual_pipeline_size(const PipelineSplit& s, int64_t layers_per_virtual_stage,
                          int64_t virtual_stages) {
    MT_CHECK(layers_per_virtual_stage < 0 || virtual_stages < 0,
             "--num-layers-per-virtual-pipeline-stage and --num-virtual-stages-per-pipeline-rank "
             "cannot both be set (as in Megatron)");
    if (virtual_stages >= 0) {
        MT_CHECK(virtual_stages >= 1, "--num-virtual-stages-per-pipeline-rank must be positive");
        return int(virtual_stages);
    }
    if (layers_per_virtual_stage < 0) return 1;
    MT_CHECK(s.first_stage_layers < 0 && s.last_stage_layers < 0,
             "with --decoder-first/last-pipeline-num-layers give the virtual stages as "
             "--num-virtual-stages-per-pipeline-rank (as in Megatron)");
    MT_CHECK(layers_per_virtual_stage >= 1,
             "--num-layers-per-virtual-pipeline-stage must be positive");
    const int64_t units =
        s.num_layers + int64_t(s.account_for_embedding) + int64_t(s.account_for_loss);
    MT_CHECK(units % s.stages == 0, "number of layers of the model (", units,
             ") must be divisible by --pipeline-model-parallel-size ", s.stages);
    const int64_t per_stage = units / s.stages;
    MT_CHECK(per_stage % layers_per_virtual_stage == 0, "the ", per_stage,
             " layers per pipeline stage must be divisible by "
             "--num-layers-per-virtual-pipeline-stage ",
             layers_per_virtual_stage);
    return int(per_stage / layers_per_virtual_stage);
}

}  // namespace mt::parallel
