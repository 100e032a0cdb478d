// megatron/core/pipeline_parallel/schedules.py (core_v0.13.0): forward_backward_no_pipelining,
// forward_backward_pipelining_without_interleaving and _with_interleaving. The pipelined
// schedules run Megatron's order of forwards and backwards (pipeline_order) as a dataflow: each
// stage sends its outputs asynchronously as soon as they exist and waits only for the inputs it
// needs next, whose receives are posted ahead, so the exchanges overlap the compute (Megatron's
// --overlap-p2p-communication) and no pairing of sends with receives can deadlock.
#include <deque>
#include <map>
#include <utility>

#include "mt/communicator.h"
#include "mt/error.h"
#include "mt/parallel.h"
#include "mt/train/schedule_trace.h"
#include "mt/train/timers.h"

namespace mt {

namespace {

// One step of the schedule while alive: timed for --timing-log-level under Megatron's `timer`
// and, with a trace, recorded as `phase` of `micro_batch` (in model chunk `chunk`, -1: none).
class Step {
  public:
    using Clock = train::ScheduleTrace::Clock;
    Step(train::Timers* timers, train::ScheduleTrace* trace, const char* timer, const char* phase,
         int64_t micro_batch, int chunk = -1)
        : timed_(timers, timer, 2),
          trace_(trace),
          phase_(phase),
          micro_batch_(micro_batch),
          chunk_(chunk),
          begin_(Clock::now()) {}
    ~Step() {
        if (trace_) trace_->record(phase_, micro_batch_, chunk_, begin_, Clock::now());
    }
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

  private:
    train::Timers::Scope timed_;
    train::ScheduleTrace* trace_;
    const char* phase_;
    int64_t micro_batch_;
    int chunk_;
    Clock::time_point begin_;
};

// The next micro-batch, timed as Megatron's batch-generator.
Batch next_batch(const ForwardBackward& w) {
    train::Timers::Scope timed(w.timers, "batch-generator", 2);
    return w.next_batch();
}

class NoPipelining final : public ParallelStrategy {
  public:
    std::string_view name() const override { return "no-pipelining"; }
    void forward_backward(const ForwardBackward& w) const override {
        for (int64_t m = 0; m < w.micro_batches; ++m) {
            const Batch batch = next_batch(w);
            std::unique_ptr<Activations> saved;
            std::vector<Tensor> grads;
            if (m == 0) w.model.set_is_first_microbatch();
            {
                Step step(w.timers, w.trace, "forward-compute", "forward", m);
                grads = w.loss_grads(
                    w.model.forward(batch, w.dropout, w.forward_only ? nullptr : &saved));
            }
            if (w.forward_only) continue;
            if (m == w.micro_batches - 1 && w.before_last_backward) w.before_last_backward(w.model);
            {
                Step step(w.timers, w.trace, "backward-compute", "backward", m);
                w.model.backward(grads, *saved);
            }
            if (w.after_backward) w.after_backward(w.model);
        }
    }
};

// A stage's exchanges with its neighbours in the ring of stages (with model chunks the last
// stage feeds the first stage's next chunk). A message is tagged with the micro-batch, the
// receiving chunk and its direction, so it meets its receive whatever the order of the two.
class StageLinks {
  public:
    StageLinks(Communicator& pp, StageTensor io, int chunks, const ForwardBackward& w)
        : pp_(pp), io_(std::move(io)), chunks_(chunks), trace_(w.trace), timers_(w.timers) {}
    ~StageLinks() {
        // An error elsewhere: the sends still in flight must end before their tensors go.
        for (auto& [tensor, request] : sends_) try {
                request->wait();
            } catch (...) {
            }
    }
    StageLinks(const StageLinks&) = delete;
    StageLinks& operator=(const StageLinks&) = delete;

    int stage() const { return pp_.rank(); }
    int stages() const { return pp_.size(); }
    // Whether chunk `c` here holds the model's first or last layers.
    bool model_first(int c) const { return stage() == 0 && c == 0; }
    bool model_last(int c) const { return stage() == stages() - 1 && c == chunks_ - 1; }

