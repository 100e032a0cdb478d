// The `torch` checkpoint format: Megatron's directory layout, a save -> load round trip equal bit
// for bit, the golden bytes of our writer (checked with torch.load by
// tests/fixtures/torch_checkpoint/make_fixtures.py), reading a Megatron-shaped checkpoint into a
// GPT model, --finetune / --no-load-optim, clear errors for mis-shaped or missing tensors, and
// an interrupted save or a truncated file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "mt/nn/parameter.h"
#include "mt/registry.h"
#include "mt/train/checkpointing.h"
#include "same_bytes.h"
#include "test_support.h"
#include "torch_checkpoint.h"

namespace mt::plugins::torch_ckpt {
namespace {

namespace fs = std::filesystem;
using mt::test::error_of;
using mt::test::TempDir;

const char* kPt = "mp_rank_00/model_optim_rng.pt";

ModelArgs tiny_args() {
    return {{"num-layers", "1"},
            {"hidden-size", "8"},
            {"num-attention-heads", "2"},
            {"seq-length", "8"},
            {"max-position-embeddings", "8"},
            {"vocab-size", "100"}};
}

// k + (j % 1024) / 1024 + offset, times sign: the values make_fixtures.py writes.
void fill_formula(Tensor& t, int64_t k, float offset = 0, float sign = 1) {
    float* p = t.data<float>();
    for (int64_t j = 0; j < t.numel(); ++j)
        p[j] = sign * (float(k) + offset + float(j % 1024) / 1024.0f);
}

// A tiny GPT run: model, Adam, schedule and loop, as megatron-train wires them.
struct TinyRun {
    std::unique_ptr<Model> model;
    std::unique_ptr<optim::Optimizer> optimizer;
    std::unique_ptr<optim::LrScheduler> scheduler;
    std::unique_ptr<train::Trainer> trainer;
    optim::OptimizerConfig config;

    explicit TinyRun(ModelArgs args = tiny_args()) {
        model = Registry::global().create_model("gpt")->build(args);
        config.adam_beta2 = 0.95;
        optimizer = std::make_unique<optim::Optimizer>(single_process_context().backend,
                                                       model->parameters(), config);
        optim::LrScheduleConfig sc;
        sc.max_lr = 1e-3;
        sc.min_lr = 1e-4;
        sc.lr_warmup_steps = 8;
        sc.lr_decay_steps = 400;
        sc.lr_decay_style = optim::LrDecayStyle::cosine;
        sc.wd_incr_steps = 400;
        scheduler = std::make_unique<optim::LrScheduler>(sc);
        train::TrainerOptions o;
        o.micro_batch_size = 2;
        o.global_batch_size = 4;
        trainer = std::make_unique<train::Trainer>(*model, *optimizer, *scheduler, o,
                                                   [](const std::string&) {});
    }
    train::TrainingParts parts() { return {*model, *optimizer, *scheduler, *trainer}; }

    // The state make_fixtures.py checks: formula values at iteration 2.
    void set_formula_state() {
        auto params = model->parameters();
        for (size_t k = 0; k < params.size(); ++k) {
            fill_formula(params[k]->value, int64_t(k));
            fill_formula(optimizer->first()[k], int64_t(k), 0, -1);
            fill_formula(optimizer->second()[k], int64_t(k), 1);
        }
        optimizer->set_steps(2);
        scheduler->set_num_steps(8);
        trainer->set_progress(2, 8, 0);
        trainer->set_dropout_rng(1234, 4096);
    }
};

CheckpointState formula_state(TinyRun& run) {
    run.set_formula_state();
    train::CaptureOptions o;
    o.args = {{"num_layers", int64_t(1)},          {"hidden_size", int64_t(8)},
              {"num_attention_heads", int64_t(2)}, {"ffn_hidden_size", int64_t(32)},
              {"padded_vocab_size", int64_t(128)}, {"params_dtype", std::string("float32")}};
    return train::capture_checkpoint(run.parts(), o);
}

TEST(TorchCheckpoint, WritesMegatronsLayoutAndRoundTripsBitForBit) {
    TempDir dir;
    TinyRun run;
    CheckpointState saved = formula_state(run);
    TorchCheckpoint format;
    EXPECT_FALSE(format.detect(dir.path()));
    format.save(dir.path(), saved);
    EXPECT_EQ(mt::test::read_file(dir / "latest_checkpointed_iteration.txt"), "2");
    EXPECT_TRUE(fs::exists(dir / "iter_0000002" / kPt));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 2)
        << "only the tracker and iter_0000002";
    ASSERT_TRUE(format.detect(dir.path()));

