// CheckpointFormat interface (torch, torch_dist, hf plugins) and the format-neutral state they
// save and load: model tensors by Megatron-core name, optimizer moments by parameter name, the
// learning-rate schedule, the dropout RNG position, iteration, consumed samples and training args.
// Formats that keep a file per tensor/pipeline rank (torch) also load and save rank by rank.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "mt/api.h"
#include "mt/checkpoint/megatron_rng.h"
#include "mt/tensor.h"

namespace mt {

class Communicator;

struct ShardedTensor {
    Tensor local;         // this rank's piece
    Shape global_shape;   // the full tensor's shape
    Shape global_offset;  // where `local` starts in it

    // A tensor that is its own whole.
    static ShardedTensor whole(const Tensor& t) {
        return ShardedTensor{t, t.shape(), Shape(t.shape().size(), 0)};
    }
};

// One training argument as Megatron's args Namespace holds it (None, bool, int, float, str, a list
// of ints: --moe-layer-freq's pattern, or a list of str: --tiktoken-special-tokens).
using ArgValue = std::variant<std::monostate, bool, int64_t, double, std::string,
                              std::vector<int64_t>, std::vector<std::string>>;
// Megatron's args Namespace: argument names (Megatron's, "num_layers") and values, in order.
using CheckpointArgs = std::vector<std::pair<std::string, ArgValue>>;
// The entry `name` of `args`, or null (mt/checkpoint/checkpoint_args.h has typed look-ups).
MT_API const ArgValue* find_arg(const CheckpointArgs& args, std::string_view name);

// Optimizer state of one parameter (Adam: exp_avg / exp_avg_sq; SGD and Muon: momentum_buffer
// in exp_avg, exp_avg_sq undefined).
struct OptimizerParamState {
    std::string name;  // the parameter's Megatron-core name
    Tensor exp_avg, exp_avg_sq;
    // The f32 master copy of an f16 / bf16 parameter (Megatron's fp32_from_fp16_params);
    // undefined in an f32 run.
    Tensor main_param;
    bool weight_decay = true;   // Megatron's wd_mult 1 group, else wd_mult 0
    bool decoupled_lr = false;  // in a group of --decoupled-lr (is_decoupled_lr)
    // Megatron's is_expert_parallel: an MoE expert's weight in a run with expert parallelism
    // (EP > 1), which Megatron updates with an optimizer of its own, chained after the dense one.
    bool expert_parallel = false;
    // With --optimizer muon: a parameter Muon updates (else Adam, chained after Muon's).
    bool muon = false;
    // A parameter muP moves to a learning rate (and Adam eps) of its own: Megatron's group of
    // the muP overrides (OptimizerCheckpoint::mup_width_mult).
    bool mup = false;
};

// A box of a whole tensor: elements [offset, offset + size) in every dimension.
struct ShardBox {
    Shape offset, size;
};

// The distributed optimizer's own range of one parameter, for formats whose ranks write the
// shards they keep (torch_dist's fully_sharded_model_space): elements [begin, end) of this
// rank's tensor-parallel piece of the parameter, flattened. The piece lies in the whole
// parameter as `boxes` say (mt/checkpoint/reshard.h shard_boxes), in the piece's order.
struct OptimizerShard {
    std::string name;  // the parameter's Megatron-core name
    Shape global_shape;
    std::vector<ShardBox> boxes;
    int64_t begin = 0, end = 0;
    Tensor main_param, exp_avg, exp_avg_sq;  // f32 [end - begin]
    bool expert_parallel = false;            // as OptimizerParamState's
};

// The loss scaler of fp16 training (Megatron's grad_scaler state): a dynamic one's scale and
// trackers; a constant one (--loss-scale) saves an empty dict.
struct GradScalerCheckpoint {
    bool dynamic = true;
    float scale = 1.0f;
    int64_t growth_tracker = 0, hysteresis_tracker = 0;
};

// The layouts of Megatron's distributed optimizer's state in torch_dist (OptimizerCheckpoint's
// layout).
enum class DistributedOptimizerLayout {
    none,
    fully_sharded_model_space,
    fully_reshardable,
    dp_reshardable
};

// Where one rank stands in core_v0.19's dp_reshardable layout, per buffer part (the dense
// parameters', and under expert parallelism the experts' chained optimizer): Megatron's
// data_parallel_group_idx (its rank in the model-parallel group the part is cut over: tp + TP pp,
// or for the experts etp + ETP (ep + EP pp)) and its rank among the part's data-parallel ranks,
// which each write their range of every bucket.
struct BucketShare {
    struct Part {
        int64_t group = 0, dp_rank = 0, dp_size = 1;
        // Of the first distributed-optimizer instance (the others hold copies, not written).
        bool main = true;
    };
    Part dense, experts;
    // This rank's piece of each parameter OptimizerCheckpoint::params names (tensor-parallel,
    // as the rank holds it), in that order.
    std::vector<Tensor> values;
};

struct OptimizerCheckpoint {
    // "adam" | "sgd" | "muon" (core_v0.19's: Muon's parameters and Adam's, chained).
    std::string type = "adam";
    int64_t step = 0;                 // updates taken (torch keeps it per parameter)
    double lr = 0, weight_decay = 0;  // what the schedule gives now (param_groups' lr, wd)
    double max_lr = 0, min_lr = 0;
    // The decoupled groups' (--decoupled-lr) learning rate now and schedule peak and floor.
    double decoupled_lr = 0, decoupled_max_lr = 0, decoupled_min_lr = 0;
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, momentum = 0.9;
    // core_v0.19's muP width multiplier (1: none): the muP group's max and min lr are the
    // others' times 1 / it (Adam, with eps times 1 / it) or times it (SGD), its lr mup_lr.
    double mup_width_mult = 1.0, mup_lr = 0;
    std::vector<OptimizerParamState> params;          // in the model's parameter order
    std::optional<GradScalerCheckpoint> grad_scaler;  // fp16, or --loss-scale with bf16

