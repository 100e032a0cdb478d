#include "mt/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "loss_accumulator.h"
#include "mt/data/pretraining_loader.h"
#include "mt/error.h"
#include "mt/io/tensorboard_writer.h"
#include "mt/nn/dropout.h"
#include "mt/nn/fp8.h"
#include "mt/nn/moe/tracker.h"
#include "mt/nn/parameter.h"
#include "mt/optim/grad_clip.h"
#include "mt/parallel.h"
#include "mt/parallel/collectives.h"
#include "mt/parallel/grad_buffer.h"
#include "mt/parallel/parallel_state.h"
#include "mt/train/log_lines.h"
#include "mt/train/process_memory.h"
#include "mt/train/schedule_trace.h"
#include "mt/train/timers.h"

namespace mt::train {

namespace {

using Clock = std::chrono::steady_clock;

// t's values rounded to the nearest bf16 (ties to even), kept in t's dtype.
void round_to_bf16(Backend& backend, Tensor& t) {
    Tensor narrow = backend.empty(t.shape(), DType::bf16);
    backend.cast(t, narrow);
    backend.cast(narrow, t);
}

// total[name] += value for each named loss, new names appended in order.
void accumulate_named(NamedLosses& total, const NamedLosses& add) {
    for (const auto& [name, value] : add) {
        auto it = std::find_if(total.begin(), total.end(),
                               [&name = name](const auto& entry) { return entry.first == name; });
        if (it == total.end())
            total.emplace_back(name, value);
        else
            it->second += value;
    }
}

// Σ loss·mask and Σ mask of one micro-batch, in double; `mask` is on the backend.
std::pair<double, double> masked_sums(Backend& backend, const Tensor& losses, const Tensor& mask) {
    MT_CHECK(losses.shape() == mask.shape(), "the model returned losses ", losses.describe(),
             " for a loss mask ", mask.describe());
    return {backend.dot(backend.contiguous(losses), mask), backend.sum(mask)};
}

// Adds a micro-batch's terms to `accumulated`; returns each term's Σ loss·mask and mask count
// (its tokens).
std::vector<std::pair<double, double>> accumulate(LossAccumulator& accumulated, Backend& backend,
                                                  const Losses& losses) {
    std::vector<std::pair<double, double>> sums;
    for (const LossTerm& term : losses) {
        auto [sum, count] = masked_sums(backend, term.values, term.mask);
        accumulated.add(term, sum, count);
        sums.emplace_back(sum, count);
    }
    return sums;
}

// Megatron's SPIKY_LOSS_FACTOR (pretrain_gpt.py), also its large-gradient threshold.
constexpr double kSpikyFactor = 10;

// The loader's micro-batches one after another; an mt::Error when the `what` data runs out.
std::function<Batch()> batches_of(data::PretrainingLoader& loader, std::string what) {
    return [&loader, what = std::move(what)] {
        Batch batch;
        MT_CHECK(loader.next(batch), "the ", what, " data ran out after ",
                 loader.consumed_samples(), " samples");
        return batch;
    };
}

}  // namespace

Trainer::Trainer(Model& model, optim::Optimizer& optimizer, optim::LrScheduler& scheduler,
                 TrainerOptions options, std::function<void(const std::string&)> print)
    : model_(model),
      optimizer_(optimizer),
      scheduler_(scheduler),
      options_(options),
      print_(std::move(print)),
      dropout_(std::make_unique<nn::DropoutContext>()),
      timers_(options_.timing_log_level, options_.timing_log_option) {
    MT_CHECK(options_.micro_batch_size > 0, "--micro-batch-size must be positive");
    MT_CHECK(options_.global_batch_size % options_.micro_batch_size == 0, "--global-batch-size (",
             options_.global_batch_size, ") must be a multiple of --micro-batch-size (",
             options_.micro_batch_size, ")");
    MT_CHECK(options_.sample_multiplier > 0, "the sample multiplier must be positive, got ",
             options_.sample_multiplier);
    dropout_->training = true;
    dropout_->seed = options_.seed;
    if (options_.grad_scaler) scaler_.emplace(*options_.grad_scaler);
    if (options_.seqlen_curriculum) curriculum_.emplace(*options_.seqlen_curriculum);
    step_seqlen_ = options_.tokens_per_sample;
    schedule_ = make_schedule(1);
    if (!options_.schedule_trace_dir.empty()) trace_ = std::make_unique<ScheduleTrace>();
}

Trainer::~Trainer() = default;

void Trainer::set_parallel(const parallel::ParallelState& state, parallel::GradBuffer* grads,
                           parallel::GradBuffer* expert_grads) {
    parallel_ = &state;
    grad_buffer_ = grads;
    expert_grad_buffer_ = expert_grads;
    MT_CHECK(grads || state.dp_cp().size() == 1,
             "data and context parallelism need a gradient buffer to reduce the gradients in");
    MT_CHECK(!expert_grads ||
                 (grads && grads->distributed_optimizer() && expert_grads->distributed_optimizer()),
             "an expert gradient buffer is the distributed optimizer's, beside the dense one");
    schedule_ = make_schedule(state.pp().size(), state.config().virtual_stages,
                              state.config().microbatch_group_size);
    dropout_->stream = 100 * uint64_t(state.pp().rank());
    const int64_t per_step = options_.micro_batch_size * data_parallel_size();
    MT_CHECK(options_.global_batch_size % per_step == 0, "--global-batch-size (",
             options_.global_batch_size, ") must be a multiple of --micro-batch-size (",
             options_.micro_batch_size, ") x the data-parallel size (", data_parallel_size(), ")");
}

int64_t Trainer::data_parallel_size() const {
    return parallel_ ? parallel_->dp().size() : 1;
}

int64_t Trainer::data_parallel_rank() const {
    return parallel_ ? parallel_->dp().rank() : 0;
}

Communicator* Trainer::pipeline_group() const {
    return parallel_ && parallel_->pp().size() > 1 ? &parallel_->pp() : nullptr;
}

bool Trainer::context_parallel() const {
    return parallel_ && parallel_->cp().size() > 1;
}

Communicator* Trainer::reporting_group() const {
    return parallel_ && parallel_->dp_cp().size() > 1 ? &parallel_->dp_cp() : nullptr;
}

void Trainer::finalize_grads() {
    // Megatron's _allreduce_word_embedding_grads, here before the data-parallel reduction (the
    // sum is the same, and a sharded optimizer then sees whole grads): tied word embeddings on
    // the first and last pipeline stage get the sum of both stages' grads.
    if (parallel_ && parallel_->embedding() && parallel_->embedding()->size() > 1) {
        Timers::Scope timed(&timers_, "embedding-grads-all-reduce", 1);
        for (nn::Parameter* p : model_.parameters())
            if (p->tied_across_stages) all_reduce_main_grads(*parallel_->embedding(), p->grad);
    }
    if (grad_buffer_) {
        Timers::Scope timed(&timers_, "all-grads-sync", 1);
        grad_buffer_->finish_grad_sync();
    }
    if (!parallel_) return;
    // Experts: each expert's grad summed over the ranks that hold the same expert (Megatron's
    // expert-data-parallel reduction; the dense buffer leaves them out), into this rank's shard
    // with the distributed optimizer.
    if (expert_grad_buffer_) {
        Timers::Scope timed(&timers_, "all-grads-sync", 1);
        expert_grad_buffer_->finish_grad_sync();
    } else if (parallel_->expert_dp().size() > 1) {
        Timers::Scope timed(&timers_, "all-grads-sync", 1);
        all_reduce_grads([](const nn::Parameter& p) { return p.expert; }, parallel_->expert_dp());
    }
    if (parallel_->tp().size() == 1) return;
    Timers::Scope timed(&timers_, "layernorm-grads-all-reduce", 1);
    // Norms on sequence shards saw part of the sequence on each rank, q/k norms part of the
    // heads: sum their grads over the tensor-parallel group (Megatron's
    // _allreduce_layernorm_grads).
    all_reduce_grads([](const nn::Parameter& p) { return p.grad_partial_over_tp; },
                     parallel_->tp());
}

void Trainer::update_expert_bias() {
    std::vector<std::pair<nn::MoeTracker*, size_t>> trackers;  // with their count of counts
    std::vector<double> tokens;
    for (Model* chunk : model_.pipeline_chunks())
        if (nn::MoeTracker* tracker = chunk->moe_tracker()) {
            const std::vector<double> own = tracker->routed_tokens();
            if (own.empty()) continue;
            trackers.emplace_back(tracker, own.size());
            tokens.insert(tokens.end(), own.begin(), own.end());
        }
    if (trackers.empty()) return;
    // Every stage's routers, reduced as one stacked tensor over its own stage's ranks.
    if (parallel_ && parallel_->tp_cp().size() > 1)
        parallel::all_reduce_values(parallel_->tp_cp(), tokens, ReduceOp::sum);
    if (parallel_ && parallel_->dp().size() > 1)
        parallel::all_reduce_values(parallel_->dp(), tokens, ReduceOp::sum);
    size_t at = 0;
    for (const auto& [tracker, n] : trackers) {
        tracker->update_expert_bias(optimizer_.backend(),
                                    std::vector<double>(tokens.begin() + std::ptrdiff_t(at),
                                                        tokens.begin() + std::ptrdiff_t(at + n)));
        at += n;
    }
}

void Trainer::all_reduce_grads(const std::function<bool(const nn::Parameter&)>& which,
                               Communicator& group) {
    std::vector<nn::Parameter*> chosen;
    int64_t n = 0;
    for (nn::Parameter* p : model_.parameters())
        if (which(*p)) {
            chosen.push_back(p);
            n += p->grad.numel();
        }
    if (chosen.empty()) return;
    // One message.
    Backend& backend = optimizer_.backend();
    Tensor flat = backend.empty({n}, chosen[0]->grad.dtype());
    int64_t at = 0;
    for (nn::Parameter* p : chosen) {
        Tensor part = flat.slice(0, at, at + p->grad.numel()).view(p->grad.shape());
        backend.copy(p->grad, part);
        at += p->grad.numel();
    }
    all_reduce_main_grads(group, flat);
    at = 0;
    for (nn::Parameter* p : chosen) {
        backend.copy(flat.slice(0, at, at + p->grad.numel()).view(p->grad.shape()), p->grad);
        at += p->grad.numel();
    }
}

void Trainer::all_reduce_main_grads(Communicator& group, Tensor& grads) const {
    if (options_.main_grad_dtype == grads.dtype()) {
        group.all_reduce(grads, ReduceOp::sum);
        return;
    }
    Tensor wire = cast_float(grads, options_.main_grad_dtype);
    group.all_reduce(wire, ReduceOp::sum);
    grads.copy_from(cast_float(wire, grads.dtype()));
}

std::pair<bool, bool> Trainer::agreed(bool signalled, bool out_of_time) const {
    // Every rank must take the same branch (a save is collective): a signal or the clock seen
    // by one rank stops all, as Megatron's all-reduced exit flags do.
    if (!parallel_ || parallel_->world().size() == 1) return {signalled, out_of_time};
    std::vector<double> flags{double(signalled), double(out_of_time)};
    parallel::all_reduce_values(parallel_->world(), flags, ReduceOp::max);
    return {flags[0] != 0, flags[1] != 0};
}

double Trainer::grad_norm(std::vector<Tensor>& grads) const {
    // Replicated parameters count on tensor-parallel rank 0 only; the distributed optimizer's
    // parameters are disjoint pieces of the buffer, summed over the data-parallel group too.
    std::vector<std::pair<const nn::Parameter*, Tensor>> counted;
    for (nn::Parameter* p : optimizer_.parameters()) {
        grads.push_back(p->grad);
        counted.emplace_back(p, p->grad);
    }
    if (options_.deepspeed_grad_norm && !distributed_optimizer() && parallel_ &&
        parallel_->ep().size() > 1)
        return deepspeed_rank_norm(counted);
    return model_parallel_norm(counted, distributed_optimizer());
}

double Trainer::deepspeed_rank_norm(
    const std::vector<std::pair<const nn::Parameter*, Tensor>>& tensors) const {
    std::vector<Tensor> own;
    for (const auto& [p, t] : tensors)
        if (!p->counted_elsewhere()) own.push_back(t);
    const double n = optim::global_l2_norm(optimizer_.backend(), own);
    std::vector<double> v{n * n};
    parallel::all_reduce_values(parallel_->model_parallel(), v, ReduceOp::sum);
    std::vector<double> mean{std::sqrt(v[0]) / double(parallel_->dp().size())};
    parallel::all_reduce_values(parallel_->dp(), mean, ReduceOp::sum);
    return mean[0];
}

double Trainer::model_parallel_norm(
    const std::vector<std::pair<const nn::Parameter*, Tensor>>& tensors, bool data_parallel) const {
    std::vector<Tensor> dense, experts;
    for (const auto& [p, t] : tensors)
        if (!p->counted_elsewhere()) (p->expert ? experts : dense).push_back(t);
    const double d = optim::global_l2_norm(optimizer_.backend(), dense);
    const double e = optim::global_l2_norm(optimizer_.backend(), experts);
    return std::sqrt(model_parallel_sum(d * d, e * e, data_parallel));
}

bool Trainer::distributed_optimizer() const {
    return grad_buffer_ && grad_buffer_->distributed_optimizer();
}

double Trainer::model_parallel_sum(double dense, double experts, bool data_parallel) const {
    if (!parallel_) return dense + experts;
    std::vector<double> d{dense}, e{experts};
    parallel::all_reduce_values(parallel_->model_parallel(), d, ReduceOp::sum);
    if (data_parallel) parallel::all_reduce_values(grad_buffer_->group(), d, ReduceOp::sum);
    // Each expert-parallel rank holds other experts; with the distributed optimizer each
    // expert-data-parallel rank a shard of them.
    if (data_parallel && expert_grad_buffer_)
        parallel::all_reduce_values(expert_grad_buffer_->group(), e, ReduceOp::sum);
    parallel::all_reduce_values(parallel_->expert_tp_ep(), e, ReduceOp::sum);
    parallel::all_reduce_values(parallel_->pp(), e, ReduceOp::sum);
    return d[0] + e[0];
}

int64_t Trainer::num_zeros_in_grad() const {
    double dense = 0, experts = 0;
    for (nn::Parameter* p : optimizer_.parameters()) {
        if (p->counted_elsewhere()) continue;
        (p->expert ? experts : dense) +=
            double(optimizer_.backend().count_zeros(optimizer_.backend().contiguous(p->grad)));
    }
    return int64_t(model_parallel_sum(dense, experts, distributed_optimizer()));
}

void Trainer::sync_fp8_params() {
    if (!options_.fp8_param_gather) return;
    MT_CHECK(distributed_optimizer(), "--fp8-param-gather needs the distributed optimizer");
    Backend& backend = optimizer_.backend();
    parallel::GradBuffer& buffer = *grad_buffer_;
    if (!fp8_mains_.defined()) fp8_mains_ = backend.zeros({buffer.grads().numel()}, DType::f32);
    const std::vector<parallel::GradBuffer::ShardPiece>& pieces = buffer.shard();
    for (size_t i = 0; i < pieces.size(); ++i) {
        const Tensor& master = optimizer_.masters()[i];
        MT_CHECK(master.defined(), "--fp8-param-gather: ", pieces[i].param->name,
                 " has no f32 main param");
        Tensor dst = buffer.view(fp8_mains_, pieces[i]);
        backend.copy(master, dst);
    }
    buffer.all_gather_shards(fp8_mains_);
    for (nn::Parameter* p : model_.parameters()) {
        if (!p->fp8) continue;
        MT_CHECK(!p->expert, "--fp8-param-gather: not supported yet: FP8 MoE experts");
        p->fp8_main = buffer.view(fp8_mains_, *p);
        // The FP8 weight read back: quantized with its delayed scale (TE's
        // cast_master_weights_to_fp8 uses the weight quantizer's), or its current one.
        backend.cast(
            p->fp8_scale
                ? nn::fp8_quantized(backend, p->fp8_main, *p->fp8_scale, ops::Fp8Type::e4m3)
                : nn::fp8_current_scaling(backend, p->fp8_main, ops::Fp8Type::e4m3),
            p->value);
    }
}

double Trainer::params_norm() const {
    // The whole model on every data-parallel rank (gathered after a distributed update). A bf16
    // run counts the f32 masters, as Megatron's calc_params_l2_norm reads param.main_param.
    std::map<const nn::Parameter*, Tensor> masters;
    for (size_t i = 0; i < optimizer_.parameters().size(); ++i)
        if (optimizer_.masters()[i].defined() &&
            optimizer_.parameters()[i]->value.dtype() == DType::bf16)
            masters[optimizer_.parameters()[i]] = optimizer_.masters()[i];
    std::vector<std::pair<const nn::Parameter*, Tensor>> values;
    for (nn::Parameter* p : model_.parameters()) {
        auto it = masters.find(p);
        values.emplace_back(p, it != masters.end() ? it->second : p->value);
    }
    return model_parallel_norm(values, false);
}

uint64_t Trainer::dropout_seed() const {
    return dropout_->seed;
}
uint64_t Trainer::dropout_offset() const {
    return dropout_->offset;
}
void Trainer::set_dropout_rng(uint64_t seed, uint64_t offset) {
    dropout_->seed = seed;
    dropout_->offset = offset;
}

struct Trainer::StepPass {
    LossAccumulator accumulated;
    std::string per_token_term;  // --calculate-per-token-loss: the one term it divides by
    int64_t consumed = 0;        // consumed_train_ after the step
};

Trainer::StepPass Trainer::forward_backward_pass(const data::SampleDataset& data,
                                                 int64_t micro_batches) {
    if (grad_buffer_) {
        grad_buffer_->zero_grads();
        if (expert_grad_buffer_)
            expert_grad_buffer_->zero_grads();
        else
            for (nn::Parameter* p : model_.parameters())  // the experts live outside the buffer
                if (p->expert) optimizer_.backend().fill(p->grad, 0.0);
    } else {
        optimizer_.zero_grad();
    }
    Backend& backend = optimizer_.backend();
    data::PretrainingLoader loader(data, options_.micro_batch_size, int(data_parallel_rank()),
                                   int(data_parallel_size()), consumed_train_,
                                   options_.loader_order);
    StepPass pass;
    ForwardBackward work{model_, *dropout_};
    work.micro_batches = micro_batches;
    work.micro_batch_size = options_.micro_batch_size;
    work.pipeline = pipeline_group();
    if (trace_) trace_->set_iteration(iteration_ + 1);
    work.trace = trace_.get();
    work.timers = &timers_;
    work.next_batch = batches_of(loader, "training");
    // The curriculum's first positions (pretrain_gpt.py's get_batch truncation).
    if (curriculum_ && step_seqlen_ < options_.tokens_per_sample) {
        work.seq_length = step_seqlen_;
        work.next_batch = [next = std::move(work.next_batch), length = step_seqlen_] {
            Batch batch = next();
            for (const char* key :
                 {"tokens", "labels", "loss_mask", "position_ids", "document_start"})
                if (auto it = batch.find(key); it != batch.end())
                    it->second = it->second.slice(1, 0, length).contiguous();
            return batch;
        };
    }
    // --grad-reduce-in-bf16: Megatron's main_grad buffer is bf16, so what the micro-batches have
    // accumulated is rounded to bf16 after each backward.
    if (options_.main_grad_dtype == DType::bf16)
        work.after_backward = [&backend](Model& chunk) {
            for (nn::Parameter* p : chunk.parameters()) round_to_bf16(backend, p->grad);
        };
    // Grads are final in the last micro-batch's backward: data parallelism may start reducing
    // them then (Megatron's no_sync for the others). Weights tied across pipeline stages wait
    // for finalize_grads, which first sums them over the stages.
    work.before_last_backward = [&](Model& chunk) {
        if (grad_buffer_)
            chunk.set_grad_ready_hook([this](const nn::Parameter& p) {
                if (p.tied_across_stages) return;
                if (!p.expert)
                    grad_buffer_->grad_ready(p);
                else if (expert_grad_buffer_)
                    expert_grad_buffer_->grad_ready(p);
            });
    };
    work.loss_grads = [&](const Losses& losses) {
        std::vector<double> counts;
        bool validated = false;
        for (const auto& [sum, count] : accumulate(pass.accumulated, backend, losses)) {
            if (!validated) validate_loss(sum);  // the model's own loss (Megatron's loss_func)
            validated = true;
            counts.push_back(count);
        }
        // Context parallelism: each rank holds part of every sequence; the micro-batch's mean
        // is over all of its tokens (the ranks' gradients are summed like data parallelism's).
        if (context_parallel()) parallel::all_reduce_values(parallel_->cp(), counts, ReduceOp::sum);
        std::vector<Tensor> dterms;
        for (size_t i = 0; i < losses.size(); ++i) {
            const LossTerm& term = losses[i];
            // Megatron backpropagates each micro-batch's mean, divided by the micro-batches,
            // and by the data-parallel size: the ranks' gradients are then summed into the mean.
            // With --calculate-per-token-loss the loss sum, divided by all tokens after the sum.
            // (Auxiliary terms follow the main one: multi-token prediction's sums join the
            // gradient before the same division by all tokens, as Megatron's MTPLossAutoScaler.)
            if (options_.calculate_per_token_loss && !term.auxiliary) {
                const bool other = !pass.per_token_term.empty() && pass.per_token_term != term.name;
                MT_CHECK(!other && term.reporting == LossTerm::Reporting::token_weighted,
                         "--calculate-per-token-loss needs a model with one token-weighted loss; "
                         "this one reports \"",
                         term.name, "\"", other ? " beside \"" + pass.per_token_term + "\"" : "");
                pass.per_token_term = term.name;
            }
            const double seed =
                options_.calculate_per_token_loss
                    ? 1.0
                    : counts[i] * double(micro_batches) * double(data_parallel_size());
            // fp16: the loss scaled up so its small gradients stay representable.
            Tensor dvalues = backend.empty(term.values.shape(), term.values.dtype());
            backend.scale(term.mask,
                          seed > 0 ? float(loss_scale() * term.grad_weight / seed) : 0.0f, dvalues);
            dterms.push_back(std::move(dvalues));
        }
        return dterms;
    };
    // Megatron's MoEAuxLossAutoScaler scale: the routers' losses are backpropagated with the
    // main loss's scale per micro-batch (per token: the loss scale alone).
    const double aux_grad_scale =
        options_.calculate_per_token_loss
            ? loss_scale()
            : loss_scale() / (double(micro_batches) * double(data_parallel_size()));
    for (Model* chunk : model_.pipeline_chunks())
        if (nn::MoeTracker* tracker = chunk->moe_tracker()) tracker->set_grad_scale(aux_grad_scale);
    {
        Timers::Scope timed(&timers_, "forward-backward", 1);
        const auto begin = ScheduleTrace::Clock::now();
        schedule_->forward_backward(work);
        // The whole schedule: with its forwards and backwards, the pipeline bubble.
        if (trace_) trace_->record("forward-backward", -1, -1, begin, ScheduleTrace::Clock::now());
    }
    model_.set_grad_ready_hook(nullptr);
    // Each stage advances its dropout counters by its own layers' sites; all go on from the
    // furthest, so that the one offset a checkpoint keeps resumes every stage exactly (a double
    // holds offsets up to 2^53 exactly).
    if (Communicator* pp = pipeline_group()) {
        std::vector<double> offset{double(dropout_->offset)};
        parallel::all_reduce_values(*pp, offset, ReduceOp::max);
        dropout_->offset = uint64_t(offset[0]);
    }
    // Without a gradient buffer the model's grads are one bucket for the re-run engine (a
    // buffer's buckets are checked as they start their reduction).
    if (!grad_buffer_ && validates_grads()) {
        double squares = 0;
        for (nn::Parameter* p : model_.parameters()) squares += backend.dot(p->grad, p->grad);
        validate_grads(0, std::sqrt(squares));
    }
    finalize_grads();
    pass.consumed = loader.consumed_samples();
    return pass;
}

bool Trainer::validates_nan() const {
    return options_.check_for_nan && options_.rerun.mode == RerunMode::validate_results;
}

void Trainer::validate_finite(double value, const std::string& what, double tolerance) {
    if (!validates_nan()) return;
    rerun_->validate(
        value, [](double v) { return std::isnan(v); }, "found NaN in " + what, tolerance, true);
    rerun_->validate(
        value, [](double v) { return std::isinf(v); }, "found Inf in " + what, tolerance, true);
}

void Trainer::validate_loss(double loss_sum) {
    validate_finite(loss_sum, "local forward loss calculation", 0.0);
    if (options_.check_for_spiky_loss)
        rerun_->validate(
            loss_sum,
            [this](double v) { return rerun_->is_unexpectedly_large(v, kSpikyFactor, "loss"); },
            "Spiky loss", 0.0, false);
}

bool Trainer::validates_grads() const {
    return options_.check_for_large_grads || validates_nan();
}

void Trainer::validate_grads(int64_t bucket, double norm) {
    const std::string where = " for bucket #" + std::to_string(bucket) +
                              " in backward pass before data-parallel communication collective";
    validate_finite(norm, "local grad norm" + where, 1e-3);
    if (options_.check_for_large_grads)
        rerun_->validate(
            norm,
            [this](double v) { return rerun_->is_unexpectedly_large(v, kSpikyFactor, "grads"); },
            "found unexpected large grads in bucket #" + std::to_string(bucket) +
                " in backward pass before data-parallel communication collective",
            1e-3, false);
}

Trainer::IterationResult Trainer::train_step(const data::SampleDataset& data) {
    const int64_t per_step = options_.micro_batch_size * data_parallel_size();
    const int64_t global_batch = current_global_batch_size(options_, consumed_train_);
    // Megatron's consistency check of a ramping batch.
    MT_CHECK(global_batch % per_step == 0, "current global batch size (", global_batch,
             ") is not divisible by micro-batch-size (", options_.micro_batch_size,
             ") times data parallel size (", data_parallel_size(), ")");
    const int64_t micro_batches = global_batch / per_step;
    // What a re-run of the step starts from again: the dropout stream and the MoE routers'
    // counts (the data position is consumed_train_, which moves after the passes).
    const uint64_t dropout_at_start = dropout_->offset;
    // (Only a validating run re-runs steps.)
    std::vector<std::pair<nn::MoeTracker*, nn::MoeTracker>> trackers_at_start;
    if (rerun_->mode() == RerunMode::validate_results)
        for (Model* chunk : model_.pipeline_chunks())
            if (nn::MoeTracker* tracker = chunk->moe_tracker())
                trackers_at_start.emplace_back(tracker, *tracker);
    auto restore = [&] {
        dropout_->offset = dropout_at_start;
        for (auto& [tracker, at_start] : trackers_at_start) *tracker = at_start;
    };
    std::optional<StepPass> pass;
    for (auto p = rerun_->next_pass(iteration_ + 1); p != RerunStateMachine::Pass::done;
         p = rerun_->next_pass(iteration_ + 1)) {
        if (p == RerunStateMachine::Pass::again) restore();
        pass.emplace(forward_backward_pass(data, micro_batches));
    }
    IterationResult r;
    if (const RerunStateMachine::Verdict verdict = rerun_->verdict(); verdict.exit) {
        restore();  // a checkpoint holds the state before the step
        r.stop = verdict;
        return r;
    }
    LossAccumulator& accumulated = pass->accumulated;
    const std::string& per_token_term = pass->per_token_term;
    update_expert_bias();
    accumulated.reduce(reporting_group());
    // Megatron's finalize_model_grads(num_tokens): grads *= 1 / (the batch's tokens, all ranks),
    // the count the last pipeline stage's losses hold broadcast to the other stages.
    if (options_.calculate_per_token_loss) {
        std::vector<double> tokens{per_token_term.empty() ? 0.0
                                                          : accumulated.count(per_token_term)};
        if (Communicator* pp = pipeline_group())
            parallel::all_reduce_values(*pp, tokens, ReduceOp::sum);  // zero but on the last
        if (tokens[0] > 0) scale_grads(float(1.0 / tokens[0]));
    }
    r.global_batch_size = global_batch * options_.sample_multiplier;
    r.losses = accumulated.reported();
    for (const auto& [name, value] : r.losses) r.loss += value;
    MT_CHECK(!options_.check_for_nan || std::isfinite(r.loss),
             "NaN or Inf in the loss at iteration ", iteration_ + 1);
    accumulate_named(r.losses, auxiliary_losses(micro_batches, r));
    accumulate_named(r.losses, accumulated.reported_auxiliary());
    consumed_train_ = pass->consumed;
    if (scaler_ && !unscale_grads()) {
        r.skipped = true;  // no update and no learning-rate step, as Megatron skips it
        return r;
    }

    Timers::Scope optimizer(&timers_, "optimizer", 1);
    std::vector<Tensor> grads;
    double norm = 0, clip = 1.0;
    {
        Timers::Scope timed(&timers_, "optimizer-clip-main-grad", 1);
        norm = grad_norm(grads);
        MT_CHECK(!options_.check_for_nan || std::isfinite(norm),
                 "NaN or Inf in the gradients at iteration ", iteration_ + 1);
        // Applied by the optimizer as it reads the gradients.
        if (options_.clip_grad > 0) clip = optim::clip_coefficient(options_.clip_grad, norm);
    }
    r.grad_norm = norm;
    if (options_.log_num_zeros_in_grad) {
        Timers::Scope timed(&timers_, "optimizer-count-zeros", 1);
        r.num_zeros = num_zeros_in_grad();
    }
    {
        Timers::Scope timed(&timers_, "optimizer-inner-step", 1);
        optimizer_.step(scheduler_.lr(), scheduler_.weight_decay(), decoupled_lr(), clip, mup_lr());
    }
    if (distributed_optimizer()) {
        Timers::Scope timed(&timers_, "params-all-gather", 1);
        grad_buffer_->gather_params();
        if (expert_grad_buffer_) expert_grad_buffer_->gather_params();
        sync_fp8_params();
    }
    if (options_.log_params_norm) r.params_norm = params_norm();
    // Megatron-DeepSpeed counts this iteration's tokens after the schedule's step.
    scheduler_.step(global_batch * options_.sample_multiplier, consumed_tokens_);
    return r;
}

NamedLosses Trainer::auxiliary_losses(int64_t micro_batches, IterationResult& r) {
    // Each loss per layer of the whole model, summed over this rank's chunks (each adds its
    // layers' entries; the others are 0).
    std::vector<std::pair<std::string, std::vector<double>>> layers;
    int64_t report_layers = 0;
    for (Model* chunk : model_.pipeline_chunks()) {
        nn::MoeTracker* tracker = chunk->moe_tracker();
        if (!tracker) continue;
        report_layers = tracker->report_layers();
        auto taken = tracker->take();
        if (layers.empty()) {
            layers = std::move(taken);
            continue;
        }
        for (size_t i = 0; i < layers.size(); ++i)
            for (size_t l = 0; l < layers[i].second.size(); ++l)
                layers[i].second[l] += taken[i].second[l];
    }
    if (layers.empty()) return {};
    // Megatron's track_moe_metrics: each layer's value summed over the pipeline stages, the
    // micro-batches averaged; here also averaged over the data-parallel ranks (Megatron prints
    // the last rank's), so that any layout reports the one-process value.
    std::vector<double> values;
    for (const auto& [name, per_layer] : layers)
        values.insert(values.end(), per_layer.begin(), per_layer.end());
    if (Communicator* pp = pipeline_group())
        parallel::all_reduce_values(*pp, values, ReduceOp::sum);
    if (parallel_ && parallel_->dp().size() > 1)
        parallel::all_reduce_values(parallel_->dp(), values, ReduceOp::sum);
    const double scale = 1.0 / double(micro_batches) / double(data_parallel_size());
    NamedLosses out;
    size_t at = 0;
    for (auto& [name, per_layer] : layers) {
        double sum = 0;
        for (double& v : per_layer) sum += (v = values[at++] * scale);
        out.emplace_back(name, sum / double(report_layers));
    }
    if (options_.moe_per_layer_logging) r.moe_per_layer = std::move(layers);
    return out;
}

float Trainer::loss_scale() const {
    return scaler_ ? scaler_->scale() : 1.0f;
}

void Trainer::scale_grads(float factor) {
    Backend& backend = optimizer_.backend();
    for (nn::Parameter* p : optimizer_.parameters()) backend.scale(p->grad, factor, p->grad);
}

std::optional<double> Trainer::decoupled_lr() const {
    if (!options_.decoupled_lr) return std::nullopt;
    // Megatron's _update_min_and_max_lr_in_param_groups: the floor defaults to --min-lr.
    return scheduler_.lr(*options_.decoupled_lr,
                         options_.decoupled_min_lr.value_or(scheduler_.config().min_lr));
}

std::optional<double> Trainer::mup_lr() const {
    const optim::OptimizerConfig& c = optimizer_.config();
    if (c.mup_width_mult == 1.0) return std::nullopt;
    // get_mup_config_overrides: the moved groups' max and min lr times 1 / width (Adam) or
    // width (SGD), which the schedule then follows.
    const double mult =
        c.type == optim::OptimizerType::sgd ? c.mup_width_mult : 1.0 / c.mup_width_mult;
    const auto& schedule = scheduler_.config();
    return scheduler_.lr(schedule.max_lr * mult, schedule.min_lr * mult);
}

bool Trainer::unscale_grads() {
    // Megatron's _unscale_main_grads_and_check_for_nan: grads *= 1/scale (the reciprocal taken
    // in double, then f32), an inf or NaN anywhere (on any model-parallel rank) skips the step.
    Backend& backend = optimizer_.backend();
    scale_grads(float(1.0 / double(scaler_->scale())));
    bool found_inf = false;
    for (nn::Parameter* p : optimizer_.parameters()) {
        // A double sum of f32 values is finite exactly when they all are.
        found_inf = found_inf || !std::isfinite(backend.sum(p->grad));
    }
    const double inf = found_inf ? 1.0 : 0.0;
    found_inf = model_parallel_sum(inf, inf, distributed_optimizer()) > 0;
    scaler_->update(found_inf);
    return !found_inf;
}

StopReason Trainer::train(const data::SampleDataset& train_data,
                          const data::SampleDataset* valid_data) {
    if (!rerun_) {
        Communicator* world =
            parallel_ && parallel_->world().size() > 1 ? &parallel_->world() : nullptr;
        // Megatron's Python random stream, which its injection draws from: seed + 100 x the
        // pipeline rank.
        const uint64_t pp_rank = parallel_ ? uint64_t(parallel_->pp().rank()) : 0;
        rerun_ = std::make_unique<RerunStateMachine>(
            options_.rerun, world, parallel_ ? parallel_->world().rank() : 0,
            options_.seed + 100 * pp_rank, [](const std::string& line) {
                std::printf("%s\n", line.c_str());
                std::fflush(stdout);
            });
        for (parallel::GradBuffer* buffer : {grad_buffer_, expert_grad_buffer_})
            if (buffer && validates_grads())
                buffer->set_before_reduce([this](int64_t bucket, const Tensor& grads) {
                    // Megatron's check_grads: the bucket's local L2 norm, before the reduction.
                    validate_grads(bucket, std::sqrt(optimizer_.backend().dot(grads, grads)));
                });
    }
    sync_fp8_params();  // from the initial or restored main params
    const StopReason reason = run_iterations(train_data, valid_data);
    if (trace_) {
        const int rank = parallel_ ? parallel_->world().rank() : 0;
        trace_->write(std::filesystem::path(options_.schedule_trace_dir) /
                          ("schedule_rank" + std::to_string(rank) + ".json"),
                      rank, parallel_ ? parallel_->pp().rank() : 0);
    }
    return reason;
}

StopReason Trainer::run_iterations(const data::SampleDataset& train_data,
                                   const data::SampleDataset* valid_data) {
    const auto start = Clock::now();
    auto interval_start = start;
    NamedLosses interval_losses;  // each term summed over the interval's iterations
    int64_t interval_iters = 0, interval_skipped = 0, interval_nan = 0;
    while (iteration_ < options_.train_iters &&
           (!options_.train_tokens || consumed_tokens_ < *options_.train_tokens)) {
        // Megatron's dummy_train_step: the batch is read past, nothing else happens.
        if (std::find(options_.iterations_to_skip.begin(), options_.iterations_to_skip.end(),
                      iteration_ + 1) != options_.iterations_to_skip.end()) {
            const int64_t batch = current_global_batch_size(options_, consumed_train_);
            consumed_train_ += batch;
            consumed_tokens_ += batch * options_.tokens_per_sample;
            skipped_train_ += batch;
            ++iteration_;
            continue;
        }
        if (curriculum_) {  // Megatron-DeepSpeed's update_difficulty(iteration + 1)
            step_seqlen_ = curriculum_->update(iteration_ + 1);
            MT_CHECK(step_seqlen_ >= 1, "the curriculum gives sequence length ", step_seqlen_,
                     " at iteration ", iteration_ + 1);
        }
        IterationResult r = train_step(train_data);
        if (r.stop) {  // the re-run engine's: the state before this step saved, if it asks
            if (r.stop->checkpoint && save_) {
                print_(
                    "the checkpoint holds no re-run state (not supported yet): a job resumed "
                    "from it runs iteration " +
                    std::to_string(iteration_ + 1) + " again as a normal step");
                save_();
            }
            exit_code_ = r.stop->exit_code;
            return StopReason::result_validation;
        }
        ++iteration_;
        consumed_tokens_ += r.global_batch_size / options_.sample_multiplier * step_seqlen_;
        losses_.push_back(r.loss);
        grad_norms_.push_back(r.grad_norm.value_or(std::nan("")));
        // A skipped iteration's loss stays out of the interval's mean, as in Megatron's log.
        if (!r.skipped) accumulate_named(interval_losses, r.losses);
        interval_skipped += r.skipped;
        // Megatron's training_log: an iteration whose loss is NaN or Inf.
        interval_nan += !r.skipped && !std::isfinite(r.loss);
        ++interval_iters;
        if (tensorboard_) {
            tensorboard_->add_scalar("learning-rate", float(scheduler_.lr()), iteration_);
            if (auto lr = decoupled_lr())
                tensorboard_->add_scalar("decoupled-learning-rate", float(*lr), iteration_);
            if (skipped_train_ > 0)
                tensorboard_->add_scalar("skipped-train-samples", float(skipped_train_),
                                         iteration_);
            tensorboard_->add_scalar("batch-size", float(r.global_batch_size), iteration_);
            for (const auto& [name, value] : r.losses)
                tensorboard_->add_scalar(name, float(value), iteration_);
            for (const auto& [name, per_layer] : r.moe_per_layer)
                for (size_t i = 0; i < per_layer.size(); ++i)
                    tensorboard_->add_scalar("moe/" + name + "_layer_" + std::to_string(i),
                                             float(per_layer[i]), iteration_);
            tensorboard_->add_scalar("loss-scale", loss_scale(), iteration_);
            if (r.grad_norm) tensorboard_->add_scalar("grad-norm", float(*r.grad_norm), iteration_);
            if (r.num_zeros) tensorboard_->add_scalar("num-zeros", float(*r.num_zeros), iteration_);
            if (r.params_norm)
                tensorboard_->add_scalar("params-norm", float(*r.params_norm), iteration_);
            if (options_.log_memory_to_tensorboard) {
                const ProcessMemory m = process_memory();
                tensorboard_->add_scalar("mem-reserved-bytes", float(m.resident_bytes), iteration_);
                tensorboard_->add_scalar("mem-allocated-bytes", float(m.resident_bytes),
                                         iteration_);
                tensorboard_->add_scalar("mem-max-allocated-bytes", float(m.peak_resident_bytes),
                                         iteration_);
            }
        }
        if (options_.log_interval > 0 && iteration_ % options_.log_interval == 0) {
            const auto now = Clock::now();
            IterationLog log;
            log.timestamp = now_timestamp();
            log.iteration = iteration_;
            log.train_iters = options_.train_iters;
            log.consumed_samples = options_.log_consumed_samples ? consumed_train_ : 0;
            log.skipped_samples = skipped_train_;
            log.elapsed_ms_per_iteration =
                std::chrono::duration<double, std::milli>(now - interval_start).count() /
                double(interval_iters);
            // Megatron's throughput: the model's FLOPs per iteration over the time, per rank.
            const double ranks = parallel_ ? double(parallel_->world().size()) : 1.0;
            const double throughput = model_.training_flops(r.global_batch_size) /
                                      (log.elapsed_ms_per_iteration / 1e3 * 1e12 * ranks);
            if (options_.log_throughput) log.throughput = throughput;
            log.learning_rate = scheduler_.lr();
            log.decoupled_learning_rate = decoupled_lr();
            log.global_batch_size = r.global_batch_size;
            if (interval_iters > interval_skipped)
                for (const auto& [name, sum] : interval_losses)
                    log.losses.emplace_back(name, sum / double(interval_iters - interval_skipped));
            log.loss_scale = loss_scale();
            log.skipped_iterations = interval_skipped;
            log.nan_iterations = interval_nan;
            log.grad_norm = r.grad_norm;
            log.num_zeros = r.num_zeros;
            log.params_norm = r.params_norm;
            if (curriculum_) log.curriculum_seqlen = step_seqlen_;
            print_(format_iteration_line(log));
            // Megatron reports the memory once, after the first logged iteration (the optimizer
            // state exists by then).
            if (!memory_reported_) {
                print_(format_memory_report(parallel_ ? parallel_->world().rank() : 0, iteration_,
                                            process_memory()));
                memory_reported_ = true;
            }
            // --timing-log-level: collective over the world, printed by the last rank.
            const std::string timers =
                timers_.log_string(training_log_timers(), double(options_.log_interval),
                                   parallel_ ? &parallel_->world() : nullptr);
            if (!timers.empty()) print_(timers);
            if (tensorboard_) {
                tensorboard_->add_scalar("iteration-time",
                                         float(log.elapsed_ms_per_iteration / 1e3), iteration_);
                tensorboard_->add_scalar("throughput", float(throughput), iteration_);
                tensorboard_->flush();
            }
            interval_start = now;
            interval_losses.clear();
            interval_iters = interval_skipped = interval_nan = 0;
        }
        if (valid_data && options_.eval_interval > 0 && options_.eval_iters > 0 &&
            iteration_ % options_.eval_interval == 0)
            print_evaluation("iteration " + std::to_string(iteration_),
                             evaluate(*valid_data, consumed_valid_), true);
        // Megatron's checkpoint_and_decide_exit: signal, regular save, duration, interval.
        const bool signalled = stop_ && stop_->load();
        const bool out_of_time =
            options_.exit_duration_in_mins &&
            std::chrono::duration<double>(Clock::now() - start).count() / 60.0 >
                *options_.exit_duration_in_mins;
        const auto [stop_now, time_up] = agreed(signalled, out_of_time);
        if (stop_now) {
            if (save_) save_();
            return StopReason::signal;
        }
        bool saved = false;
        if (save_ && options_.save_interval && *options_.save_interval > 0 &&
            iteration_ % *options_.save_interval == 0) {
            save_();
            saved = true;
        }
        if (time_up) {
            if (save_ && !saved) save_();
            return StopReason::exit_duration;
        }
        if (options_.exit_interval && iteration_ % *options_.exit_interval == 0) {
            if (save_ && !saved) save_();
            return StopReason::exit_interval;
        }
        // Megatron-DeepSpeed's kill switch, last in its loop (any rank seeing the file stops all).
        if (!options_.kill_switch_file.empty() &&
            agreed(std::filesystem::exists(options_.kill_switch_file), false).first) {
            if (save_ && !saved) save_();
            return StopReason::kill_switch;
        }
        if (after_iteration_) after_iteration_();
    }
    return StopReason::finished;
}

NamedLosses Trainer::evaluate(const data::SampleDataset& dataset, int64_t& consumed) {
    const int64_t micro_batch_size =
        options_.eval_micro_batch_size ? options_.eval_micro_batch_size : options_.micro_batch_size;
    const int64_t global_batch_size = options_.eval_global_batch_size
                                          ? options_.eval_global_batch_size
                                          : options_.global_batch_size;
    const int64_t micro_batches = global_batch_size / (micro_batch_size * data_parallel_size());
    nn::DropoutContext no_dropout;
    no_dropout.training = false;
    data::PretrainingLoader loader(dataset, micro_batch_size, int(data_parallel_rank()),
                                   int(data_parallel_size()), consumed, options_.loader_order);
    LossAccumulator accumulated;
    Backend& backend = optimizer_.backend();
    ForwardBackward work{model_, no_dropout};
    work.micro_batches = options_.eval_iters * micro_batches;
    work.micro_batch_size = micro_batch_size;
    work.pipeline = pipeline_group();
    work.forward_only = true;
    work.next_batch = batches_of(loader, data::split_name(dataset.split()));
    work.loss_grads = [&](const Losses& losses) {
        accumulate(accumulated, backend, losses);
        return std::vector<Tensor>{};
    };
    schedule_->forward_backward(work);
    consumed = loader.consumed_samples();
    accumulated.reduce(reporting_group());
    return accumulated.reported();
}

void Trainer::print_evaluation(const std::string& prefix, const NamedLosses& losses,
                               bool to_tensorboard) {
    print_(format_evaluation_block(prefix, losses));
    if (to_tensorboard && tensorboard_) {
        for (const auto& [name, loss] : losses) {
            tensorboard_->add_scalar(name + " validation", float(loss), iteration_);
            tensorboard_->add_scalar(name + " validation ppl",
                                     float(std::exp(std::min(20.0, loss))), iteration_);
        }
        tensorboard_->flush();
    }
}

}  // namespace mt::train
