#include "mt/infer/model_parallel_inference.h"

#include <array>

#include "mt/communicator.h"
#include "mt/error.h"
#include "mt/nn/inference_state.h"
#include "mt/parallel/parallel_state.h"
#include "mt/parallel/world.h"
#include "mt/registry.h"

namespace mt::infer {

namespace {

// What the leader broadcasts before each call: the call and its arguments.
enum class Call : int64_t { stop, make_inference_state, logits, encode };
struct Command {
    Call call = Call::stop;
    // make_inference_state: batch, capacity; logits: tokens' rows and columns, keep_last, cached;
    // encode (into the latest state): tokens' rows and columns, whether they are i32 (else i64).
    std::array<int64_t, 4> args{};
};

constexpr int kLeader = 0;

void broadcast(Communicator& group, Command& c) {
    Tensor t = Tensor::empty({5}, DType::i64);
    int64_t* v = t.data<int64_t>();
    v[0] = int64_t(c.call);
    for (size_t i = 0; i < c.args.size(); ++i) v[i + 1] = c.args[i];
    group.broadcast(t, kLeader);
    c.call = Call(v[0]);
    for (size_t i = 0; i < c.args.size(); ++i) c.args[i] = v[i + 1];
}

}  // namespace

ModelParallelLeader::ModelParallelLeader(Model& local, Communicator& group)
    : local_(local), group_(group) {
    MT_CHECK(group.rank() == kLeader, "ModelParallelLeader runs on rank 0 of its group; rank ",
             group.rank(), " follows");
}

ModelParallelLeader::~ModelParallelLeader() {
    try {
        Command stop;
        broadcast(group_, stop);
    } catch (...) {  // the job is failing already: the tool aborts every rank
    }
}

Tensor ModelParallelLeader::logits(const Tensor& tokens, nn::InferenceState* cache,
                                   int64_t keep_last) {
    MT_CHECK(tokens.dim() == 2 && tokens.dtype() == DType::i64,
             "model-parallel logits: tokens must be i64 [B, T], got ", tokens.describe());
    MT_CHECK(!cache || cache == cache_,
             "model-parallel inference keeps one KV cache at a time: the latest made");
    Command c{Call::logits, {tokens.size(0), tokens.size(1), keep_last, cache ? 1 : 0}};
    broadcast(group_, c);
    Tensor ids = tokens.contiguous();
    group_.broadcast(ids, kLeader);
    return local_.logits(ids, cache, keep_last);
}

void ModelParallelLeader::encode(const Tensor& tokens, const Tensor& lengths,
                                 nn::InferenceState& state) {
    MT_CHECK(&state == cache_,
             "model-parallel inference keeps one KV cache at a time: the latest made");
    MT_CHECK(tokens.dim() == 2 && (tokens.dtype() == DType::i32 || tokens.dtype() == DType::i64) &&
                 lengths.dtype() == DType::i32 && lengths.shape() == Shape({tokens.size(0)}),
             "model-parallel encode: tokens i32/i64 [B, Te] and lengths i32 [B], got ",
             tokens.describe(), " and ", lengths.describe());
    Command c{Call::encode, {tokens.size(0), tokens.size(1), tokens.dtype() == DType::i32, 0}};
    broadcast(group_, c);
    Tensor ids = tokens.contiguous(), counts = lengths.contiguous();
    group_.broadcast(ids, kLeader);
    group_.broadcast(counts, kLeader);
    local_.encode(tokens, lengths, state);
}

std::unique_ptr<nn::InferenceState> ModelParallelLeader::make_inference_state(
    int64_t batch, int64_t capacity) const {
    Command c{Call::make_inference_state, {batch, capacity, 0, 0}};
    broadcast(group_, c);
    auto cache = local_.make_inference_state(batch, capacity);
    cache_ = cache.get();
    return cache;
}

std::vector<nn::Parameter*> ModelParallelLeader::parameters() {
    MT_FAIL("model-parallel inference does not train");
}
void ModelParallelLeader::initialize(uint64_t) {
    MT_FAIL("model-parallel inference does not train");
}
Losses ModelParallelLeader::forward(const Batch&, nn::DropoutContext&,
                                    std::unique_ptr<Activations>*) {
    MT_FAIL("model-parallel inference does not train");
}
void ModelParallelLeader::backward(const std::vector<Tensor>&, const Activations&) {
    MT_FAIL("model-parallel inference does not train");
}
double ModelParallelLeader::training_flops(int64_t) const {
    MT_FAIL("model-parallel inference does not train");
}

void follow_leader(Model& local, Communicator& group) {
    MT_CHECK(group.rank() != kLeader, "rank 0 leads model-parallel inference");
    std::unique_ptr<nn::InferenceState> cache;
    for (;;) {
        Command c;
        broadcast(group, c);
        switch (c.call) {
            case Call::stop:
                return;
            case Call::make_inference_state:
                cache = local.make_inference_state(c.args[0], c.args[1]);
                break;
            case Call::logits: {
                Tensor ids = Tensor::empty({c.args[0], c.args[1]}, DType::i64);
                group.broadcast(ids, kLeader);
                local.logits(ids, c.args[3] ? cache.get() : nullptr, c.args[2]);
                break;
            }
            case Call::encode: {
                MT_CHECK(cache != nullptr, "model-parallel encode before any inference state");
                Tensor ids =
                    Tensor::empty({c.args[0], c.args[1]}, c.args[2] ? DType::i32 : DType::i64);
                Tensor counts = Tensor::empty({c.args[0]}, DType::i32);
                group.broadcast(ids, kLeader);
                group.broadcast(counts, kLeader);
                local.encode(ids, counts, *cache);
                break;
            }
            default:
                MT_FAIL("model-parallel inference: unknown call ", int64_t(c.call),
                        " from the leader");
        }
    }
}

std::unique_ptr<parallel::ParallelState> inference_ranks(int tensor_parallel, int pipeline_parallel,
                                                         int expert_parallel) {
    MT_CHECK(tensor_parallel >= 1 && pipeline_parallel >= 1 && expert_parallel >= 1,
             "--tensor-model-parallel-size, --pipeline-model-parallel-size and "
             "--expert-model-parallel-size must be positive");
    auto world = parallel::make_world_communicator(Registry::global(), "cpu");
    MT_CHECK(world->size() == tensor_parallel * pipeline_parallel * expert_parallel,
             "inference splits the model over every rank: --tensor-model-parallel-size (",
             tensor_parallel, ") x --pipeline-model-parallel-size (", pipeline_parallel,
             ") x --expert-model-parallel-size (", expert_parallel, ") must equal the job's ",
             world->size(), " ranks");
    parallel::ParallelConfig config;
    config.tensor_parallel = tensor_parallel;
    config.pipeline_parallel = pipeline_parallel;
    // The expert-parallel ranks are data-parallel replicas of the dense weights: each runs every
    // call the leader makes, on the same tokens.
    config.expert_parallel = expert_parallel;
    return std::make_unique<parallel::ParallelState>(std::move(world), config);
}

void lead_or_follow(Communicator& world, Model& local, const std::function<void(Model&)>& lead) {
    if (world.size() == 1) return lead(local);
    if (world.rank() != kLeader) return follow_leader(local, world);
    ModelParallelLeader leader(local, world);
    lead(leader);
}

}  // namespace mt::infer
