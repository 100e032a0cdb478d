#include "mt/train/deepspeed_config.h"

#include <simdjson.h>

#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "mt/error.h"

namespace mt::train {

namespace {

using simdjson::dom::element;
using simdjson::dom::object;

// Top-level keys that tune DeepSpeed's logging, profiling, communication or I/O, or that
// Megatron-DeepSpeed's own machinery overrides: the same training here.
const std::set<std::string_view> kNoEffect = {
    "steps_per_print",
    "wall_clock_breakdown",
    "dump_state",
    "memory_breakdown",
    "flops_profiler",
    "tensorboard",
    "wandb",
    "csv_monitor",
    "comms_logger",
    "monitor_config",
    "zero_allow_untested_optimizer",
    "zero_force_ds_cpu_optimizer",
    "aio",
    "activation_checkpointing",
    "autotuning",
    "timers",
    "pipeline",
    "prescale_gradients",
    "gradient_predivide_factor",
    "sparse_gradients",
    "nebula",
    "checkpoint",
    "use_node_local_storage",
    "seed",
    // Megatron-DeepSpeed hands deepspeed.initialize its own optimizer and learning-rate
    // schedule (from the flags): DeepSpeed then builds neither from the configuration.
    "optimizer",
    "scheduler",
};

// Keys of "zero_optimization" that tune buckets, overlap, offloading or partition layout: the
// same sums and updates.
const std::set<std::string_view> kZeroTuning = {
    "contiguous_gradients",
    "overlap_comm",
    "reduce_scatter",
    "reduce_bucket_size",
    "allgather_partitions",
    "allgather_bucket_size",
    "round_robin_gradients",
    "offload_optimizer",
    "load_from_fp32_weights",
    "elastic_checkpoint",
    "sub_group_size",
    "cpu_offload",
    "ignore_unused_parameters",
    "legacy_stage1",
    "use_multi_rank_bucket_allreduce",
    "stage3_max_live_parameters",
    "stage3_max_reuse_distance",
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
    "stage3_gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save",
    "offload_param",
    "memory_efficient_linear",
};

struct Reader {
    const std::string& path;