    CheckpointState loaded = format.load(dir.path());
    EXPECT_EQ(loaded.iteration, 2);
    EXPECT_EQ(loaded.consumed_train_samples, 8);
    EXPECT_EQ(loaded.consumed_valid_samples, 0);
    EXPECT_EQ(loaded.args, saved.args);
    ASSERT_EQ(loaded.model.size(), saved.model.size());
    for (size_t i = 0; i < saved.model.size(); ++i) {
        EXPECT_EQ(loaded.model[i].first, saved.model[i].first);
        EXPECT_TRUE(same_bytes(loaded.model[i].second.local, saved.model[i].second.local))
            << saved.model[i].first;
    }
    ASSERT_TRUE(loaded.optimizer && loaded.scheduler && loaded.rng);
    EXPECT_EQ(loaded.optimizer->step, 2);
    EXPECT_EQ(loaded.optimizer->lr, saved.optimizer->lr);
    EXPECT_EQ(loaded.optimizer->beta2, 0.95);
    for (size_t i = 0; i < saved.optimizer->params.size(); ++i) {
        const auto &a = saved.optimizer->params[i], &b = loaded.optimizer->params[i];
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.weight_decay, b.weight_decay) << a.name;
        EXPECT_TRUE(same_bytes(a.exp_avg, b.exp_avg)) << a.name;
        EXPECT_TRUE(same_bytes(a.exp_avg_sq, b.exp_avg_sq)) << a.name;
    }
    const auto &s = *saved.scheduler, &l = *loaded.scheduler;
    EXPECT_EQ(l.num_steps, 8);
    EXPECT_EQ(std::tie(l.max_lr, l.min_lr, l.lr_warmup_steps, l.lr_decay_steps, l.lr_decay_style,
                       l.start_wd, l.end_wd, l.wd_incr_steps, l.wd_incr_style),
              std::tie(s.max_lr, s.min_lr, s.lr_warmup_steps, s.lr_decay_steps, s.lr_decay_style,
                       s.start_wd, s.end_wd, s.wd_incr_steps, s.wd_incr_style));
    EXPECT_EQ(loaded.rng->dropout_seed, 1234u);
    EXPECT_EQ(loaded.rng->dropout_offset, 4096u);

    // Restored into a fresh run, everything equals the saved run.
    TinyRun fresh;
    train::restore_checkpoint(loaded, fresh.parts(), {});
    auto a = run.model->parameters(), b = fresh.model->parameters();
    for (size_t k = 0; k < a.size(); ++k) {
        EXPECT_TRUE(same_bytes(a[k]->value, b[k]->value)) << a[k]->name;
        EXPECT_TRUE(same_bytes(run.optimizer->first()[k], fresh.optimizer->first()[k]));
        EXPECT_TRUE(same_bytes(run.optimizer->second()[k], fresh.optimizer->second()[k]));
    }
    EXPECT_EQ(fresh.optimizer->steps(), 2);
    EXPECT_EQ(fresh.scheduler->num_steps(), 8);

    // As in Megatron (torch's load_state_dict), the checkpoint's betas and eps win over the
    // flags'.
    TinyRun other_flags;
    optim::OptimizerConfig flags = other_flags.optimizer->config();
    flags.adam_beta2 = 0.999;
    flags.adam_eps = 1e-6;
    other_flags.optimizer->set_config(flags);
    train::restore_checkpoint(loaded, other_flags.parts(), {});
    EXPECT_EQ(other_flags.optimizer->config().adam_beta2, 0.95);
    EXPECT_EQ(other_flags.optimizer->config().adam_eps, 1e-8);
    EXPECT_EQ(fresh.trainer->iteration(), 2);
    EXPECT_EQ(fresh.trainer->consumed_train_samples(), 8);
    EXPECT_EQ(fresh.trainer->dropout_offset(), 4096u);

