// ParallelState: the process groups of one rank, as Megatron-core's parallel_state builds them
// (tp, cp, dp, dp-cp, pp, model-parallel, embedding, and the expert groups), but as an explicit
// object instead of module globals. Ranks are laid out in Megatron's order (tp-cp-ep-dp-pp, or
// tp-cp-ep-pp-dp with --use-tp-pp-dp-mapping; the expert groups lay etp, ep, expert dp and pp out
// in the same order).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/communicator.h"

namespace mt::parallel {

struct ParallelConfig {
    int tensor_parallel = 1;         // --tensor-model-parallel-size
    int pipeline_parallel = 1;       // --pipeline-model-parallel-size
    int context_parallel = 1;        // --context-parallel-size
    int expert_parallel = 1;         // --expert-model-parallel-size
    int expert_tensor_parallel = 0;  // --expert-tensor-parallel-size; 0: tensor_parallel
    bool tp_pp_dp_mapping = false;   // --use-tp-pp-dp-mapping
    // How the layers split over the pipeline stages (mt/parallel/pipeline_layers.h).
    int64_t first_stage_layers = -1;     // --decoder-first-pipeline-num-layers (-1: unset)
    int64_t last_stage_layers = -1;      // --decoder-last-pipeline-num-layers (-1: unset)
    bool account_for_embedding = false;  // --account-for-embedding-in-pipeline-split
    bool account_for_loss = false;       // --account-for-loss-in-pipeline-split
    // Model chunks per pipeline stage (virtual_pipeline_model_parallel_size; >1: the
    // interleaved schedule) and the micro-batches each chunk runs in a row there
    // (--microbatch-group-size-per-virtual-pipeline-stage; 0: the pipeline size).
    int virtual_stages = 1;
    int64_t microbatch_group_size = 0;
    // A hybrid pattern's '|' segments (PipelineSplit::segments); empty: none.
    std::vector<int64_t> segments;
};

// The global ranks of every group of one kind, as Megatron's RankGenerator.get_ranks(token)
// lists them: `order` is a dash-separated list of dimension names (first varies fastest in the
// global rank), `sizes` their sizes in that order, `token` the dash-separated dimensions that
// vary within one group. Groups come in Megatron's order; ranks within a group too.
MT_API std::vector<std::vector<int>> rank_groups(const std::vector<std::string>& order,
                                                 const std::vector<int>& sizes,
                                                 const std::string& token);

// The kinds of group a ParallelState holds (Megatron's token in a comment where it has one).
enum class Group : uint8_t {
    tp,              // "tp"
    cp,              // "cp"
    dp,              // "dp"
    dp_cp,           // "dp-cp"
    pp,              // "pp"
    model_parallel,  // "tp-pp"
    tp_cp,           // "tp-cp"
    embedding,       // first and last rank of each "pp" group
    expert_tp,       // "tp" of the expert generator
    ep,              // "ep"
    expert_dp,       // "dp" of the expert generator
    expert_tp_ep,    // "tp-ep"
};
inline constexpr int kNumGroups = 12;

class MT_API ParallelState {
  public:
    // Splits `world` into every group (collective over world). World size must be a multiple of
    // tp·pp·cp (the rest is data parallel) and of etp·ep·pp; mt::Error names the sizes otherwise.
    ParallelState(std::unique_ptr<Communicator> world, const ParallelConfig& config);
    ~ParallelState();
    ParallelState(const ParallelState&) = delete;
    ParallelState& operator=(const ParallelState&) = delete;

    // One process, every group of size 1 (local communicators).
    static std::unique_ptr<ParallelState> single_process();

    // As given, with expert_tensor_parallel 0 resolved to tensor_parallel.
    const ParallelConfig& config() const { return config_; }
    Communicator& world() const { return *world_; }
    Communicator& tp() const { return *tp_; }
    Communicator& cp() const { return *cp_; }
    Communicator& dp() const { return *dp_; }        // data parallel, without cp
    Communicator& dp_cp() const { return *dp_cp_; }  // data and context parallel together
    Communicator& pp() const { return *pp_; }
    Communicator& model_parallel() const { return *mp_; }  // tp and pp together
    Communicator& tp_cp() const { return *tp_cp_; }
    // First and last pipeline stage of this rank's pipeline (tied word embeddings); null on the
    // ranks of the other stages. With one stage: the rank alone.
    Communicator* embedding() const { return embedding_.get(); }
    // Expert groups (the MoE layers): expert tensor parallel, expert model parallel, expert data
    // parallel, and expert tensor and model parallel together.
    Communicator& expert_tp() const { return *etp_; }
    Communicator& ep() const { return *ep_; }
    Communicator& expert_dp() const { return *edp_; }
    Communicator& expert_tp_ep() const { return *etp_ep_; }
    // The groups a parameter is cut over and its gradient summed over: an MoE expert's
    // (expert_tp, expert_dp) or a dense one's (tp, dp_cp).
    Communicator& tp_of(bool expert) const { return expert ? expert_tp() : tp(); }
    Communicator& dp_of(bool expert) const { return expert ? expert_dp() : dp_cp(); }

    // The communicator of this rank's group of that kind (null: the embedding group on the ranks
    // outside it).
    Communicator* group(Group g) const;
    // The global ranks of this rank's group of that kind, in group-rank order (the rank at index
    // i has rank i in the communicator); empty for the embedding group on the ranks outside it.
    const std::vector<int>& global_ranks(Group g) const { return ranks_[static_cast<size_t>(g)]; }

    bool is_first_stage() const { return pp_->rank() == 0; }
    bool is_last_stage() const { return pp_->rank() == pp_->size() - 1; }

  private:
    ParallelState() = default;

    ParallelConfig config_;
    std::unique_ptr<Communicator> world_, tp_, cp_, dp_, dp_cp_, pp_, mp_, tp_cp_, embedding_, etp_,
        ep_, edp_, etp_ep_;
    std::array<std::vector<int>, kNumGroups> ranks_;
};

}  // namespace mt::parallel