    // Whether the parameters carry f32 master copies (a bf16 / fp16 run's optimizer).
    bool has_master_weights() const { return !params.empty() && params[0].main_param.defined(); }
    // Saving with the distributed optimizer's shards kept where they are: this rank's ranges,
    // whose moments then stand for params' (which name the parameters and groups, their
    // moments undefined). Empty otherwise, and always when loaded.
    std::vector<OptimizerShard> shards;
    // The parts of Megatron's ChainedOptimizer over the whole model (bit k: part k, as
    // chain_part numbers them), which every rank keys alike although a rank may save none of
    // a part's parameters; 0: the parts of `params`.
    uint8_t chain_parts = 0;
    // Megatron's layer-wise distributed optimizer (Muon with --use-distributed-optimizer):
    // torch_dist keys each chained part's state behind "chained_<i>." as core_v0.19 does for a
    // distributed optimizer (its other chained optimizers' keys are plain).
    bool layer_wise = false;
    // How torch_dist keeps Megatron's distributed optimizer's state (its content metadata's
    // distrib_optim_sharding_type): saved as `layout` says, and read from what the checkpoint
    // says (none: another optimizer, or another format).
    //   fully_sharded_model_space (core_v0.13's default): each rank's ranges, in `shards`.
    //   fully_reshardable (core_v0.19 with --dist-ckpt-optim-fully-reshardable): params hold
    //     each parameter's whole state, as a plain optimizer's, box for box with the model's, and
    //     torch_dist keys its f32 values (the masters, or an f32 run's weights) as "param".
    //   dp_reshardable (core_v0.19's default): the gradient buffers' state bucket by bucket;
    //     saving, `buckets` says where this rank stands.
    DistributedOptimizerLayout layout = DistributedOptimizerLayout::none;
    // Saving in dp_reshardable: params hold, per parameter this rank holds a piece of (a last
    // pipeline stage's copy of tied word embeddings too, under its own name), the piece's
    // whole state gathered over the data-parallel group, in the model's order.
    std::optional<BucketShare> buckets;
    // Kept as core_v0.19 keeps it: param groups sorted by their overrides, with default_config,
    // --decoupled-lr's keyed by its max and min lr alone (is_decoupled_lr False), chained parts'
    // state keyed plainly. Read: the saved groups carry default_config. (kept_as_core_v0_19 adds
    // what only core_v0.19 has.)
    bool core_v0_19 = false;
};

// Whether `o` is kept as core_v0.19 keeps an optimizer: asked to, or Muon's (chained parts 0
// and 1 are its), muP's or in one of core_v0.19's distributed-optimizer layouts.
inline bool kept_as_core_v0_19(const OptimizerCheckpoint& o) {
    return o.core_v0_19 || o.type == "muon" || (o.chain_parts & 0b11) != 0 ||
           o.mup_width_mult != 1.0 || o.layout == DistributedOptimizerLayout::fully_reshardable ||
           o.layout == DistributedOptimizerLayout::dp_reshardable;
}

// The ChainedOptimizer part of a parameter of an optimizer of `type`: Muon's (0 dense, 1 the
// experts under expert parallelism) before Adam's, or the one optimizer's (2 dense, 3 experts).
inline int chain_part(const std::string& type, const OptimizerParamState& p) {
    return (type == "muon" && p.muon ? 0 : 2) + (p.expert_parallel ? 1 : 0);
}

// Megatron's OptimizerParamScheduler.state_dict() (WSD settings are not stored, as in Megatron).
struct SchedulerCheckpoint {
    double max_lr = 0, min_lr = 0;
    double lr_warmup_steps = 0;
    int64_t num_steps = 0, lr_decay_steps = 0;
    std::string lr_decay_style = "linear";  // Megatron's flag spelling
    double start_wd = 0, end_wd = 0;
    int64_t wd_incr_steps = 0;
    std::string wd_incr_style = "constant";
    // Megatron-DeepSpeed's token-based schedule (saved only when it counts tokens): the tokens
    // of the last step and the warmup and decay in tokens (None: counted in samples).
    struct Tokens {
        int64_t num_tokens = 0;
        std::optional<int64_t> lr_warmup_tokens, lr_decay_tokens;
    };
    std::optional<Tokens> tokens;
};

// megatron-train's dropout stream: Philox seed and next unused counter.
// megatron-train's dropout stream, which formats keep beside the states Megatron's own seeding
// leaves on the saving rank (mt/checkpoint/megatron_rng.h), so that Megatron resumes the
// checkpoint without --no-load-rng.
struct RngCheckpoint {
    uint64_t dropout_seed = 0, dropout_offset = 0;
    // Where the saving rank stands (a share's; a format writing a whole state's per-rank files
    // places each file's own).
    MegatronRngRank megatron_rank;
};

struct CheckpointState {
    int64_t iteration = 0;
    int64_t consumed_train_samples = 0, consumed_valid_samples = 0;
    double num_floating_point_operations_so_far = 0;
    // The training args in Megatron's names ("num_layers", "params_dtype" as "float32", ...).
    CheckpointArgs args;
    // State-dict order. A pipeline stage's state with virtual stages (Megatron's torch files:
    // model0, model1, ...) puts its chunk's key in front of each name: "model1.decoder...".
    std::vector<std::pair<std::string, ShardedTensor>> model;
    // Keys a Megatron state dict repeats a model entry under, (key, the entry's name): T5Model
    // holds its position embeddings and output layer twice (nn::Parameter::aliases). Writers
    // write the entry's tensor under each; readers need not fill it.
    std::vector<std::pair<std::string, std::string>> model_aliases;
    std::optional<OptimizerCheckpoint> optimizer;  // absent: --no-save-optim
    // Why the checkpoint's optimizer state was left out although it has one (a layout not
    // supported yet, e.g. the distributed optimizer's); empty otherwise. The model still loads
    // (generation, conversion); resuming training with the optimizer reports this.
    std::string optimizer_not_loaded;
    std::optional<SchedulerCheckpoint> scheduler;
    std::optional<RngCheckpoint> rng;  // absent: --no-save-rng or not in the file