    // The schedule's settings, as Megatron's OptimizerParamScheduler.load_state_dict: a flag that
    // differs from the checkpoint is an error unless --override-opt_param-scheduler (the flags')
    // or --use-checkpoint-opt_param-scheduler (the checkpoint's).
    for (const auto from :
         {train::ScheduleSettings::must_match, train::ScheduleSettings::from_flags,
          train::ScheduleSettings::from_checkpoint}) {
        TinyRun other;
        optim::LrScheduleConfig sc = other.scheduler->config();
        sc.max_lr = 3e-3;
        sc.lr_decay_style = optim::LrDecayStyle::linear;
        *other.scheduler = optim::LrScheduler(sc);
        train::RestoreOptions o;
        o.schedule = from;
        if (from == train::ScheduleSettings::must_match) {
            EXPECT_NE(error_of([&] { train::restore_checkpoint(loaded, other.parts(), o); })
                          .find("OptimizerParamScheduler: class input value 0.003 and checkpoint "
                                "value 0.001 for learning rate do not match"),
                      std::string::npos);
            continue;
        }
        train::restore_checkpoint(loaded, other.parts(), o);
        const bool flags = from == train::ScheduleSettings::from_flags;
        EXPECT_EQ(other.scheduler->config().max_lr, flags ? 3e-3 : 1e-3);
        EXPECT_EQ(other.scheduler->config().lr_decay_style,
                  flags ? optim::LrDecayStyle::linear : optim::LrDecayStyle::cosine);
        EXPECT_EQ(other.scheduler->num_steps(), 8);
    }
}

TEST(TorchCheckpoint, WritesTheGoldenBytes) {
    TempDir dir;
    TinyRun run;
    TorchCheckpoint format;
    format.save(dir.path(), formula_state(run));
    const fs::path golden = mt::test::fixtures_dir() / "torch_checkpoint" / "ours";
    if (std::getenv("MT_UPDATE_FIXTURES")) {
        fs::remove_all(golden);
        fs::copy(dir.path(), golden, fs::copy_options::recursive);
    }
    EXPECT_EQ(mt::test::read_file(dir / "latest_checkpointed_iteration.txt"),
              mt::test::read_file(golden / "latest_checkpointed_iteration.txt"));
    EXPECT_TRUE(mt::test::read_file(dir / "iter_0000002" / kPt) ==
                mt::test::read_file(golden / "iter_0000002" / kPt))
        << "our writer no longer produces the bytes make_fixtures.py checked with torch.load";
}

