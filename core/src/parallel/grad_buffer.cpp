// GradBuffer: the contiguous gradient (and, for the distributed optimizer, value) buffer, its
// buckets and their reductions over the data-parallel group.
#include "mt/parallel/grad_buffer.h"

#include <algorithm>

#include "mt/error.h"
#include "mt/nn/parameter.h"
#include "mt/parallel/parallel_state.h"

namespace mt::parallel {

namespace {

// A reduced bucket (or shard) back in the buffer's f32: itself when it already is.
Tensor widened(const Tensor& t) {
    return t.dtype() == DType::f32 ? t : cast_float(t, DType::f32);
}

// Elements [begin, begin + shape's count) of a 1-D buffer, viewed with `shape`.
Tensor region(const Tensor& buffer, int64_t begin, const Shape& shape) {
    return buffer.slice(0, begin, begin + shape_numel(shape)).view(shape);
}

}  // namespace

GradBuffer::GradBuffer(const std::vector<nn::Parameter*>& params, Communicator& dp,
                       const DataParallelConfig& config)
    : whole_(&dp), dp_(&dp), config_(config) {
    const int instances = config.distributed_optimizer ? config.distributed_optimizer_instances : 1;
    if (instances > 1) {
        MT_CHECK(dp.size() % instances == 0, "--num-distributed-optimizer-instances ", instances,
                 " does not divide the ", dp.size(), " data-parallel ranks");
        const int per_instance = dp.size() / instances;
        within_ = dp.split(dp.rank() / per_instance, dp.rank());
        across_ = dp.split(dp.rank() % per_instance, dp.rank());
        dp_ = within_.get();
    }
    std::vector<int64_t> numels;
    const DType value_dtype = params.empty() ? DType::f32 : params[0]->value.dtype();
    for (nn::Parameter* p : params) {
        MT_CHECK(
            p->grad.dtype() == DType::f32 && p->value.is_contiguous() && p->grad.is_contiguous(),
            "data parallelism: parameter ", p->name, " must be contiguous with an f32 grad, got ",
            p->value.describe());
        // The distributed optimizer's buffer holds the model's weights (one dtype); a bf16 / f16
        // run's optimizer keeps f32 masters of its shard.
        MT_CHECK(p->value.dtype() == value_dtype || !config.distributed_optimizer,
                 "--use-distributed-optimizer: parameters of different dtypes (", p->name, " is ",
                 dtype_name(p->value.dtype()), ", others ", dtype_name(value_dtype), ")");
        numels.push_back(p->value.numel());
    }
    // Padded for the ranks it is sharded over, as Megatron pads for its (partial) group.
    const BufferLayout layout = buffer_layout(numels, dp_->size(), config);
    std::vector<std::pair<nn::Parameter*, int64_t>> offsets;  // in buffer order
    for (const BufferLayout::Bucket& lb : layout.buckets) {
        Bucket& b = buckets_.emplace_back();
        b.begin = lb.begin;
        b.end = lb.end;
        for (size_t i : lb.params) {
            b.params.push_back(params[i]);
            offsets.emplace_back(params[i], layout.offsets[i]);
        }
    }
    const int64_t offset = layout.numel;

    grads_ = Tensor::zeros({std::max<int64_t>(offset, 1)}, DType::f32);
    if (config.distributed_optimizer)
        values_ = Tensor::zeros({std::max<int64_t>(offset, 1)}, value_dtype);
    for (auto& [p, begin] : offsets) {
        p->grad = region(grads_, begin, p->value.shape());
        if (values_.defined()) {
            Tensor v = region(values_, begin, p->value.shape());
            v.copy_from(p->value);
            p->value = v;
        }
    }
    for (size_t i = 0; i < buckets_.size(); ++i)
        for (const nn::Parameter* p : buckets_[i].params) bucket_of_.emplace_back(p, i);
    std::sort(bucket_of_.begin(), bucket_of_.end());

    if (!config.distributed_optimizer) {
        optimized_ = params;
        return;
    }
    for (const Bucket& b : buckets_) {
        auto [lo, hi] = rank_range(b);
        for (auto& [p, begin] : offsets) {
            const int64_t end = begin + p->value.numel();
            if (end <= lo || begin >= hi || begin < b.begin || end > b.end) continue;
            const int64_t from = std::max(begin, lo), to = std::min(end, hi);
            shard_.push_back({p, from - begin, to - begin, from});
        }
    }
    shard_params_.reserve(shard_.size());  // optimized_ points into it
    for (const ShardPiece& piece : shard_) {
        nn::Parameter p;
        p.name = piece.param->name;
        p.value = view(values_, piece);
        p.grad = view(grads_, piece);
        p.shard = piece.param->shard;
        p.weight_decay = piece.param->weight_decay;
        p.embedding_or_output = piece.param->embedding_or_output;
        p.mup_hidden = piece.param->mup_hidden;
        p.expert = piece.param->expert;
        p.whole_shape = p.value.shape();
        p.tp_rank = piece.param->tp_rank;
        p.tp_size = piece.param->tp_size;
        p.copy_of = piece.param->copy_of;  // the norms skip it here too
        shard_params_.push_back(std::move(p));
        optimized_.push_back(&shard_params_.back());
    }
}

GradBuffer::~GradBuffer() {
    // An exception between a bucket's start and its wait must not leave MPI writing into a
    // freed buffer; a failure now has nobody left to report to.
    for (Bucket& b : buckets_) {
        if (!b.request) continue;
        try {
            b.request->wait();
        } catch (const std::exception&) {
        }
    }
}

std::pair<int64_t, int64_t> GradBuffer::rank_range(const Bucket& b) const {
    const int64_t part = (b.end - b.begin) / dp_->size();
    return {b.begin + part * dp_->rank(), b.begin + part * (dp_->rank() + 1)};
}

int64_t GradBuffer::offset_of(const nn::Parameter& param) const {
    MT_CHECK(param.grad.storage() == grads_.storage(), "GradBuffer: parameter ", param.name,
             " is not in the gradient buffer");
    return param.grad.offset() - grads_.offset();
}

Tensor GradBuffer::view(const Tensor& buffer_shaped, const nn::Parameter& param) const {
    return region(buffer_shaped, offset_of(param), param.value.shape());
}

Tensor GradBuffer::view(const Tensor& buffer_shaped, const ShardPiece& piece) const {
    return region(buffer_shaped, piece.buffer_begin, {piece.param_end - piece.param_begin});
}

void GradBuffer::zero_grads() {
    std::fill_n(grads_.data<float>(), grads_.numel(), 0.0f);
    for (Bucket& b : buckets_) b.pending = int64_t(b.params.size());
}

void GradBuffer::grad_ready(const nn::Parameter& param) {
    if (!config_.overlap_grad_reduce || whole_->size() == 1) return;
    auto it = std::lower_bound(bucket_of_.begin(), bucket_of_.end(),
                               std::pair<const nn::Parameter*, size_t>(&param, 0));
    MT_CHECK(it != bucket_of_.end() && it->first == &param, "data parallelism: parameter ",
             param.name, " is not in the gradient buffer");
    Bucket& b = buckets_[it->second];
    MT_CHECK(b.pending > 0, "data parallelism: parameter ", param.name,
             " reported final twice in one backward");
    if (--b.pending == 0) start(b);
}

void GradBuffer::start(Bucket& b) {
    Tensor whole = grads_.slice(0, b.begin, b.end);
    if (before_reduce_) before_reduce_(&b - buckets_.data(), whole);
    if (config_.reduce_dtype != DType::f32) {  // sent and summed in the narrower dtype
        b.wire = cast_float(whole, config_.reduce_dtype);
        whole = b.wire;
    }
    if (config_.distributed_optimizer) {
        // Reduce-scatter cannot write into its own input: the shard lands in a scratch tensor
        // and is copied back by finish_grad_sync.
        auto [lo, hi] = rank_range(b);
        Tensor shard = Tensor::empty({hi - lo}, whole.dtype());
        b.request = dp_->ireduce_scatter(whole, shard, ReduceOp::sum);
        b.scratch = shard;
    } else {
        b.request = dp_->iall_reduce(whole, ReduceOp::sum);
    }
}

void GradBuffer::finish_grad_sync() {
    if (whole_->size() == 1) {
        if (before_reduce_)
            for (Bucket& b : buckets_)
                before_reduce_(&b - buckets_.data(), grads_.slice(0, b.begin, b.end));
        return;
    }
    for (Bucket& b : buckets_) {
        if (!b.request) start(b);
        b.request->wait();
        b.request.reset();
        if (config_.distributed_optimizer) {
            if (across_) across_->all_reduce(b.scratch, ReduceOp::sum);
            auto [lo, hi] = rank_range(b);
            grads_.slice(0, lo, hi).copy_from(widened(b.scratch));
            b.scratch = Tensor();
        } else if (b.wire.defined()) {
            grads_.slice(0, b.begin, b.end).copy_from(widened(b.wire));
        }
        b.wire = Tensor();
    }
}

void GradBuffer::all_gather_shards(Tensor& whole) const {
    MT_CHECK(whole.shape() == grads_.shape(), "GradBuffer: a buffer-shaped tensor is ",
             shape_str(grads_.shape()), ", got ", whole.describe());
    if (dp_->size() == 1) return;
    for (const Bucket& b : buckets_) {
        auto [lo, hi] = rank_range(b);
        Tensor out = whole.slice(0, b.begin, b.end);
        dp_->all_gather(whole.slice(0, lo, hi), out);  // in place: the piece is out's own
    }
}

void GradBuffer::gather_params() {
    MT_CHECK(config_.distributed_optimizer,
             "GradBuffer: parameters are gathered for the distributed optimizer only");
    all_gather_shards(values_);
}

GradBuffers make_grad_buffers(const std::vector<nn::Parameter*>& params, const ParallelState& state,
                              const DataParallelConfig& config) {
    // Megatron's initialize_model_parallel checks both groups, MoE or not.
    const int instances = config.distributed_optimizer ? config.distributed_optimizer_instances : 1;
    MT_CHECK(state.dp_cp().size() % instances == 0,
             "Data parallel size should be divisible by partial DistOpt shard factor: ",
             state.dp_cp().size(), " data- and context-parallel ranks, ",
             "--num-distributed-optimizer-instances ", instances);
    MT_CHECK(state.expert_dp().size() % instances == 0,
             "Expert data parallel size should be divisible by partial DistOpt shard factor: ",
             state.expert_dp().size(), " expert-data-parallel ranks, ",
             "--num-distributed-optimizer-instances ", instances);
    std::vector<nn::Parameter*> dense, experts;
    for (nn::Parameter* p : params) (p->expert ? experts : dense).push_back(p);
    GradBuffers out;
    out.optimized = params;
    if (state.dp_cp().size() > 1 || config.distributed_optimizer)
        out.dense = std::make_unique<GradBuffer>(dense, state.dp_cp(), config);
    if (!config.distributed_optimizer) return out;
    out.optimized = out.dense->optimizer_parameters();
    if (experts.empty()) return out;
    out.experts = std::make_unique<GradBuffer>(experts, state.expert_dp(), config);
    out.optimized.insert(out.optimized.end(), out.experts->optimizer_parameters().begin(),
                         out.experts->optimizer_parameters().end());
    return out;
}

}  // namespace mt::parallel
