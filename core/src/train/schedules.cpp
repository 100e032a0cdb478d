// megatron/core/pipeline_parallel/schedules.py (core_v0.13.0): forward_backward_no_pipelining
// and forward_backward_pipelining_without_interleaving, with p2p_communication.py's exchanges
// (a combined send and receive posts both before waiting, so neighbours never block on each
// other's sends).
#include <deque>
#include <utility>

#include "mt/communicator.h"
#include "mt/error.h"
#include "mt/parallel.h"
#include "mt/train/schedule_trace.h"
#include "mt/train/timers.h"

namespace mt {

namespace {

// One step of the schedule while alive: timed for --timing-log-level under Megatron's `timer`
// and, with a trace, recorded as `phase` of `micro_batch`.
class Step {
  public:
    using Clock = train::ScheduleTrace::Clock;
    Step(train::Timers* timers, train::ScheduleTrace* trace, const char* timer, const char* phase,
         int64_t micro_batch)
        : timed_(timers, timer, 2),
          trace_(trace),
          phase_(phase),
          micro_batch_(micro_batch),
          begin_(Clock::now()) {}
    ~Step() {
        if (trace_) trace_->record(phase_, micro_batch_, begin_, Clock::now());
    }
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

  private:
    train::Timers::Scope timed_;
    train::ScheduleTrace* trace_;
    const char* phase_;
    int64_t micro_batch_;
    Clock::time_point begin_;
};

// The next micro-batch, timed as Megatron's batch-generator.
Batch next_batch(const ForwardBackward& w) {
    train::Timers::Scope timed(w.timers, "batch-generator", 2);
    return w.next_batch();
}

// One micro-batch's forward on this stage: its activations and its loss gradients (last stage).
struct InFlight {
    std::unique_ptr<Activations> saved;
    std::vector<Tensor> loss_grads;
};

class NoPipelining final : public ParallelStrategy {
  public:
    std::string_view name() const override { return "no-pipelining"; }
    void forward_backward(const ForwardBackward& w) const override {
        for (int64_t m = 0; m < w.micro_batches; ++m) {
            const Batch batch = next_batch(w);
            std::unique_ptr<Activations> saved;
            std::vector<Tensor> grads;
            {
                Step step(w.timers, w.trace, "forward-compute", "forward", m);
                grads = w.loss_grads(
                    w.model.forward(batch, w.dropout, w.forward_only ? nullptr : &saved));
            }
            if (w.forward_only) continue;
            if (m == w.micro_batches - 1 && w.before_last_backward) w.before_last_backward();
            Step step(w.timers, w.trace, "backward-compute", "backward", m);
            w.model.backward(grads, *saved);
        }
    }
};

class OneForwardOneBackward final : public ParallelStrategy {
  public:
    std::string_view name() const override { return "1f1b"; }
    void forward_backward(const ForwardBackward& w) const override;
};

// The stage's point-to-point exchanges with its neighbours (Megatron's p2p_communication).
class StageLinks {
  public:
    StageLinks(Communicator& pp, StageTensor io, train::ScheduleTrace* trace, train::Timers* timers)
        : pp_(pp), io_(std::move(io)), trace_(trace), timers_(timers) {}
    // The micro-batch the next exchanges belong to (for the trace).
    void set_micro_batch(int64_t m) { micro_batch_ = m; }
    bool first() const { return pp_.rank() == 0; }
    bool last() const { return pp_.rank() == pp_.size() - 1; }

    // Megatron's p2p_communication functions, timed under their timers' names.
    Tensor recv_forward() {
        return first() ? Tensor() : exchange("forward-recv", {}, -1, pp_.rank() - 1);
    }
    void send_forward(const Tensor& out) {
        if (!last()) exchange("forward-send", out, pp_.rank() + 1, -1);
    }
    Tensor recv_backward() {
        return last() ? Tensor() : exchange("backward-recv", {}, -1, pp_.rank() + 1);
    }
    void send_backward(const Tensor& grad) {
        if (!first()) exchange("backward-send", grad, pp_.rank() - 1, -1);
    }
    Tensor send_forward_recv_backward(const Tensor& out) {
        return last() ? Tensor()
                      : exchange("forward-send-backward-recv", out, pp_.rank() + 1, pp_.rank() + 1);
    }
    Tensor send_backward_recv_forward(const Tensor& grad) {
        return first()
                   ? Tensor()
                   : exchange("backward-send-forward-recv", grad, pp_.rank() - 1, pp_.rank() - 1);
    }