    // Posts the receive of `slot`'s input (its hidden states in a forward, the gradient of its
    // output in a backward) unless posted or not needed.
    void expect(const PipelineSlot& slot) {
        if (slot.forward ? model_first(slot.chunk) : model_last(slot.chunk)) return;
        const int key = tag(slot.micro_batch, slot.chunk, slot.forward);
        if (receives_.count(key)) return;
        const int from = slot.forward ? previous() : next();
        Receive& r = receives_[key];
        r.tensor = Tensor::empty(io_.shape, io_.dtype);
        r.request = pp_.irecv(r.tensor, from, key);
    }
    // `slot`'s input, waited for (Megatron's forward-recv and backward-recv timers).
    Tensor receive(const PipelineSlot& slot) {
        expect(slot);
        auto it = receives_.find(tag(slot.micro_batch, slot.chunk, slot.forward));
        Step step(timers_, trace_, slot.forward ? "forward-recv" : "backward-recv", "wait",
                  slot.micro_batch, chunk_in_trace(slot.chunk));
        it->second.request->wait();
        Tensor t = std::move(it->second.tensor);
        receives_.erase(it);
        return t;
    }
    // Sends `slot`'s output (a forward's hidden states on, a backward's input gradient back)
    // to the stage whose chunk takes it next, unless this is the model's end that way.
    void send(const PipelineSlot& slot, const Tensor& t) {
        if (slot.forward ? model_last(slot.chunk) : model_first(slot.chunk)) return;
        Step step(timers_, trace_, slot.forward ? "forward-send" : "backward-send", "send",
                  slot.micro_batch, chunk_in_trace(slot.chunk));
        MT_CHECK(t.shape() == io_.shape && t.dtype() == io_.dtype, "pipeline: a stage sends ",
                 t.describe(), ", its neighbour expects ", shape_str(io_.shape), " ",
                 dtype_name(io_.dtype));
        // Past the ring's end the neighbour's next (forward) or previous (backward) chunk.
        int chunk = slot.chunk;
        if (slot.forward && stage() == stages() - 1) ++chunk;
        if (!slot.forward && stage() == 0) --chunk;
        Tensor out = t.contiguous();
        auto request = pp_.isend(out, slot.forward ? next() : previous(),
                                 tag(slot.micro_batch, chunk, slot.forward));
        sends_.emplace_back(std::move(out), std::move(request));
    }
    // Waits for every send (the iteration's end).
    void finish() {
        for (auto& [tensor, request] : sends_) request->wait();
        sends_.clear();
    }
    int chunk_in_trace(int c) const { return chunks_ > 1 ? c : -1; }

  private:
    struct Receive {
        Tensor tensor;
        std::unique_ptr<CommRequest> request;
    };
    int next() const { return (stage() + 1) % stages(); }
    int previous() const { return (stage() + stages() - 1) % stages(); }
    // Unique among the messages in flight (MPI guarantees tags up to 32767).
    int tag(int64_t micro_batch, int chunk, bool forward) const {
        return int(((micro_batch * chunks_ + chunk) * 2 + (forward ? 0 : 1)) % 32768);
    }

    Communicator& pp_;
    StageTensor io_;
    int chunks_;
    train::ScheduleTrace* trace_;
    train::Timers* timers_;
    std::map<int, Receive> receives_;
    std::deque<std::pair<Tensor, std::unique_ptr<CommRequest>>> sends_;
};

// One micro-batch's forward on a chunk: its activations and its loss gradients (the model's
// last chunk).
struct InFlight {
    std::unique_ptr<Activations> saved;
    std::vector<Tensor> loss_grads;
};

// 1F1B (one chunk per stage) and interleaved 1F1B (several).
class Pipelined final : public ParallelStrategy {
  public:
    Pipelined(int chunks, int64_t group) : chunks_(chunks), group_(group) {}
    std::string_view name() const override { return chunks_ > 1 ? "interleaved-1f1b" : "1f1b"; }
    void forward_backward(const ForwardBackward& w) const override;