    const ArgValue* find_arg(std::string_view name) const { return mt::find_arg(args, name); }
};

// The model-parallel layout a checkpoint was saved with.
struct CheckpointLayout {
    int64_t tensor_parallel = 1, pipeline_parallel = 1;
    // Megatron's torch format writes each (tensor, pipeline) rank's state as one file per
    // expert-parallel rank, each with its own experts; other formats and the rank functions do
    // not split by it.
    int64_t expert_parallel = 1;
    int64_t ranks() const { return tensor_parallel * pipeline_parallel; }
};

// The state of one (tensor rank, pipeline stage) of a checkpoint being saved; called once per
// rank, so a caller can build each rank's shards when they are written.
using RankStateFn = std::function<CheckpointState(int64_t tp_rank, int64_t pp_rank)>;

// One rank of a checkpoint whose model tensors are made only as they are written (a streaming
// save: megatron-convert holds one tensor at a time, not the model). `state`'s model tensors are
// placeholders (tensor_placeholder: name, shape, dtype and place, no values); make(i) gives
// state.model[i]'s values, contiguous, in the placeholder's shape and dtype (it may view memory
// it does not own, read-only, and may be called again for the same i).
struct StreamedState {
    CheckpointState state;
    std::function<Tensor(size_t index)> make;
};
using StreamedStateFn = std::function<StreamedState(int64_t tp_rank, int64_t pp_rank)>;

// A tensor of `shape` and `dtype` without memory (its storage's data is null): a streamed
// state's stand-in for a tensor made later. Reading its values is a bug.
inline Tensor tensor_placeholder(const Shape& shape, DType dtype) {
    return Tensor::from_blob(nullptr, shape, dtype);
}

// `s`'s state with every model tensor made (load() of a format that streams its loads).
MT_API CheckpointState made_state(StreamedState s);

class MT_API CheckpointFormat {
  public:
    virtual ~CheckpointFormat() = default;
    virtual std::string_view name() const = 0;  // "torch", "torch_dist", "hf"
    // True when `dir` (a --save/--load directory) holds a checkpoint this format can read.
    virtual bool detect(const std::filesystem::path& dir) const = 0;
    // Where detection tries this format, lowest first: a Megatron checkpoint directory may also
    // hold another export (a Hugging Face folder beside it), and Megatron's own formats win.
    enum class DetectionOrder : uint8_t { megatron_distributed, megatron_per_rank, other };
    virtual DetectionOrder detection_order() const { return DetectionOrder::other; }
    // Writes state.iteration's checkpoint under `dir` and makes it the latest; a crash midway
    // leaves the previous latest checkpoint usable.
    virtual void save(const std::filesystem::path& dir, const CheckpointState& state) = 0;
    // Reads the latest checkpoint of `dir`. Tensors may view the file (read-only).
    virtual CheckpointState load(const std::filesystem::path& dir) = 0;
    // load() with the model tensors made only when asked for (a streaming conversion holds one
    // at a time): state.model's tensors may be placeholders (tensor_placeholder: the shape and
    // dtype load() gives) and make(i) gives tensor i's values as load() would, read-only, each
    // call anew. A format that converts as it reads (hf, llama_meta) overrides it; the default
    // is load(), whose tensors make(i) returns.
    virtual StreamedState load_streamed(const std::filesystem::path& dir);
    // The args of the latest checkpoint of `dir`, reading as little as the format allows (the
    // default reads load_streamed's state).
    virtual CheckpointArgs load_args(const std::filesystem::path& dir);