  private:
    // Sends `out` to `to` and receives a stage tensor from `from` (-1: none), both posted
    // before either is waited for.
    Tensor exchange(const char* timer, const Tensor& out, int to, int from) {
        Step step(timers_, trace_, timer, "send/recv", micro_batch_);
        Tensor in;
        std::unique_ptr<CommRequest> receiving, sending;
        if (from >= 0) {
            in = Tensor::empty(io_.shape, io_.dtype);
            receiving = pp_.irecv(in, from);
        }
        if (to >= 0) {
            MT_CHECK(out.shape() == io_.shape && out.dtype() == io_.dtype,
                     "pipeline: a stage sends ", out.describe(), ", its neighbour expects ",
                     shape_str(io_.shape), " ", dtype_name(io_.dtype));
            sent_ = out.contiguous();
            sending = pp_.isend(sent_, to);
        }
        if (receiving) receiving->wait();
        if (sending) sending->wait();
        return in;
    }

    Communicator& pp_;
    StageTensor io_;
    train::ScheduleTrace* trace_;
    train::Timers* timers_;
    int64_t micro_batch_ = 0;
    Tensor sent_;  // alive while its send is in flight
};

void OneForwardOneBackward::forward_backward(const ForwardBackward& w) const {
    MT_CHECK(w.pipeline != nullptr, "1F1B needs the pipeline-parallel group");
    StageLinks links(*w.pipeline, w.model.stage_tensor(w.micro_batch_size), w.trace, w.timers);
    const int64_t stages = w.pipeline->size(), stage = w.pipeline->rank();
    const int64_t m = w.micro_batches;
    // Forward-only (evaluation): each micro-batch goes through once, nothing kept.
    const int64_t warmup = w.forward_only ? m : std::min(stages - stage - 1, m);
    const int64_t steady = m - warmup;
    std::deque<InFlight> in_flight;
    int64_t forwards = 0, backwards = 0;

    auto forward = [&](const Tensor& input) {
        const int64_t micro_batch = forwards++;
        Batch batch = next_batch(w);
        if (!links.first()) batch[std::string(kStageInput)] = input;
        InFlight f;
        {
            Step step(w.timers, w.trace, "forward-compute", "forward", micro_batch);
            const Losses losses = w.model.forward(batch, w.dropout, &f.saved);
            if (links.last()) f.loss_grads = w.loss_grads(losses);
        }
        Tensor output = links.last() ? Tensor() : f.saved->stage_output;
        if (!w.forward_only) in_flight.push_back(std::move(f));
        links.set_micro_batch(micro_batch);  // its output goes out next
        return output;
    };
    auto backward = [&](const Tensor& output_grad) {
        InFlight f = std::move(in_flight.front());
        in_flight.pop_front();
        const int64_t micro_batch = backwards++;
        if (!links.last()) f.saved->stage_output_grad = output_grad;
        if (backwards == m && w.before_last_backward) w.before_last_backward();
        {
            Step step(w.timers, w.trace, "backward-compute", "backward", micro_batch);
            w.model.backward(f.loss_grads, *f.saved);
        }
        links.set_micro_batch(micro_batch);  // its input gradient goes back next
        return links.first() ? Tensor() : f.saved->stage_input_grad;
    };

    for (int64_t i = 0; i < warmup; ++i) links.send_forward(forward(links.recv_forward()));
    Tensor input = steady > 0 ? links.recv_forward() : Tensor();
    for (int64_t i = 0; i < steady; ++i) {
        const bool last_iteration = i == steady - 1;
        const Tensor output_grad = links.send_forward_recv_backward(forward(input));
        const Tensor input_grad = backward(output_grad);
        if (last_iteration)
            links.send_backward(input_grad);
        else
            input = links.send_backward_recv_forward(input_grad);
    }
    if (w.forward_only) return;
    for (int64_t i = 0; i < warmup; ++i) links.send_backward(backward(links.recv_backward()));
}

}  // namespace

std::unique_ptr<ParallelStrategy> make_schedule(int pipeline_stages) {
    if (pipeline_stages <= 1) return std::make_unique<NoPipelining>();
    return std::make_unique<OneForwardOneBackward>();
}

}  // namespace mt
