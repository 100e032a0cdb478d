#include "megatron_rng_state.h"

#include <string>

#include "mt/checkpoint/checkpoint_args.h"
#include "mt/error.h"
#include "mt/tensor.h"

namespace mt::plugins::torch_ckpt {

using io::PyValue;

namespace {

PyValue byte_tensor(const uint8_t* data, size_t n) {
    Tensor t = Tensor::empty({int64_t(n)}, DType::u8);
    std::copy(data, data + n, t.data<uint8_t>());
    return PyValue::tensor(t);
}

// numpy's key as a list of ints: numpy.random.set_state takes any sequence of 624 words, and a
// list needs no numpy global in the pickle (whose module, numpy.core or numpy._core, depends on
// the numpy that reads it, and which weights_only loads must allow).
PyValue word_list(const std::array<uint32_t, 624>& words) {
    std::vector<PyValue> items;
    for (const uint32_t w : words) items.push_back(PyValue::integer(w));
    return PyValue::list(std::move(items));
}

PyValue rng_entry(const MegatronRngState& s) {
    std::vector<PyValue> python;
    for (const uint32_t w : s.python_words) python.push_back(PyValue::integer(w));
    python.push_back(PyValue::integer(624));  // the index: every word still to come
    PyValue entry = PyValue::dict();
    auto& d = entry.dict_ref();
    d.set("random_rng_state",
          PyValue::tuple({PyValue::integer(3), PyValue::tuple(std::move(python)), PyValue()}));
    d.set("np_rng_state", PyValue::tuple({PyValue::string("MT19937"), word_list(*s.numpy_key),
                                          PyValue::integer(624), PyValue::integer(0),
                                          PyValue::real(0.0)}));
    d.set("torch_rng_state", byte_tensor(s.torch_cpu.data(), s.torch_cpu.size()));
    d.set("cuda_rng_state", byte_tensor(s.cuda.data(), s.cuda.size()));
    PyValue tracker = PyValue::dict();
    for (const auto& [name, state] : s.tracker)
        tracker.dict_ref().set(name, byte_tensor(state.data(), state.size()));
    d.set("rng_tracker_states", std::move(tracker));
    return entry;
}

}  // namespace

PyValue megatron_rng_state_list(const CheckpointArgs& args, MegatronRngRank rank) {
    const uint64_t seed = uint64_t(int_arg(args, "seed").value_or(1234));
    rank.data_parallel_random_init = bool_arg(args, "data_parallel_random_init");
    const int64_t dp = int_arg(args, "data_parallel_size").value_or(1);
    PyValue list = PyValue::list();
    for (int64_t d = 0; d < (rank.data_parallel_random_init ? dp : 1); ++d) {
        rank.data = d;
        const MegatronRngState s = megatron_seeded_rng_state(seed, rank);
        if (!s.numpy_key) return PyValue::list();  // Megatron cannot seed numpy so either
        list.items().push_back(rng_entry(s));
    }
    return list;
}

}  // namespace mt::plugins::torch_ckpt