    // Rank-aware access. A format whose checkpoints hold whole tensors whatever layout saved
    // them (torch_dist as read here, hf) keeps these defaults: not per rank, layout 1x1, rank
    // (0, 0) is load(), and only a 1x1 save. A per-rank format (torch) overrides all four.

    // True when each (tensor rank, pipeline stage) has its own files holding its shards.
    virtual bool per_rank_files() const { return false; }
    // The layout of the latest checkpoint in `dir`: how many tensor ranks and pipeline stages
    // have their own state (rank files).
    virtual CheckpointLayout layout(const std::filesystem::path& dir) {
        (void)dir;
        return {};
    }
    // Reads one rank's state of the latest checkpoint: model tensors are that rank's pieces
    // under that stage's names (layers numbered from 0 on each stage), each ShardedTensor's
    // global_shape its own (the files do not say how it was split; mt/checkpoint/reshard.h
    // joins pieces by the model's ShardSpecs).
    virtual CheckpointState load_rank(const std::filesystem::path& dir, int64_t tp_rank,
                                      int64_t pp_rank);
    // Writes every rank of `layout` (rank_state(tp, pp) gives each rank's state; all share one
    // iteration) as one checkpoint and makes it the latest, atomically as save() does.
    virtual void save_ranks(const std::filesystem::path& dir, const CheckpointLayout& layout,
                            const RankStateFn& rank_state);
    // save_ranks with each model tensor made (StreamedState::make) only when it is written: a
    // format that writes tensor by tensor (torch: every rank's file at once, in step, so that
    // the ranks' pieces of one tensor are made together; torch_dist) then holds about one
    // tensor, not the model. The default makes every tensor of a rank and calls save_ranks.
    virtual void save_streamed(const std::filesystem::path& dir, const CheckpointLayout& layout,
                               const StreamedStateFn& rank_state);