    [[noreturn]] void refuse(const std::string& key, const std::string& what) const {
        MT_FAIL(path, ": \"", key, "\": not supported yet: ", what);
    }
    double number(element e, const std::string& key) const {
        double d = 0;
        if (int64_t i = 0; !e.get_int64().get(i)) return double(i);
        MT_CHECK(!e.get_double().get(d), path, ": \"", key, "\" must be a number");
        return d;
    }
    int64_t integer(element e, const std::string& key) const {
        const double d = number(e, key);
        MT_CHECK(d == std::floor(d) && std::abs(d) < 9.0e15, path, ": \"", key,
                 "\" must be an integer");
        return int64_t(d);
    }
    bool boolean(element e, const std::string& key) const {
        bool b = false;
        MT_CHECK(!e.get_bool().get(b), path, ": \"", key, "\" must be true or false");
        return b;
    }
    object section(element e, const std::string& key) const {
        object o;
        MT_CHECK(!e.get_object().get(o), path, ": \"", key, "\" must be an object");
        return o;
    }
    // A section that is off unless "enabled" is true.
    bool enabled(element e, const std::string& key) const {
        for (auto [k, v] : section(e, key))
            if (k == "enabled") return boolean(v, key + ".enabled");
        return false;
    }
    std::string text(element e, const std::string& key) const {
        std::string_view s;
        MT_CHECK(!e.get_string().get(s), path, ": \"", key, "\" must be a string");
        return std::string(s);
    }
};

void read_fp16(const Reader& r, element e, DeepSpeedConfig& c) {
    for (auto [k, v] : r.section(e, "fp16")) {
        const std::string key = "fp16." + std::string(k);
        if (k == "enabled") {
            c.fp16 = r.boolean(v, key);
        } else if (k == "loss_scale") {
            const double s = r.number(v, key);
            c.fp16_scaler.loss_scale =
                s > 0 ? std::optional<double>(s) : std::nullopt;  // 0: dynamic
        } else if (k == "initial_scale_power") {
            c.fp16_scaler.initial_scale = std::ldexp(1.0, int(r.integer(v, key)));
        } else if (k == "loss_scale_window") {
            c.fp16_scaler.window = r.integer(v, key);
        } else if (k == "hysteresis") {
            c.fp16_scaler.hysteresis = r.integer(v, key);
        } else if (k == "min_loss_scale") {
            c.fp16_scaler.min_scale = r.number(v, key);
        } else if (k == "consecutive_hysteresis") {
            if (r.boolean(v, key))
                r.refuse(key,
                         "DeepSpeed's consecutive hysteresis (restored after every "
                         "iteration without overflow; Megatron restores it at growth)");
        } else if (k == "auto_cast") {
            if (r.boolean(v, key)) r.refuse(key, "casting the model's inputs to fp16");
        } else if (k == "fp16_master_weights_and_grads") {
            if (r.boolean(v, key)) r.refuse(key, "fp16 master weights and gradients");
        } else {
            r.refuse(key, "this fp16 option");
        }
    }
}

void read_bf16(const Reader& r, element e, DeepSpeedConfig& c) {
    for (auto [k, v] : r.section(e, "bf16")) {
        const std::string key = "bf16." + std::string(k);
        if (k == "enabled")
            c.bf16 = r.boolean(v, key);
        else if (k != "immediate_grad_update" && k != "check_grad_overflow")
            r.refuse(key, "this bf16 option");
    }
}

void read_zero(const Reader& r, element e, DeepSpeedConfig& c) {
    for (auto [k, v] : r.section(e, "zero_optimization")) {
        const std::string key = "zero_optimization." + std::string(k);
        if (k == "stage") {
            c.zero_stage = int(r.integer(v, key));
            MT_CHECK(c.zero_stage >= 0 && c.zero_stage <= 3, r.path, ": \"", key,
                     "\" must be 0, 1, 2 or 3");
            if (c.zero_stage == 3)
                r.refuse(key + " 3",
                         "ZeRO stage 3 (parameters partitioned over the "
                         "data-parallel ranks: FSDP)");
        } else if (!kZeroTuning.count(k)) {
            r.refuse(key, "this ZeRO option");
        }
    }
}

std::vector<int64_t> integers(const Reader& r, element e, const std::string& key) {
    simdjson::dom::array list;
    MT_CHECK(!e.get_array().get(list), r.path, ": \"", key, "\" must be a list of integers");
    std::vector<int64_t> out;
    for (element x : list) out.push_back(r.integer(x, key));
    MT_CHECK(!out.empty(), r.path, ": \"", key, "\" must not be empty");
    return out;
}

// "curriculum_learning": DeepSpeed's legacy CurriculumScheduler configuration, checked as its
// constructor asserts (every key it reads must be there); none when it is not enabled.
std::optional<CurriculumConfig> read_curriculum(const Reader& r, element e) {
    using Schedule = CurriculumConfig::Schedule;
    CurriculumConfig c;
    bool on = false;
    std::string type, schedule;
    std::optional<element> schedule_config;
    std::set<std::string> given;
    for (auto [k, v] : r.section(e, "curriculum_learning")) {
        const std::string key = "curriculum_learning." + std::string(k);
        given.insert(std::string(k));
        if (k == "enabled")
            on = r.boolean(v, key);
        else if (k == "curriculum_type")
            type = r.text(v, key);
        else if (k == "min_difficulty")
            c.min_difficulty = r.integer(v, key);
        else if (k == "max_difficulty")
            c.max_difficulty = r.integer(v, key);
        else if (k == "schedule_type")
            schedule = r.text(v, key);
        else if (k == "schedule_config")
            schedule_config = v;
        else
            r.refuse(key, "this curriculum-learning key (DeepSpeed's legacy curriculum)");
    }
    if (!on) return std::nullopt;
    for (const char* needed :
         {"curriculum_type", "min_difficulty", "max_difficulty", "schedule_type"})
        MT_CHECK(given.count(needed), r.path, ": curriculum learning requires \"",
                 "curriculum_learning.", needed, "\"");
    if (type != "seqlen")
        r.refuse("curriculum_learning.curriculum_type",
                 "the curriculum type \"" + type.substr(0, 64) +
                     "\" (Megatron-DeepSpeed's legacy curriculum is by \"seqlen\")");
    MT_CHECK(c.min_difficulty >= 1, r.path,
             ": \"curriculum_learning.min_difficulty\" must be a positive sequence length, got ",
             c.min_difficulty);
    if (schedule == "fixed_linear")
        c.schedule = Schedule::fixed_linear;
    else if (schedule == "fixed_root")
        c.schedule = Schedule::fixed_root;
    else if (schedule == "fixed_discrete")
        c.schedule = Schedule::fixed_discrete;
    else if (schedule == "custom")
        r.refuse("curriculum_learning.schedule_type",
                 "a custom curriculum schedule (a Python function given to DeepSpeed's engine)");
    else
        MT_FAIL(r.path, ": \"curriculum_learning.schedule_type\" \"", schedule.substr(0, 64),
                "\": unsupported curriculum schedule type (fixed_linear, fixed_root, "
                "fixed_discrete or custom)");
    MT_CHECK(schedule_config, r.path, ": curriculum learning with ", schedule,
             " requires \"curriculum_learning.schedule_config\"");
    std::set<std::string> have;
    for (auto [k, v] : r.section(*schedule_config, "curriculum_learning.schedule_config")) {
        const std::string key = "curriculum_learning.schedule_config." + std::string(k);
        have.insert(std::string(k));
        if (k == "total_curriculum_step")
            c.total_curriculum_step = r.integer(v, key);
        else if (k == "difficulty_step")
            c.difficulty_step = r.integer(v, key);
        else if (k == "root_degree")
            c.root_degree = r.number(v, key);
        else if (k == "difficulty")
            c.difficulty = integers(r, v, key);
        else if (k == "max_step")
            c.max_step = integers(r, v, key);
        else
            r.refuse(key, "this curriculum schedule key");
    }
    std::vector<const char*> needed;
    if (c.schedule == Schedule::fixed_discrete)
        needed = {"difficulty", "max_step"};
    else
        needed = {"total_curriculum_step", "difficulty_step"};
    if (c.schedule == Schedule::fixed_root) needed.push_back("root_degree");
    for (const char* n : needed)
        MT_CHECK(have.count(n), r.path, ": curriculum learning with ", schedule,
                 " schedule requires \"curriculum_learning.schedule_config.", n, "\"");
    if (c.schedule == Schedule::fixed_discrete) {
        MT_CHECK(c.difficulty.size() == c.max_step.size() + 1, r.path,
                 ": \"curriculum_learning.schedule_config.difficulty\" must have one entry more "
                 "than \"max_step\" (",
                 c.difficulty.size(), " and ", c.max_step.size(), ")");
        for (int64_t d : c.difficulty)
            MT_CHECK(d >= 1, r.path,
                     ": \"curriculum_learning.schedule_config.difficulty\" must hold positive "
                     "sequence lengths, got ",
                     d);
    } else {
        MT_CHECK(c.total_curriculum_step > 0 && c.difficulty_step > 0, r.path,
                 ": \"curriculum_learning.schedule_config\": total_curriculum_step and "
                 "difficulty_step must be positive");
        MT_CHECK(c.root_degree > 0, r.path,
                 ": \"curriculum_learning.schedule_config.root_degree\" must be positive");
    }
    return c;
}

}  // namespace

DeepSpeedConfig read_deepspeed_config(const std::string& path) {
    simdjson::dom::parser parser;
    element root;
    auto error = parser.load(path).get(root);
    MT_CHECK(!error, path, ": not a DeepSpeed JSON configuration (", simdjson::error_message(error),
             ")");
    const Reader r{path};
    DeepSpeedConfig c;
    for (auto [k, v] : r.section(root, "the configuration")) {
        const std::string key(k);
        if (k == "train_batch_size")
            c.train_batch_size = r.integer(v, key);
        else if (k == "train_micro_batch_size_per_gpu")
            c.train_micro_batch_size_per_gpu = r.integer(v, key);
        else if (k == "gradient_accumulation_steps")
            c.gradient_accumulation_steps = r.integer(v, key);
        else if (k == "gradient_clipping")
            c.gradient_clipping = r.number(v, key);
        else if (k == "fp16")
            read_fp16(r, v, c);
        else if (k == "bf16" || k == "bfloat16")
            read_bf16(r, v, c);
        else if (k == "zero_optimization")
            read_zero(r, v, c);
        else if (k == "curriculum_learning")
            c.curriculum = read_curriculum(r, v);
        else if (k == "data_efficiency" || k == "elasticity" || k == "amp" ||
                 k == "compression_training") {
            const bool on = k == "compression_training" || r.enabled(v, key);
            if (on)
                r.refuse(key, k == "data_efficiency" ? "DeepSpeed's data-efficiency library"
                              : k == "elasticity"    ? "DeepSpeed's elastic training"
                              : k == "amp"           ? "NVIDIA apex AMP"
                                                     : "DeepSpeed's compression training");
        } else if (k == "data_types") {
            for (auto [dk, dv] : r.section(v, key)) {
                const std::string sub = key + "." + std::string(dk);
                if (dk != "grad_accum_dtype" || (!dv.is_null() && r.text(dv, sub) != "fp32"))
                    r.refuse(sub, "gradient accumulation outside fp32");
            }
        } else if (k == "communication_data_type") {
            if (!v.is_null() && r.text(v, key) != "fp32")
                r.refuse(key, "gradient communication outside fp32");
        } else if (!kNoEffect.count(k)) {
            r.refuse(key, "this DeepSpeed configuration key");
        }
    }
    MT_CHECK(!(c.fp16 && c.bf16), path, ": fp16 and bf16 cannot both be enabled");
    for (auto [value, key] :
         {std::pair{c.train_batch_size, "train_batch_size"},
          std::pair{c.train_micro_batch_size_per_gpu, "train_micro_batch_size_per_gpu"},
          std::pair{c.gradient_accumulation_steps, "gradient_accumulation_steps"}})
        MT_CHECK(!value || *value > 0, path, ": \"", key, "\" must be positive, got ", *value);
    MT_CHECK(c.gradient_clipping >= 0, path, ": \"gradient_clipping\" must not be negative");
    return c;
}

void check_deepspeed_batch(const DeepSpeedConfig& c, const std::string& path,
                           int64_t data_parallel_size) {
    if (!c.train_batch_size || !c.train_micro_batch_size_per_gpu || !c.gradient_accumulation_steps)
        return;
    MT_CHECK(*c.train_batch_size == *c.train_micro_batch_size_per_gpu *
                                        *c.gradient_accumulation_steps * data_parallel_size,
             path,
             ": Check batch related parameters. train_batch_size is not equal to "
             "micro_batch_per_gpu * gradient_acc_step * world_size ",
             *c.train_batch_size, " != ", *c.train_micro_batch_size_per_gpu, " * ",
             *c.gradient_accumulation_steps, " * ", data_parallel_size);
}

}  // namespace mt::train