TEST(TorchCheckpoint, ReadsAMegatronCheckpointIntoTheModel) {
    TorchCheckpoint format;
    const fs::path dir = mt::test::fixtures_dir() / "torch_checkpoint" / "megatron";
    CheckpointState state = format.load(dir);
    EXPECT_EQ(state.iteration, 5);
    EXPECT_EQ(state.consumed_train_samples, 20);
    EXPECT_EQ(state.consumed_valid_samples, 8);
    EXPECT_EQ(state.num_floating_point_operations_so_far, 123456789.0);
    ASSERT_NE(state.find_arg("params_dtype"), nullptr);
    EXPECT_EQ(*state.find_arg("params_dtype"), ArgValue(std::string("float32")));
    EXPECT_EQ(state.model.size(), 16u) << "TE _extra_state entries are skipped";
    EXPECT_FALSE(state.rng) << "Megatron's generator states are not ours";
    ASSERT_TRUE(state.optimizer);
    EXPECT_EQ(state.optimizer->step, 5);
    EXPECT_EQ(state.optimizer->beta2, 0.95);
    EXPECT_EQ(state.optimizer->lr, 9e-4);

    TinyRun run;
    train::restore_checkpoint(state, run.parts(), {});
    auto params = run.model->parameters();
    for (size_t k = 0; k < params.size(); ++k) {
        Tensor expect = Tensor::empty(params[k]->value.shape(), DType::f32);
        fill_formula(expect, int64_t(k));
        EXPECT_TRUE(same_bytes(params[k]->value, expect)) << params[k]->name;
        fill_formula(expect, int64_t(k), 0, -1);
        EXPECT_TRUE(same_bytes(run.optimizer->first()[k], expect)) << params[k]->name;
        fill_formula(expect, int64_t(k), 1);
        EXPECT_TRUE(same_bytes(run.optimizer->second()[k], expect)) << params[k]->name;
    }
    EXPECT_EQ(run.optimizer->steps(), 5);
    EXPECT_EQ(run.scheduler->num_steps(), 20);
    EXPECT_EQ(run.trainer->iteration(), 5);
    EXPECT_EQ(run.trainer->consumed_valid_samples(), 8);
    EXPECT_EQ(run.trainer->dropout_offset(), 0u);

    TinyRun finetune;
    train::RestoreOptions o;
    o.finetune = true;
    train::restore_checkpoint(state, finetune.parts(), o);
    EXPECT_EQ(finetune.trainer->iteration(), 0);
    EXPECT_EQ(finetune.trainer->consumed_train_samples(), 0);
    EXPECT_EQ(finetune.optimizer->steps(), 0);
    EXPECT_TRUE(same_bytes(finetune.model->parameters()[3]->value, params[3]->value));

    TinyRun no_optim;
    o = {};
    o.optimizer = false;
    train::restore_checkpoint(state, no_optim.parts(), o);
    EXPECT_EQ(no_optim.trainer->iteration(), 5);
    EXPECT_EQ(no_optim.optimizer->steps(), 0);
    EXPECT_EQ(no_optim.scheduler->num_steps(), 0);
}

// Megatron's --transformer-impl local keeps the norms apart; they load into the fused names.
std::string to_local_name(std::string name) {
    for (auto [te, local] : {std::pair{"self_attention.linear_qkv.layer_norm_", "input_layernorm."},
                             std::pair{"mlp.linear_fc1.layer_norm_", "pre_mlp_layernorm."}})
        if (auto at = name.find(te); at != std::string::npos)
            name.replace(at, std::strlen(te), local);
    return name;
}

TEST(TorchCheckpoint, LocalSpecNamesLoadIntoTransformerEngineNames) {
    TorchCheckpoint format;
    CheckpointState state = format.load(mt::test::fixtures_dir() / "torch_checkpoint" / "megatron");
    int renamed = 0;
    for (auto& [name, t] : state.model) {
        std::string local = to_local_name(name);
        renamed += local != name;
        name = local;
    }
    for (auto& p : state.optimizer->params) p.name = to_local_name(p.name);
    EXPECT_EQ(renamed, 4);
    TinyRun run;
    train::restore_checkpoint(state, run.parts(), {});
    auto params = run.model->parameters();
    for (size_t k = 0; k < params.size(); ++k) {
        Tensor expect = Tensor::empty(params[k]->value.shape(), DType::f32);
        fill_formula(expect, int64_t(k), 0, -1);
        EXPECT_TRUE(same_bytes(run.optimizer->first()[k], expect)) << params[k]->name;
    }
}

TEST(TorchCheckpoint, MisShapedOrMissingTensorsAreErrorsNamingTheKey) {
    TorchCheckpoint format;
    CheckpointState state = format.load(mt::test::fixtures_dir() / "torch_checkpoint" / "megatron");
    auto args = tiny_args();
    args["ffn-hidden-size"] = "16";
    TinyRun narrow(args);
    std::string e = error_of([&] { train::restore_checkpoint(state, narrow.parts(), {}); });
    EXPECT_NE(e.find("'decoder.layers.0.mlp.linear_fc1.weight' has shape [32, 8] in the "
                     "checkpoint but [16, 8] in the model"),
              std::string::npos)
        << e;
    args = tiny_args();
    args["num-layers"] = "2";
    TinyRun deeper(args);
    e = error_of([&] { train::restore_checkpoint(state, deeper.parts(), {}); });
    EXPECT_NE(e.find("no model tensor 'decoder.layers.1.self_attention.linear_proj.weight'"),
              std::string::npos)
        << e;
}