    // Saving from pipeline stages, for a per-rank format (torch's mp_rank_TT_PPP files):
    // collective over `world`, every rank calls it; each stage of `layout` has one writer, which
    // writes the rank files of its stage `stage` (rank_state(tp) gives each tensor rank's state,
    // its keys the stage's own: layers from 0 in their chunk, "model<c>." in front with virtual
    // stages), and rank 0 (a writer) makes the checkpoint the latest once all are written, as
    // save() does. The default is an mt::Error.
    virtual void save_stage(const std::filesystem::path& dir, const CheckpointLayout& layout,
                            int64_t stage, bool writer,
                            const std::function<CheckpointState(int64_t tp_rank)>& rank_state,
                            Communicator& world);

    // Collective saving, for a format whose files are written by the ranks that hold the
    // tensors (torch_dist, as megatron-core's sharded save): every rank of `world` calls it at
    // once with its share of the state (mt/train/checkpointing.h CaptureOptions::own_share:
    // pieces with their places in the whole tensors; a share may have no tensors) and writes its
    // own file; rank 0 writes the rest, and the checkpoint becomes the latest atomically, as
    // save().
    // The default is an mt::Error: such formats override both.
    virtual bool saves_collectively() const { return false; }

    // Megatron's --verify-integrity, which its torch_dist format alone has: on, each save puts
    // integrity.json (every file's SHA-256: mt/checkpoint/integrity_manifest.h) in the iteration
    // directory before the checkpoint becomes the latest, and each load re-hashes the files it
    // lists before reading them. Returns whether the format does so (the default: only off).
    virtual bool set_verify_integrity(bool on) { return !on; }
    // Why save_collective cannot keep the distributed optimizer's state in `layout` for a run
    // with `args` whose parameters are `names`, or empty when it can (the default).
    virtual std::string distributed_layout_refusal(DistributedOptimizerLayout layout,
                                                   const CheckpointArgs& args,
                                                   const std::vector<std::string>& names) const {
        (void)layout, (void)args, (void)names;
        return "";
    }
    virtual void save_collective(const std::filesystem::path& dir, const CheckpointState& share,
                                 Communicator& world);
};

}  // namespace mt