  private:
    int chunks_;
    int64_t group_;  // micro-batches per chunk in a row (0: the pipeline size)
};

// Receives posted this many slots ahead of their use.
constexpr size_t kLookahead = 4;

void Pipelined::forward_backward(const ForwardBackward& w) const {
    MT_CHECK(w.pipeline != nullptr, "a pipelined schedule needs the pipeline-parallel group");
    const std::vector<Model*> models = w.model.pipeline_chunks();
    MT_CHECK(int(models.size()) == chunks_, "the schedule runs ", chunks_,
             " model chunks per stage, the model has ", models.size());
    const int stages = w.pipeline->size(), stage = w.pipeline->rank();
    const std::vector<PipelineSlot> order = pipeline_order(
        w.micro_batches, chunks_, group_ > 0 ? group_ : stages, stages, stage, w.forward_only);
    StageLinks links(*w.pipeline, models.front()->stage_tensor(w.micro_batch_size, w.seq_length),
                     chunks_, w);
    std::vector<std::deque<InFlight>> in_flight(static_cast<size_t>(chunks_));
    // Every chunk reads the same micro-batches; chunk 0 reads each first, the last drops it.
    std::map<int64_t, Batch> batches;
    int64_t read = 0;
    std::vector<bool> chunk_started(static_cast<size_t>(chunks_), false);

    for (size_t i = 0; i < order.size(); ++i) {
        for (size_t j = i; j < std::min(order.size(), i + kLookahead); ++j) links.expect(order[j]);
        const PipelineSlot& slot = order[i];
        Model& model = *models[size_t(slot.chunk)];
        const int trace_chunk = links.chunk_in_trace(slot.chunk);
        if (slot.forward) {
            while (read <= slot.micro_batch) batches.emplace(read++, next_batch(w));
            Batch batch = batches.at(slot.micro_batch);
            if (slot.chunk == chunks_ - 1) batches.erase(slot.micro_batch);
            if (!links.model_first(slot.chunk))
                batch[std::string(kStageInput)] = links.receive(slot);
            InFlight f;
            // Megatron's is_first_microbatch_for_model_chunk.
            if (!chunk_started[size_t(slot.chunk)]) {
                chunk_started[size_t(slot.chunk)] = true;
                model.set_is_first_microbatch();
            }
            {
                Step step(w.timers, w.trace, "forward-compute", "forward", slot.micro_batch,
                          trace_chunk);
                const Losses losses = model.forward(batch, w.dropout, &f.saved);
                if (links.model_last(slot.chunk)) f.loss_grads = w.loss_grads(losses);
            }
            if (!links.model_last(slot.chunk)) links.send(slot, f.saved->stage_output);
            if (!w.forward_only) in_flight[size_t(slot.chunk)].push_back(std::move(f));
        } else {
            InFlight f = std::move(in_flight[size_t(slot.chunk)].front());
            in_flight[size_t(slot.chunk)].pop_front();
            if (!links.model_last(slot.chunk)) f.saved->stage_output_grad = links.receive(slot);
            if (slot.micro_batch == w.micro_batches - 1 && w.before_last_backward)
                w.before_last_backward(model);
            {
                Step step(w.timers, w.trace, "backward-compute", "backward", slot.micro_batch,
                          trace_chunk);
                model.backward(f.loss_grads, *f.saved);
            }
            if (w.after_backward) w.after_backward(model);
            if (!links.model_first(slot.chunk)) links.send(slot, f.saved->stage_input_grad);
        }
    }
    links.finish();
}

}  // namespace

std::vector<PipelineSlot> pipeline_order(int64_t micro_batches, int chunks, int64_t group,
                                         int stages, int stage, bool forward_only) {
    MT_CHECK(micro_batches >= 1 && chunks >= 1 && stages >= 1 && stage >= 0 && stage < stages,
             "pipeline_order: ", micro_batches, " micro-batches, ", chunks, " chunks, stage ",
             stage, " of ", stages);
    // get_schedule_table: each chunk runs `group` micro-batches in a row (the last group
    // whatever is left), chunk by chunk.
    std::vector<PipelineSlot> table;
    if (chunks > 1) {
        MT_CHECK(group >= stages && group <= micro_batches,
                 "the interleaved schedule runs each model chunk on a group of between "
                 "--pipeline-model-parallel-size (",
                 stages, ") and the number of micro-batches (", micro_batches,
                 ") micro-batches in a row; got ", group,
                 " (--microbatch-group-size-per-virtual-pipeline-stage, default the "
                 "pipeline size: raise --global-batch-size)");
        const int64_t remainder = micro_batches % group;
        MT_CHECK(remainder == 0 || remainder >= stages,
                 "the interleaved schedule's last group has ", remainder, " micro-batches (",
                 micro_batches, " modulo ", group, "), fewer than the pipeline size ", stages,
                 "; Megatron refuses the dependency bubbles this makes");
    }
    for (int64_t begin = 0; begin < micro_batches; begin += group) {
        const int64_t end = begin + group >= micro_batches ? micro_batches : begin + group;
        for (int c = 0; c < chunks; ++c)
            for (int64_t m = begin; m < end; ++m) table.push_back({m, c, true});
    }
    // get_pp_rank_microbatches: the warm-up forwards before the first backward.
    const int64_t total = int64_t(table.size());
    int64_t warmup =
        chunks > 1 ? (stages - stage - 1) * 2 + (chunks - 1) * group : stages - stage - 1;
    if (forward_only || warmup > total) warmup = total;
    if (forward_only) return table;
    // A backward runs the chunks in reverse: slot k's backward is table[k]'s micro-batch on
    // chunk chunks - 1 - table[k].chunk.
    auto backward = [&](int64_t k) {
        return PipelineSlot{table[size_t(k)].micro_batch, chunks - 1 - table[size_t(k)].chunk,
                            false};
    };
    std::vector<PipelineSlot> order(table.begin(), table.begin() + warmup);
    for (int64_t k = warmup; k < total; ++k) {
        order.push_back(table[size_t(k)]);
        order.push_back(backward(k - warmup));
    }
    for (int64_t k = total - warmup; k < total; ++k) order.push_back(backward(k));
    return order;
}

std::unique_ptr<ParallelStrategy> make_schedule(int pipeline_stages, int virtual_stages,
                                                int64_t microbatch_group_size) {
    if (pipeline_stages <= 1) return std::make_unique<NoPipelining>();
    return std::make_unique<Pipelined>(virtual_stages, microbatch_group_size);
}

}  // namespace mt