TEST(TorchCheckpoint, AnInterruptedSaveLeavesTheLatestCheckpointIntact) {
    TempDir dir;
    TinyRun run;
    TorchCheckpoint format;
    format.save(dir.path(), formula_state(run));
    // What a kill during the save of iteration 4 leaves: a temporary iteration directory with a
    // partial file (its process, a pid above any pid_max, is gone), and a temporary tracker
    // that was never renamed.
    const fs::path stale = dir / "iter_0000004.tmp.2147483000";
    fs::create_directories(stale / "mp_rank_00");
    mt::test::write_file(stale / kPt, "PK\x03\x04 partial");
    mt::test::write_file(dir / "latest_checkpointed_iteration.txt.tmp.999", "4");
    EXPECT_EQ(format.load(dir.path()).iteration, 2);
    // A save under way in a live process (this test's parent) is left alone.
    const fs::path live = dir / ("iter_0000009.tmp." + std::to_string(::getppid()));
    fs::create_directories(live);

    run.trainer->set_progress(4, 16, 0);
    format.save(dir.path(), train::capture_checkpoint(run.parts(), {}));
    EXPECT_EQ(format.load(dir.path()).iteration, 4);
    EXPECT_FALSE(fs::exists(stale)) << "the next save cleans what a killed one left";
    EXPECT_TRUE(fs::exists(live));
    fs::remove_all(live);
    EXPECT_TRUE(fs::exists(dir / "iter_0000002" / kPt)) << "older checkpoints stay";
    // Saving the same iteration again replaces it and leaves nothing behind.
    format.save(dir.path(), train::capture_checkpoint(run.parts(), {}));
    EXPECT_EQ(format.load(dir.path()).iteration, 4);
    size_t entries = 0;
    for (const auto& e : fs::directory_iterator(dir.path()))
        entries += e.path().filename().string().find(".old.") == std::string::npos;
    EXPECT_EQ(entries, std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()));
}

TEST(TorchCheckpoint, TruncatedFilesAndBadTrackersAreClearErrors) {
    TempDir dir;
    TinyRun run;
    TorchCheckpoint format;
    format.save(dir.path(), formula_state(run));
    const fs::path file = dir / "iter_0000002" / kPt;
    fs::resize_file(file, fs::file_size(file) / 2);
    std::string e = error_of([&] { format.load(dir.path()); });
    EXPECT_NE(e.find("cannot read checkpoint " + file.string()), std::string::npos) << e;

    // A tracker that is a device (a link to /dev/zero) or far too long is an error, not a hang.
    fs::remove(dir / "latest_checkpointed_iteration.txt");
    fs::create_symlink("/dev/zero", dir / "latest_checkpointed_iteration.txt");
    e = error_of([&] { format.load(dir.path()); });
    EXPECT_NE(e.find("latest_checkpointed_iteration.txt: not a regular file"), std::string::npos)
        << e;
    fs::remove(dir / "latest_checkpointed_iteration.txt");
    mt::test::write_file(dir / "latest_checkpointed_iteration.txt", std::string(100000, '7'));
    e = error_of([&] { format.load(dir.path()); });
    EXPECT_NE(e.find("longer than 64 bytes"), std::string::npos) << e;

    mt::test::write_file(dir / "latest_checkpointed_iteration.txt", "abc");
    e = error_of([&] { format.load(dir.path()); });
    EXPECT_NE(e.find("'abc' is neither an iteration > 0 nor 'release'"), std::string::npos) << e;

    mt::test::write_file(dir / "latest_checkpointed_iteration.txt", "7");
    e = error_of([&] { format.load(dir.path()); });
    EXPECT_NE(e.find("iter_0000007/mp_rank_00/model_optim_rng.pt does not exist"),
              std::string::npos)
        << e;

    // Megatron's release checkpoints load as iteration 0.
    fs::create_directories(dir / "release/mp_rank_00");
    fs::copy_file(mt::test::fixtures_dir() / "torch_checkpoint/megatron/iter_0000005" / kPt,
                  dir / "release" / kPt);
    mt::test::write_file(dir / "latest_checkpointed_iteration.txt", "release");
    EXPECT_EQ(format.load(dir.path()).iteration, 0);
}

}  // namespace
}  // namespace mt::plugins::torch_ckpt
