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
enum class Call : int64_t { stop, make_inference_state, logits, encode, decode_rows, release };
struct Command {
    Call call = Call::stop;
    // make_inference_state: batch, capacity, its number; logits: tokens' rows and columns,
    // keep_last, the state's number (-1: none); encode: tokens' rows and columns, whether they
    // are i32 (else i64), the state's number; decode_rows: tokens' rows and columns, keep_last
    // (the rows' state numbers follow the tokens); release: the state's number.
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
    for (auto& [state, number] : twins_) state->on_release = nullptr;
    try {
        Command stop;
        broadcast(group_, stop);
    } catch (...) {  // the job is failing already: the tool aborts every rank
    }
}

int64_t ModelParallelLeader::twin(const nn::InferenceState* state) const {
    const auto it = twins_.find(const_cast<nn::InferenceState*>(state));
    MT_CHECK(it != twins_.end(),
             "model-parallel inference: an inference state this leader did not make");
    return it->second;
}

Tensor ModelParallelLeader::logits(const Tensor& tokens, nn::InferenceState* cache,
                                   int64_t keep_last) {
    MT_CHECK(tokens.dim() == 2 && tokens.dtype() == DType::i64,
             "model-parallel logits: tokens must be i64 [B, T], got ", tokens.describe());
    Command c{Call::logits, {tokens.size(0), tokens.size(1), keep_last, cache ? twin(cache) : -1}};
    broadcast(group_, c);
    Tensor ids = tokens.contiguous();
    group_.broadcast(ids, kLeader);
    return local_.logits(ids, cache, keep_last);
}

Tensor ModelParallelLeader::decode_rows(const Tensor& tokens,
                                        std::span<nn::InferenceState* const> states,
                                        int64_t keep_last) {
    MT_CHECK(tokens.dim() == 2 && tokens.dtype() == DType::i64 &&
                 tokens.size(0) == int64_t(states.size()),
             "model-parallel decode_rows: tokens must be i64 [B, T] for ", states.size(),
             " states, got ", tokens.describe());
    std::vector<int64_t> numbers;
    for (const nn::InferenceState* state : states) numbers.push_back(twin(state));
    Command c{Call::decode_rows, {tokens.size(0), tokens.size(1), keep_last, 0}};
    broadcast(group_, c);
    Tensor ids = tokens.contiguous(), which = host_tensor(std::move(numbers), {tokens.size(0)});
    group_.broadcast(ids, kLeader);
    group_.broadcast(which, kLeader);
    return local_.decode_rows(ids, states, keep_last);
}

void ModelParallelLeader::encode(const Tensor& tokens, const Tensor& lengths,
                                 nn::InferenceState& state) {
    MT_CHECK(tokens.dim() == 2 && (tokens.dtype() == DType::i32 || tokens.dtype() == DType::i64) &&
                 lengths.dtype() == DType::i32 && lengths.shape() == Shape({tokens.size(0)}),
             "model-parallel encode: tokens i32/i64 [B, Te] and lengths i32 [B], got ",
             tokens.describe(), " and ", lengths.describe());
    Command c{Call::encode,
              {tokens.size(0), tokens.size(1), tokens.dtype() == DType::i32, twin(&state)}};
    broadcast(group_, c);
    Tensor ids = tokens.contiguous(), counts = lengths.contiguous();
    group_.broadcast(ids, kLeader);
    group_.broadcast(counts, kLeader);
    local_.encode(tokens, lengths, state);
}

std::unique_ptr<nn::InferenceState> ModelParallelLeader::make_inference_state(
    int64_t batch, int64_t capacity) const {
    const int64_t number = next_twin_++;
    Command c{Call::make_inference_state, {batch, capacity, number, 0}};
    broadcast(group_, c);
    auto state = local_.make_inference_state(batch, capacity);
    twins_[state.get()] = number;
    state->on_release = [this, key = state.get(), number] {
        twins_.erase(key);
        try {
            Command release{Call::release, {number, 0, 0, 0}};
            broadcast(group_, release);
        } catch (...) {  // the job is failing already: the tool aborts every rank
        }
    };
    return state;
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
    std::unordered_map<int64_t, std::unique_ptr<nn::InferenceState>> twins;
    const auto twin = [&](int64_t number) {
        const auto it = twins.find(number);
        MT_CHECK(it != twins.end(), "model-parallel inference: the leader named state ", number,
                 ", which this rank does not hold");
        return it->second.get();
    };
    for (;;) {
        Command c;
        broadcast(group, c);
        switch (c.call) {
            case Call::stop:
                return;
            case Call::make_inference_state:
                twins[c.args[2]] = local.make_inference_state(c.args[0], c.args[1]);
                break;
            case Call::release:
                twins.erase(c.args[0]);
                break;
            case Call::logits: {
                Tensor ids = Tensor::empty({c.args[0], c.args[1]}, DType::i64);
                group.broadcast(ids, kLeader);
                local.logits(ids, c.args[3] >= 0 ? twin(c.args[3]) : nullptr, c.args[2]);
                break;
            }
            case Call::decode_rows: {
                Tensor ids = Tensor::empty({c.args[0], c.args[1]}, DType::i64);
                Tensor which = Tensor::empty({c.args[0]}, DType::i64);
                group.broadcast(ids, kLeader);
                group.broadcast(which, kLeader);
                std::vector<nn::InferenceState*> states;
                for (int64_t b = 0; b < c.args[0]; ++b)
                    states.push_back(twin(which.data<int64_t>()[b]));
                local.decode_rows(ids, states, c.args[2]);
                break;
            }
            case Call::encode: {
                nn::InferenceState* state = twin(c.args[3]);
                Tensor ids =
                    Tensor::empty({c.args[0], c.args[1]}, c.args[2] ? DType::i32 : DType::i64);
                Tensor counts = Tensor::empty({c.args[0]}, DType::i32);
                group.broadcast(ids, kLeader);
                group.broadcast(counts, kLeader);
                local.encode(ids, counts, *state);
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
