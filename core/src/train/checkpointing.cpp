#include "mt/train/checkpointing.h"

#include <algorithm>
#include <map>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/checkpoint/model_weights.h"
#include "mt/checkpoint/reshard.h"
#include "mt/error.h"
#include "mt/nn/parameter.h"
#include "mt/optim/muon.h"
#include "mt/parallel/collectives.h"
#include "mt/parallel/grad_buffer.h"
#include "mt/parallel/parallel_state.h"

namespace mt::train {

namespace {

// Whether every tensor rank holds p whole.
bool replicated(const nn::Parameter& p) {
    return p.tp_size == 1 || p.shard.kind == ShardSpec::Kind::replicated;
}

bool distributed_optimizer(const TrainingParts& parts) {
    return parts.grad_buffer && parts.grad_buffer->distributed_optimizer();
}

// `t` (the same shape on every rank of `group`) from every rank, in rank order.
std::vector<Tensor> gathered(const TrainingParts& parts, Communicator& group, const Tensor& t) {
    if (!t.defined()) return std::vector<Tensor>(size_t(group.size()));
    Backend& backend = parts.optimizer.backend();
    const int64_t n = t.numel();
    Tensor all = backend.empty({n * group.size()}, t.dtype());
    group.all_gather(backend.contiguous(t).view({n}), all);
    std::vector<Tensor> out;
    for (int r = 0; r < group.size(); ++r)
        out.push_back(all.slice(0, r * n, (r + 1) * n).view(t.shape()));
    return out;
}

// `local`, this rank's piece of p (or of one of p's optimizer moments), joined over the
// tensor-parallel group into the whole tensor.
Tensor whole_of(const TrainingParts& parts, const nn::Parameter& p, const Tensor& local) {
    if (!parts.parallel || replicated(p)) return local;
    return unshard_tensor(gathered(parts, parts.parallel->tp_of(p.expert), local), p.shard);
}

// One of the distributed optimizer's buffers (the dense parameters', the experts') and where
// its shard's pieces start in optimizer.parameters().
struct ShardedBuffer {
    const parallel::GradBuffer* buffer;
    size_t first_slot;
};

// The distributed optimizer's buffers, the dense one first; empty without it.
std::vector<ShardedBuffer> sharded_buffers(const TrainingParts& parts) {
    if (!distributed_optimizer(parts)) return {};
    std::vector<ShardedBuffer> out{{parts.grad_buffer, 0}};
    if (parts.expert_grad_buffer)
        out.push_back({parts.expert_grad_buffer, parts.grad_buffer->shard().size()});
    return out;
}

// Which of `buffers` holds p.
size_t buffer_index(const std::vector<ShardedBuffer>& buffers, const nn::Parameter& p) {
    MT_CHECK(!p.expert || buffers.size() > 1, "the distributed optimizer holds no buffer of the ",
             "experts (", p.name, ")");
    return p.expert ? 1 : 0;
}

// The per-shard tensors of `b` (optimizer state of its shard()[i], at first_slot + i of
// `shard`) laid out as its gradient buffer and gathered over its data-parallel group; undefined
// when there are none.
Tensor gathered_shards(const TrainingParts& parts, const ShardedBuffer& b,
                       const std::vector<Tensor>& shard) {
    if (shard.empty() || !shard[0].defined()) return Tensor();
    const parallel::GradBuffer& buffer = *b.buffer;
    Backend& backend = parts.optimizer.backend();
    Tensor whole = backend.zeros(buffer.grads().shape(), DType::f32);
    for (size_t i = 0; i < buffer.shard().size(); ++i) {
        Tensor piece = buffer.view(whole, buffer.shard()[i]);
        backend.copy(shard[b.first_slot + i], piece);
    }
    buffer.all_gather_shards(whole);
    return whole;
}

// Every model parameter's piece of the optimizer tensors `shard` (one per shard piece: a
// moment, the masters), gathered from the distributed optimizer's buffers; undefined pieces
// where there are none.
std::vector<Tensor> gathered_pieces(const TrainingParts& parts, const std::vector<Tensor>& shard) {
    const std::vector<ShardedBuffer> buffers = sharded_buffers(parts);
    std::vector<Tensor> whole;
    for (const ShardedBuffer& b : buffers) whole.push_back(gathered_shards(parts, b, shard));
    std::vector<Tensor> out;
    for (const nn::Parameter* p : parts.model.parameters()) {
        const size_t k = buffer_index(buffers, *p);
        out.push_back(whole[k].defined() ? buffers[k].buffer->view(whole[k], *p) : Tensor());
    }
    return out;
}

// This rank's optimizer moments of every model parameter (first, second), shaped like its
// piece. The distributed optimizer's shards are gathered over the data-parallel group first.
std::vector<std::pair<Tensor, Tensor>> local_moments(const TrainingParts& parts,
                                                     const optim::Optimizer::State& whole) {
    const auto params = parts.model.parameters();
    std::vector<std::pair<Tensor, Tensor>> out;
    if (!distributed_optimizer(parts)) {
        MT_CHECK(parts.optimizer.parameters() == params,
                 "the optimizer does not update the model's parameters");
        for (size_t i = 0; i < params.size(); ++i)
            out.emplace_back(whole.first[i], whole.second[i]);
        return out;
    }
    // optimizer.first()[i] is the state of the i-th shard piece (SGD has no second moment).
    const std::vector<Tensor> first = gathered_pieces(parts, parts.optimizer.first()),
                              second = gathered_pieces(parts, parts.optimizer.second());
    for (size_t i = 0; i < params.size(); ++i) out.emplace_back(first[i], second[i]);
    return out;
}

// This rank's f32 master copy of every model parameter's piece in a bf16 / f16 run (undefined
// in an f32 one): the optimizer's, or the distributed optimizer's shards gathered.
std::vector<Tensor> local_masters(const TrainingParts& parts,
                                  const optim::Optimizer::State& whole) {
    if (!distributed_optimizer(parts)) return whole.masters;
    return gathered_pieces(parts, parts.optimizer.masters());
}

// Copies `from` (checkpoint tensor `key`) into `to`, checking shape and dtype.
void copy_checked(Backend& backend, const std::string& what, const std::string& key,
                  const Tensor& from, Tensor& to) {
    MT_CHECK(from.shape() == to.shape(), what, " '", key, "' has shape ", shape_str(from.shape()),
             " in the checkpoint but ", shape_str(to.shape()), " in the model");
    MT_CHECK(from.dtype() == to.dtype(), what, " '", key, "' is ", from.describe(),
             " in the checkpoint but the model holds ", to.describe());
    backend.copy(from, to);
}

// The entry for `name`, under either implementation's spelling.
template <class Map>
auto find_either(Map& map, const std::string& name) {
    auto it = map.find(name);
    return it != map.end() ? it : map.find(other_impl_name(name));
}

void restore_optimizer(const OptimizerCheckpoint& saved, const TrainingParts& parts) {
    const std::string type = optim::optimizer_type_name(parts.optimizer.config().type);
    MT_CHECK(saved.type == type, "the checkpoint's optimizer state is for ", saved.type,
             " but this run uses --optimizer ", type, " (use --no-load-optim)");
    std::map<std::string, const OptimizerParamState*> by_name;
    for (const auto& s : saved.params) by_name[s.name] = &s;
    // Each model parameter's moments go to where this rank keeps them: the optimizer's own
    // tensors, or (distributed optimizer) a buffer-shaped copy this rank's shard is cut from.
    const std::vector<ShardedBuffer> buffers = sharded_buffers(parts);
    const auto params = parts.model.parameters();
    struct Copies {
        Tensor first, second, master;
    };
    std::vector<Copies> copies;
    const bool masters =
        !parts.optimizer.masters().empty() && parts.optimizer.masters()[0].defined();
    Backend& backend = parts.optimizer.backend();
    for (const ShardedBuffer& b : buffers) {
        const Shape& shape = b.buffer->grads().shape();
        Copies& c = copies.emplace_back();
        c.first = backend.zeros(shape, DType::f32);
        c.second = backend.zeros(shape, DType::f32);
        if (masters && saved.has_master_weights()) c.master = backend.zeros(shape, DType::f32);
    }
    if (buffers.empty())
        MT_CHECK(parts.optimizer.parameters() == params,
                 "the optimizer does not update the model's parameters");
    for (size_t i = 0; i < params.size(); ++i) {
        const nn::Parameter& p = *params[i];
        // A pipeline stage's copy of a tied weight has the original's state.
        auto it = find_either(by_name, p.stored_name());
        MT_CHECK(it != by_name.end(), "the checkpoint has no optimizer state for '", p.name, "'");
        const OptimizerParamState& state = *it->second;
        if (type == "muon")
            MT_CHECK(state.muon == optim::managed_by_muon(p),
                     "the checkpoint's optimizer updates '", p.name, "' with ",
                     state.muon ? "Muon" : "Adam", ", this run with ",
                     state.muon ? "Adam" : "Muon");
        if (buffers.empty()) {
            auto into = [&](const Tensor& whole, Tensor& own) {
                copy_checked(backend, "optimizer state of", p.name, nn::piece_of_whole(p, whole),
                             own);
            };
            // (Sharded layer-wise: another rank keeps it.)
            if (!parts.optimizer.first()[i].defined()) continue;
            into(state.exp_avg, parts.optimizer.first()[i]);
            if (parts.optimizer.second()[i].defined())
                into(state.exp_avg_sq, parts.optimizer.second()[i]);
            // A bf16 run resumes from the saved f32 masters; from an f32 checkpoint (no
            // masters), from the loaded weights (reload_model_params below).
            if (parts.optimizer.masters()[i].defined() && state.main_param.defined())
                copy_checked(backend, "master weights of", p.name,
                             nn::piece_of_whole(p, state.main_param), parts.optimizer.masters()[i]);
            continue;
        }
        const size_t k = buffer_index(buffers, p);
        auto into = [&](const char* what, const Tensor& whole, const Tensor& buffer_shaped) {
            Tensor to = buffers[k].buffer->view(buffer_shaped, p);
            copy_checked(backend, what, p.name, nn::piece_of_whole(p, whole), to);
        };
        into("optimizer state of", state.exp_avg, copies[k].first);
        if (type == "adam") into("optimizer state of", state.exp_avg_sq, copies[k].second);
        if (copies[k].master.defined())
            into("master weights of", state.main_param, copies[k].master);
    }
    for (size_t k = 0; k < buffers.size(); ++k) {
        const parallel::GradBuffer& buffer = *buffers[k].buffer;
        for (size_t i = 0; i < buffer.shard().size(); ++i) {
            const auto& piece = buffer.shard()[i];
            const size_t slot = buffers[k].first_slot + i;
            backend.copy(buffer.view(copies[k].first, piece), parts.optimizer.first()[slot]);
            if (copies[k].master.defined())
                backend.copy(buffer.view(copies[k].master, piece), parts.optimizer.masters()[slot]);
            if (type == "adam")
                backend.copy(buffer.view(copies[k].second, piece), parts.optimizer.second()[slot]);
        }
    }
    // Megatron loads a dynamic scaler's state and keeps a constant one's flag value.
    if (optim::GradScaler* g = parts.trainer.grad_scaler();
        g && saved.grad_scaler && saved.grad_scaler->dynamic)
        g->set_state({saved.grad_scaler->scale, saved.grad_scaler->growth_tracker,
                      saved.grad_scaler->hysteresis_tracker});
    parts.optimizer.set_steps(saved.step);
    optim::OptimizerConfig config = parts.optimizer.config();
    config.adam_beta1 = saved.beta1;
    config.adam_beta2 = saved.beta2;
    config.adam_eps = saved.eps;
    config.sgd_momentum = saved.momentum;
    parts.optimizer.set_config(config);
}

// Where p's piece lies in the whole parameter.
std::vector<ShardBox> boxes_of(const nn::Parameter& p) {
    return replicated(p) ? shard_boxes(p.whole_shape, p.shard, 1, 0)
                         : shard_boxes(p.whole_shape, p.shard, p.tp_size, p.tp_rank);
}

// The boxes of p's piece `local` (its value or a moment shaped like it) that this rank writes
// of the run's main replica: data- and context-parallel rank 0's (an expert's: expert-data-
// parallel rank 0's), of the pieces no other rank writes (tensor rank 0's of a replicated
// tensor; never a pipeline stage's copy of a tied weight).
std::vector<ShardedTensor> main_boxes(const TrainingParts& parts, const nn::Parameter& p,
                                      const Tensor& local) {
    // An expert is replicated over the expert-data-parallel ranks (data parallel modulo EP).
    if (parts.parallel && parts.parallel->dp_of(p.expert).rank() != 0) return {};
    if (p.counted_elsewhere()) return {};
    return replicated(p) ? piece_boxes(local, p.whole_shape, p.shard, 1, 0)
                         : piece_boxes(local, p.whole_shape, p.shard, p.tp_size, p.tp_rank);
}

// The distributed optimizer's ranges on this rank (main replicas only: none on the ranks of a
// second distributed-optimizer instance, whose shards are copies), sharing the run's tensors:
// optimizer.first()[i] and second()[i] are the moments of the i-th shard piece (the dense
// buffer's, then the experts', which Megatron's chained optimizer keeps apart under expert
// parallelism).
std::vector<OptimizerShard> own_shards(const TrainingParts& parts) {
    const bool expert_parallel = parts.parallel && parts.parallel->ep().size() > 1;
    std::vector<OptimizerShard> out;
    for (const ShardedBuffer& b : sharded_buffers(parts)) {
        const parallel::GradBuffer& buffer = *b.buffer;
        if (buffer.instance() != 0) continue;
        for (size_t i = 0; i < buffer.shard().size(); ++i) {
            const auto& piece = buffer.shard()[i];
            const nn::Parameter& p = *piece.param;
            if (p.counted_elsewhere()) continue;
            const size_t slot = b.first_slot + i;
            OptimizerShard s;
            s.name = p.name;
            s.global_shape = p.whole_shape;
            s.boxes = boxes_of(p);
            s.begin = piece.param_begin;
            s.end = piece.param_end;
            // The f32 weights the optimizer updates: its masters in a bf16 / f16 run.
            s.main_param = parts.optimizer.masters()[slot].defined()
                               ? parts.optimizer.masters()[slot]
                               : buffer.view(buffer.values(), piece);
            s.exp_avg = parts.optimizer.first()[slot];
            s.exp_avg_sq = parts.optimizer.second()[slot];
            s.expert_parallel = p.expert && expert_parallel;
            out.push_back(std::move(s));
        }
    }
    return out;
}

// Where this rank stands in core_v0.19's dp_reshardable layout (the distributed optimizer's
// buffers: the dense one, and the experts' when they have one).
BucketShare bucket_share(const TrainingParts& parts) {
    BucketShare out;
    if (!parts.parallel) return out;
    const parallel::ParallelState& run = *parts.parallel;
    auto part = [](const parallel::GradBuffer& buffer, int64_t group) {
        return BucketShare::Part{group, buffer.group().rank(), buffer.group().size(),
                                 buffer.instance() == 0};
    };
    out.dense = part(*parts.grad_buffer, run.tp().rank() + run.tp().size() * run.pp().rank());
    if (parts.expert_grad_buffer)
        out.experts = part(
            *parts.expert_grad_buffer,
            run.expert_tp().rank() +
                run.expert_tp().size() * (run.ep().rank() + run.ep().size() * run.pp().rank()));
    return out;
}

// Under expert parallelism a whole-tensor capture holds this rank's experts only: every
// expert-parallel rank's instead, each run of them in rank order (the model's expert order),
// model and optimizer entries alike. Collective over the expert-parallel group.
void gather_experts(const TrainingParts& parts, CheckpointState& s) {
    Communicator& ep = parts.parallel->ep();
    if (ep.size() == 1) return;
    const bool moments = s.optimizer.has_value();
    MT_CHECK(!moments || s.optimizer->params.size() == s.model.size(), "optimizer state for ",
             s.optimizer->params.size(), " tensors, the model has ", s.model.size());
    std::string names;
    for (const auto& [name, t] : s.model)
        if (megatron_expert_parameter(name)) names += name + '\n';
    std::vector<std::vector<std::string>> rank_names;
    for (const std::string& list : parallel::all_gather_bytes(ep, names)) {
        rank_names.emplace_back();
        for (size_t a = 0, b; (b = list.find('\n', a)) != std::string::npos; a = b + 1)
            rank_names.back().push_back(list.substr(a, b - a));
    }
    std::vector<std::pair<std::string, ShardedTensor>> model;
    std::vector<OptimizerParamState> params;
    size_t k = 0;  // this rank's expert entries seen
    for (size_t i = 0; i < s.model.size();) {
        if (!megatron_expert_parameter(s.model[i].first)) {
            model.push_back(std::move(s.model[i]));
            if (moments) params.push_back(std::move(s.optimizer->params[i]));
            ++i;
            continue;
        }
        size_t end = i;
        while (end < s.model.size() && megatron_expert_parameter(s.model[end].first)) ++end;
        // Every rank's copy of this run (each rank's experts sit at the same places).
        std::vector<std::vector<std::pair<std::string, ShardedTensor>>> run(size_t(ep.size()));
        std::vector<std::vector<OptimizerParamState>> run_params(size_t(ep.size()));
        for (size_t j = i; j < end; ++j, ++k) {
            const auto values = gathered(parts, ep, s.model[j].second.local);
            std::vector<Tensor> first, second, master;
            if (moments) {
                const OptimizerParamState& p = s.optimizer->params[j];
                first = gathered(parts, ep, p.exp_avg);
                second = gathered(parts, ep, p.exp_avg_sq);
                master = gathered(parts, ep, p.main_param);
            }
            for (size_t r = 0; r < size_t(ep.size()); ++r) {
                MT_CHECK(k < rank_names[r].size(), "expert-parallel rank ", r, " has ",
                         rank_names[r].size(), " expert tensors, this rank more");
                const std::string& name = rank_names[r][k];
                run[r].emplace_back(name, ShardedTensor::whole(values[r]));
                if (!moments) continue;
                OptimizerParamState p = s.optimizer->params[j];
                p.name = name;
                p.exp_avg = first[r];
                p.exp_avg_sq = second[r];
                p.main_param = master[r];
                run_params[r].push_back(std::move(p));
            }
        }
        for (size_t r = 0; r < run.size(); ++r) {
            for (auto& entry : run[r]) model.push_back(std::move(entry));
            for (auto& p : run_params[r]) params.push_back(std::move(p));
        }
        i = end;
    }
    s.model = std::move(model);
    if (moments) s.optimizer->params = std::move(params);
}

// The model's buffers (a router's expert_bias: no optimizer state) put among its parameters'
// entries where Megatron's state dict has them; replicated, so whole on every rank.
void add_buffers(const TrainingParts& parts, const CaptureOptions& o,
                 std::vector<std::pair<std::string, ShardedTensor>>& model) {
    for (nn::Parameter* b : parts.model.buffers()) {
        std::vector<ShardedTensor> boxes;
        if (o.own_share)
            boxes = main_boxes(parts, *b, b->value);
        else
            boxes.push_back(ShardedTensor::whole(b->value));
        const size_t at = buffer_slot(
            model.size(), [&](size_t i) -> const std::string& { return model[i].first; }, b->name);
        for (size_t k = 0; k < boxes.size(); ++k)
            model.insert(model.begin() + std::ptrdiff_t(at + k), {b->name, std::move(boxes[k])});
    }
}

}  // namespace

std::string lr_decay_style_name(optim::LrDecayStyle style) {
    switch (style) {
        case optim::LrDecayStyle::constant:
            return "constant";
        case optim::LrDecayStyle::linear:
            return "linear";
        case optim::LrDecayStyle::cosine:
            return "cosine";
        case optim::LrDecayStyle::inverse_square_root:
            return "inverse-square-root";
        case optim::LrDecayStyle::wsd:
            return "WSD";
    }
    MT_FAIL("unknown learning-rate decay style");
}

std::string wd_incr_style_name(optim::WdIncrStyle style) {
    switch (style) {
        case optim::WdIncrStyle::constant:
            return "constant";
        case optim::WdIncrStyle::linear:
            return "linear";
        case optim::WdIncrStyle::cosine:
            return "cosine";
    }
    MT_FAIL("unknown weight-decay increment style");
}

CheckpointState capture_checkpoint(const TrainingParts& parts, const CaptureOptions& o) {
    CheckpointState s;
    s.iteration = parts.trainer.iteration();
    s.consumed_train_samples = parts.trainer.consumed_train_samples();
    s.consumed_valid_samples = parts.trainer.consumed_valid_samples();
    s.args = o.args;
    s.args.emplace_back("iteration", s.iteration);
    s.args.emplace_back("consumed_train_samples", s.consumed_train_samples);
    s.args.emplace_back("consumed_valid_samples", s.consumed_valid_samples);
    // (Megatron's args always hold it; its loader reads a missing one as 0, so it is written
    // only once there is something to count.)
    if (parts.trainer.skipped_train_samples() > 0)
        s.args.emplace_back("skipped_train_samples", parts.trainer.skipped_train_samples());
    // Megatron-DeepSpeed's args hold its token count (a curriculum counts fewer per sample).
    if (parts.trainer.counts_tokens() || parts.scheduler.counts_tokens())
        s.args.emplace_back("consumed_train_tokens", parts.trainer.consumed_train_tokens());
    const auto params = parts.model.parameters();
    for (nn::Parameter* p : params) {
        if (!p->copy_of.empty() && !o.stage_copies) continue;  // the original is saved
        if (!o.own_share) {
            s.model.emplace_back(p->name, ShardedTensor::whole(whole_of(parts, *p, p->value)));
            continue;
        }
        for (ShardedTensor& box : main_boxes(parts, *p, p->value))
            s.model.emplace_back(p->name, std::move(box));
    }
    for (const nn::Parameter* p : params)
        for (const std::string& alias : p->aliases) s.model_aliases.emplace_back(alias, p->name);

    const auto& sc = parts.scheduler.config();
    if (o.optimizer) {
        OptimizerCheckpoint opt;
        const auto& c = parts.optimizer.config();
        opt.type = optim::optimizer_type_name(c.type);
        // (Megatron's layer-wise distributed optimizer: the same state, keyed per chained part.)
        opt.layer_wise = c.type == optim::OptimizerType::muon && c.muon.layer_wise;
        opt.step = parts.optimizer.steps();
        opt.lr = parts.scheduler.lr();
        opt.weight_decay = parts.scheduler.weight_decay();
        opt.max_lr = sc.max_lr;
        opt.min_lr = sc.min_lr;
        const std::optional<double> decoupled = parts.trainer.decoupled_lr();
        if (decoupled) {
            const train::TrainerOptions& to = parts.trainer.options();
            opt.decoupled_lr = *decoupled;
            opt.decoupled_max_lr = *to.decoupled_lr;
            opt.decoupled_min_lr = to.decoupled_min_lr.value_or(sc.min_lr);
        }
        opt.beta1 = c.adam_beta1;
        opt.beta2 = c.adam_beta2;
        opt.eps = c.adam_eps;
        opt.momentum = c.sgd_momentum;
        // The distributed optimizer's ranges as they lie (core_v0.13's layout), or gathered into
        // whole pieces (core_v0.19's fully_reshardable) or every piece here (its dp_reshardable).
        opt.layout = o.own_share && distributed_optimizer(parts) ? o.distributed_layout
                                                                 : DistributedOptimizerLayout::none;
        const bool shards = opt.layout == DistributedOptimizerLayout::fully_sharded_model_space;
        if (opt.layout == DistributedOptimizerLayout::dp_reshardable)
            opt.buckets = bucket_share(parts);
        MT_CHECK(!shards || opt.type == "adam",
                 "not supported yet: saving the distributed optimizer's shards of ", opt.type);
        // Which of Megatron's chained optimizers updates a parameter: its experts take one of
        // their own under expert parallelism, Muon's parameters and Adam's one each.
        opt.mup_width_mult = c.mup_width_mult;
        if (const std::optional<double> mup_lr = parts.trainer.mup_lr()) opt.mup_lr = *mup_lr;
        opt.core_v0_19 = o.core_v0_19;
        auto chained_as = [&](const nn::Parameter& p) {
            OptimizerParamState ps;
            ps.expert_parallel = p.expert && parts.parallel && parts.parallel->ep().size() > 1;
            ps.muon = opt.type == "muon" && optim::managed_by_muon(p);
            ps.mup = optim::mup_scaled(c, p, decoupled.has_value());
            return ps;
        };
        // (Sharded layer-wise, every rank gets every parameter's state for this.)
        const optim::Optimizer::State whole =
            shards ? optim::Optimizer::State() : parts.optimizer.whole_state();
        const auto moments =
            shards ? std::vector<std::pair<Tensor, Tensor>>() : local_moments(parts, whole);
        const std::vector<Tensor> local_master =
            shards ? std::vector<Tensor>(params.size()) : local_masters(parts, whole);
        for (size_t i = 0; i < params.size(); ++i) {
            const nn::Parameter& p = *params[i];
            // (The original's is saved, but a stage's buffer keeps its copy's.)
            if (!p.copy_of.empty() && !o.stage_copies && !opt.buckets) continue;
            OptimizerParamState ps = chained_as(p);
            ps.name = p.name;
            ps.weight_decay = p.weight_decay;
            ps.decoupled_lr = decoupled && p.embedding_or_output;
            if (shards) {  // the moments are in opt.shards; one entry per model box
                for (size_t b = main_boxes(parts, p, p.value).size(); b > 0; --b)
                    opt.params.push_back(ps);
                continue;
            }
            // The f32 master copy of a bf16 parameter.
            const Tensor& master = local_master[i];
            if (opt.buckets) {  // this rank's piece, whole
                ps.exp_avg = moments[i].first;
                ps.exp_avg_sq = moments[i].second;
                ps.main_param = master;
                opt.params.push_back(std::move(ps));
                opt.buckets->values.push_back(p.value);
                continue;
            }
            if (!o.own_share) {
                ps.exp_avg = whole_of(parts, p, moments[i].first);
                // (SGD's and Muon's parameters keep one buffer.)
                if (moments[i].second.defined())
                    ps.exp_avg_sq = whole_of(parts, p, moments[i].second);
                if (master.defined()) ps.main_param = whole_of(parts, p, master);
                opt.params.push_back(std::move(ps));
                continue;
            }
            // Box for box with the model's entries.
            const auto first = main_boxes(parts, p, moments[i].first);
            const auto second = moments[i].second.defined()
                                    ? main_boxes(parts, p, moments[i].second)
                                    : std::vector<ShardedTensor>();
            const auto masters =
                master.defined() ? main_boxes(parts, p, master) : std::vector<ShardedTensor>();
            for (size_t b = 0; b < first.size(); ++b) {
                ps.exp_avg = first[b].local;
                if (!second.empty()) ps.exp_avg_sq = second[b].local;
                if (!masters.empty()) ps.main_param = masters[b].local;
                opt.params.push_back(ps);
            }
        }
        if (shards) opt.shards = own_shards(parts);
        // Megatron's chained parts over the whole model: those of every rank's parameters.
        std::vector<double> present(4, 0.0);
        for (const nn::Parameter* p : params)
            present[size_t(chain_part(opt.type, chained_as(*p)))] = 1.0;
        if (parts.parallel)
            parallel::all_reduce_values(parts.parallel->world(), present, ReduceOp::max);
        for (size_t k = 0; k < present.size(); ++k)
            if (present[k] > 0) opt.chain_parts |= uint8_t(1u << k);
        if (const optim::GradScaler* g = parts.trainer.grad_scaler()) {
            const optim::GradScalerState st = g->state();
            opt.grad_scaler = GradScalerCheckpoint{g->dynamic(), st.scale, st.growth_tracker,
                                                   st.hysteresis_tracker};
        }
        s.optimizer = std::move(opt);

        SchedulerCheckpoint sch;
        sch.max_lr = sc.max_lr;
        sch.min_lr = sc.min_lr;
        sch.lr_warmup_steps = sc.lr_warmup_steps;
        sch.num_steps = parts.scheduler.num_steps();
        sch.lr_decay_steps = sc.lr_decay_steps;
        sch.lr_decay_style = lr_decay_style_name(sc.lr_decay_style);
        sch.start_wd = sc.start_wd;
        sch.end_wd = sc.end_wd;
        sch.wd_incr_steps = sc.wd_incr_steps;
        sch.wd_incr_style = wd_incr_style_name(sc.wd_incr_style);
        if (parts.scheduler.counts_tokens())
            sch.tokens =
                SchedulerCheckpoint::Tokens{parts.scheduler.num_tokens(),
                                            parts.scheduler.lr_warmup_tokens(), sc.lr_decay_tokens};
        s.scheduler = sch;
    }
    if (o.rng) {
        s.rng = RngCheckpoint{parts.trainer.dropout_seed(), parts.trainer.dropout_offset(), {}};
        if (parts.parallel) {
            const parallel::ParallelState& run = *parts.parallel;
            MegatronRngRank& r = s.rng->megatron_rank;
            r.pipeline = run.pp().rank();
            r.tensor = run.tp().rank();
            r.data = run.dp().rank();
            r.expert = run.ep().rank();
            r.expert_tensor = run.expert_tp().rank();
            r.context = run.cp().rank();
        }
    }
    if (!o.own_share && parts.parallel) gather_experts(parts, s);
    add_buffers(parts, o, s.model);
    return s;
}

namespace {

// Megatron's OptimizerParamScheduler.load_state_dict: each setting checked (_check_and_set).
optim::LrScheduleConfig restored_schedule(const optim::LrScheduleConfig& flags,
                                          const SchedulerCheckpoint& saved, ScheduleSettings from) {
    optim::LrScheduleConfig c = flags;
    auto pick = [&](const auto& flag_value, const auto& saved_value, const char* name) {
        if (from == ScheduleSettings::from_flags) return flag_value;
        MT_CHECK(from == ScheduleSettings::from_checkpoint || flag_value == saved_value,
                 "OptimizerParamScheduler: class input value ", flag_value,
                 " and checkpoint value ", saved_value, " for ", name,
                 " do not match (--override-opt_param-scheduler takes the flags', "
                 "--use-checkpoint-opt_param-scheduler the checkpoint's)");
        return saved_value;
    };
    c.max_lr = pick(flags.max_lr, saved.max_lr, "learning rate");
    c.min_lr = pick(flags.min_lr, saved.min_lr, "minimum learning rate");
    c.lr_warmup_steps = pick(flags.lr_warmup_steps, saved.lr_warmup_steps, "warmup iterations");
    c.lr_decay_steps =
        pick(flags.lr_decay_steps, saved.lr_decay_steps, "total number of iterations");
    c.lr_decay_style =
        optim::parse_lr_decay_style(pick(lr_decay_style_name(flags.lr_decay_style),
                                         saved.lr_decay_style, "learning rate decay style"));
    c.start_wd = pick(flags.start_wd, saved.start_wd, "start weight decay");
    c.end_wd = pick(flags.end_wd, saved.end_wd, "end weight decay");
    c.wd_incr_steps =
        pick(flags.wd_incr_steps, saved.wd_incr_steps, "total number of weight decay iterations");
    c.wd_incr_style = optim::parse_wd_incr_style(pick(
        wd_incr_style_name(flags.wd_incr_style), saved.wd_incr_style, "weight decay incr style"));
    // Megatron-DeepSpeed's token counts. (Its load_state_dict also compares a warmup in tokens
    // that a step-based warmup set with the flags' None and fails; here the saved state wins.)
    const SchedulerCheckpoint::Tokens none;
    const SchedulerCheckpoint::Tokens& tokens = saved.tokens ? *saved.tokens : none;
    // Compared as Python prints them ("None" where unset); the value comes from where pick says.
    auto pick_tokens = [&](std::optional<int64_t> flag, std::optional<int64_t> saved_value,
                           const char* name) {
        auto text = [](std::optional<int64_t> v) { return v ? std::to_string(*v) : "None"; };
        pick(text(flag), text(saved_value), name);
        return from == ScheduleSettings::from_flags ? flag : saved_value;
    };
    if (flags.lr_warmup_tokens)
        c.lr_warmup_tokens =
            pick_tokens(flags.lr_warmup_tokens, tokens.lr_warmup_tokens, "warmup tokens");
    c.lr_decay_tokens = pick_tokens(flags.lr_decay_tokens, tokens.lr_decay_tokens, "decay tokens");
    return c;
}

}  // namespace

void restore_checkpoint(const CheckpointState& state, const TrainingParts& parts,
                        const RestoreOptions& o) {
    load_model_weights(state, parts.model, WeightLoad::copy);
    parts.optimizer.reload_model_params();  // bf16 masters; the optimizer state may replace them
    if (o.finetune) return;
    parts.trainer.set_progress(state.iteration, state.consumed_train_samples,
                               state.consumed_valid_samples,
                               int_arg(state.args, "skipped_train_samples").value_or(0));
    if (const auto tokens = int_arg(state.args, "consumed_train_tokens"))
        parts.trainer.set_consumed_tokens(*tokens);
    if (o.optimizer) {
        MT_CHECK(state.optimizer_not_loaded.empty(), state.optimizer_not_loaded,
                 " (use --no-load-optim or --finetune)");
        MT_CHECK(state.optimizer && state.scheduler,
                 "the checkpoint has no optimizer state: use --no-load-optim or --finetune");
        restore_optimizer(*state.optimizer, parts);
        parts.scheduler = optim::LrScheduler(
            restored_schedule(parts.scheduler.config(), *state.scheduler, o.schedule));
        parts.scheduler.set_num_steps(state.scheduler->num_steps);
        if (const auto& t = state.scheduler->tokens)
            parts.scheduler.set_token_state(t->num_tokens, t->lr_warmup_tokens);
    }
    if (o.rng && state.rng)
        parts.trainer.set_dropout_rng(state.rng->dropout_seed, state.rng->dropout_offset);
}

}  // namespace mt::train
