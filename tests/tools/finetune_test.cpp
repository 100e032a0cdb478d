// megatron-eval's finetuning (tools/eval/finetune.h) without BERT: the sample order of
// Megatron's DistributedSampler loaders against torch's own (tests/fixtures/tasks/randperm.json,
// from make_randperm_fixture.py), the task datasets' batch layout, Megatron's accuracy lines and
// set names, and whole runs of a toy task model (a bag-of-words linear classifier registered
// here as a model family): --epochs 0, finetuning that learns, a pretrained checkpoint without
// the task head, and resuming mid-epoch to the same result.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "classification_dataset.h"
#include "finetune.h"
#include "finetune_order.h"
#include "finetune_task.h"
#include "mt/checkpoint.h"
#include "mt/data/pretraining_loader.h"
#include "mt/error.h"
#include "mt/nn/dropout.h"
#include "mt/nn/parameter.h"
#include "mt/registry.h"
#include "task_accuracy.h"
#include "test_support.h"

namespace {

using namespace mt;
using mt::test::TempDir;

// Sample i of a dataset of n is the tensor "index" = i.
class IndexDataset final : public data::SampleDataset {
  public:
    explicit IndexDataset(int64_t n) : n_(n) {}
    int64_t size() const override { return n_; }
    data::Split split() const override { return data::Split::train; }
    Batch batch(std::span<const int64_t> indices) const override {
        return {{"index", host_tensor(std::vector<int64_t>(indices.begin(), indices.end()),
                                      {int64_t(indices.size())})}};
    }

  private:
    int64_t n_;
};

simdjson::dom::element randperm_fixture() {
    static simdjson::dom::parser parser;
    static simdjson::dom::element doc =
        parser.load((mt::test::fixtures_dir() / "tasks" / "randperm.json").string());
    return doc;
}

std::vector<int64_t> ints(simdjson::dom::array a) {
    std::vector<int64_t> out;
    for (int64_t v : a) out.push_back(v);
    return out;
}

TEST(FinetuneOrder, TrainerChunksGiveEachRankItsDataLoaderBatches) {
    int cases = 0;
    for (simdjson::dom::element c : simdjson::dom::array(randperm_fixture()["loaders"])) {
        const int64_t n = c["n"], dp = c["data_parallel"], mbs = c["micro_batch_size"];
        const bool drop_last = c["drop_last"];
        const std::vector<int64_t> seeds = ints(c["seeds"]);
        const std::string what =
            "n " + std::to_string(n) + " dp " + std::to_string(dp) + " mbs " + std::to_string(mbs);
        const IndexDataset dataset(n);
        const eval::LoaderShape shape{n, mbs, dp, drop_last};
        const eval::EpochOrderedDataset view(dataset, shape, int64_t(seeds.size()),
                                             [&](int64_t e) { return uint64_t(seeds[size_t(e)]); });
        simdjson::dom::array epochs = c["batches"];
        for (int64_t rank = 0; rank < dp; ++rank) {
            data::PretrainingLoader loader(view, mbs, int(rank), int(dp), 0);
            int64_t e = 0;
            for (simdjson::dom::array per_rank : epochs) {
                simdjson::dom::array batches = per_rank.at(size_t(rank));
                EXPECT_EQ(eval::batches_per_epoch(shape), int64_t(batches.size())) << what;
                for (simdjson::dom::array want : batches) {
                    Batch got;
                    ASSERT_TRUE(loader.next(got)) << what << " rank " << rank << " epoch " << e;
                    const Tensor& index = got.at("index");
                    EXPECT_EQ(std::vector<int64_t>(index.data<int64_t>(),
                                                   index.data<int64_t>() + index.numel()),
                              ints(want))
                        << what << " rank " << rank << " epoch " << e;
                }
                // The sampler alone: the rank's batches joined (whole when nothing is dropped).
                if (!drop_last) {
                    std::vector<int64_t> joined;
                    for (simdjson::dom::array b : batches)
                        for (int64_t v : b) joined.push_back(v);
                    EXPECT_EQ(
                        eval::distributed_sampler_indices(n, dp, rank, uint64_t(seeds[size_t(e)])),
                        joined)
                        << what;
                }
                ++e;
            }
            Batch rest;
            EXPECT_FALSE(loader.next(rest)) << what << ": the view ends with its epochs";
        }
        ++cases;
    }
    EXPECT_GE(cases, 8);
}

TEST(FinetuneOrder, RefusesALastPartialBatch) {
    const IndexDataset dataset(11);
    // --keep-last where each of 2 ranks gets 6 samples in batches of 4.
    const std::string message = mt::test::error_of([&] {
        eval::EpochOrderedDataset(dataset, {11, 4, 2, false}, 1, [](int64_t) { return 0; });
    });
    EXPECT_NE(message.find("not supported yet: --keep-last with a last partial batch"),
              std::string::npos)
        << message;
    // Without a partial batch --keep-last is the same as drop_last.
    EXPECT_EQ(eval::batches_per_epoch({11, 3, 2, false}), 2);
    EXPECT_EQ(eval::batches_per_epoch({11, 4, 2, false}), 2);
    EXPECT_EQ(eval::batches_per_epoch({11, 4, 2, true}), 1);
}

eval::ClassificationExample example(int32_t label, int rows, int32_t base) {
    eval::ClassificationExample e;
    e.label = label;
    for (int r = 0; r < rows; ++r)
        e.rows.push_back({{base + r, base + r + 1, 0}, {0, 1, 0}, {1, 1, 0}});
    return e;
}

TEST(ClassificationDataset, CollatesMegatronsBatchLayout) {
    const eval::ClassificationDataset pairs({example(1, 1, 10), example(0, 1, 20)}, false,
                                            data::Split::valid);
    const std::vector<int64_t> order{1, 0};
    Batch b = pairs.batch(order);
    EXPECT_EQ(b.at("text").shape(), (Shape{2, 3}));
    EXPECT_EQ(b.at("label").shape(), (Shape{2}));
    const std::vector<int64_t> text(b.at("text").data<int64_t>(), b.at("text").data<int64_t>() + 6);
    EXPECT_EQ(text, (std::vector<int64_t>{20, 21, 0, 10, 11, 0}));
    EXPECT_EQ(b.at("types").data<int64_t>()[1], 1);
    EXPECT_EQ(b.at("padding_mask").data<int64_t>()[2], 0);
    EXPECT_EQ(b.at("label").data<int64_t>()[0], 0);
    EXPECT_EQ(b.at("label").data<int64_t>()[1], 1);

    const eval::ClassificationDataset choices({example(3, 4, 10), example(2, 4, 50)}, true,
                                              data::Split::train);
    b = choices.batch(order);
    EXPECT_EQ(b.at("text").shape(), (Shape{2, 4, 3}));
    EXPECT_EQ(b.at("padding_mask").shape(), (Shape{2, 4, 3}));
    // Example 50's choice 2, then example 10's choice 0.
    EXPECT_EQ(b.at("text").data<int64_t>()[2 * 3], 52);
    EXPECT_EQ(b.at("text").data<int64_t>()[4 * 3], 10);
    EXPECT_EQ(b.at("label").data<int64_t>()[0], 2);

    EXPECT_NE(mt::test::error_of([] {
                  eval::ClassificationDataset({example(0, 4, 1), example(0, 3, 1)}, true,
                                              data::Split::train);
              }).find("example 1 has 3 rows"),
              std::string::npos);
}

TEST(TaskAccuracy, MegatronsLinesAndNames) {
    EXPECT_EQ(eval::dataset_accuracy_line(2, "dev-middle", {2, 3}, 1.23456),
              " > |epoch: 2| metrics for dev-middle: correct / total = 2 / 3 = 66.6667 %, "
              "elapsed time (sec): 1.235");
    EXPECT_EQ(eval::overall_accuracy_line(-1, {1, 8}),
              " >> |epoch: -1| overall: correct / total = 1 / 8 = 12.5000 %");
    EXPECT_NE(mt::test::error_of([] {
                  eval::overall_accuracy_line(0, {0, 0});
              }).find("no examples"),
              std::string::npos);
    const auto race = eval::finetune_task("RACE"), mnli = eval::finetune_task("MNLI"),
               qqp = eval::finetune_task("QQP");
    EXPECT_EQ(race.sample_multiplier, 4);
    EXPECT_EQ(mnli.num_classes, 3);
    EXPECT_EQ(eval::validation_set_name(race, "data/RACE/dev/middle/"), "dev-middle");
    EXPECT_EQ(eval::validation_set_name(mnli, "glue/MNLI/dev_matched.tsv"), "dev-matched");
    // Python's str.strip('.tsv') strips characters, not a suffix: dev.tsv loses its 'v' too.
    EXPECT_EQ(eval::validation_set_name(qqp, "glue/QQP/dev.tsv"), "de");
    EXPECT_EQ(eval::validation_set_name(qqp, "dev_set.csv"), "dev-set.c");
    EXPECT_NE(mt::test::error_of([] { eval::finetune_task("SQUAD"); }).find("not a finetuning"),
              std::string::npos);
}

// A bag-of-words linear task model: classification logits[b, c] = Σ_t mask·W[c, token] + bias[c]
// ([B, T] rows); multiple choice logits[b, k] = the same score of row k with W[0], bias[0]
// ([B, C, T] rows); "lm loss" = cross entropy per example.
class ToyTaskModel final : public Model {
  public:
    ToyTaskModel(int64_t vocab, int64_t classes, bool multiple_choice)
        : vocab_(vocab),
          classes_(classes),
          multiple_choice_(multiple_choice),
          w_(nn::make_parameter(single_process_context().backend, "encoder.weight",
                                {multiple_choice ? 1 : classes, vocab}, DType::f32, {}, true)),
          b_(nn::make_parameter(
              single_process_context().backend,
              std::string(multiple_choice ? "multichoice_head" : "classification_head") + ".bias",
              {multiple_choice ? 1 : classes}, DType::f32, {}, false)) {}
    std::vector<nn::Parameter*> parameters() override { return {&w_, &b_}; }
    void initialize(uint64_t seed) override {
        for (int64_t i = 0; i < w_.value.numel(); ++i)
            w_.value.data<float>()[i] = 0.01f * float((i * 7 + int64_t(seed)) % 5);
        for (int64_t i = 0; i < b_.value.numel(); ++i) b_.value.data<float>()[i] = 0.1f;
    }
    struct Saved : Activations {
        Batch batch;
        std::vector<double> probs;
    };
    Tensor predict(const Batch& batch) override { return logits(batch); }
    Losses forward(const Batch& batch, nn::DropoutContext&,
                   std::unique_ptr<Activations>* saved) override {
        const Tensor z = logits(batch);
        const int64_t B = z.size(0), C = z.size(1);
        Tensor loss = Tensor::empty({B}, DType::f32), mask = Tensor::empty({B}, DType::f32);
        auto s = std::make_unique<Saved>();
        for (int64_t b = 0; b < B; ++b) {
            double top = -1e30, sum = 0;
            for (int64_t c = 0; c < C; ++c) top = std::max(top, double(z.data<float>()[b * C + c]));
            for (int64_t c = 0; c < C; ++c) sum += std::exp(z.data<float>()[b * C + c] - top);
            const int64_t label = batch.at("label").data<int64_t>()[b];
            loss.data<float>()[b] = float(top + std::log(sum) - z.data<float>()[b * C + label]);
            mask.data<float>()[b] = 1;
            for (int64_t c = 0; c < C; ++c)
                s->probs.push_back(std::exp(z.data<float>()[b * C + c] - top) / sum);
        }
        s->batch = batch;
        if (saved) *saved = std::move(s);
        return {{"lm loss", loss, mask, LossTerm::Reporting::micro_batch_mean}};
    }
    void backward(const std::vector<Tensor>& dlosses, const Activations& a) override {
        const auto& s = static_cast<const Saved&>(a);
        const Tensor& text = s.batch.at("text");
        const Tensor& mask = s.batch.at("padding_mask");
        const int64_t B = text.size(0), rows = multiple_choice_ ? text.size(1) : 1;
        const int64_t T = text.size(-1), C = multiple_choice_ ? rows : classes_;
        for (int64_t b = 0; b < B; ++b) {
            const int64_t label = s.batch.at("label").data<int64_t>()[b];
            for (int64_t c = 0; c < C; ++c) {
                const float d = float(s.probs[size_t(b * C + c)] - (c == label ? 1.0 : 0.0)) *
                                dlosses[0].data<float>()[b];
                const int64_t row = multiple_choice_ ? c : 0, weights = multiple_choice_ ? 0 : c;
                for (int64_t t = 0; t < T; ++t) {
                    const int64_t at = (b * rows + row) * T + t;
                    w_.grad.data<float>()[weights * vocab_ + text.data<int64_t>()[at]] +=
                        d * float(mask.data<int64_t>()[at]);
                }
                b_.grad.data<float>()[weights] += d;
            }
        }
    }
    double training_flops(int64_t samples) const override { return double(samples); }

  private:
    Tensor logits(const Batch& batch) const {
        const Tensor& text = batch.at("text");
        const Tensor& mask = batch.at("padding_mask");
        const int64_t B = text.size(0), rows = multiple_choice_ ? text.size(1) : 1;
        const int64_t T = text.size(-1), C = multiple_choice_ ? rows : classes_;
        Tensor z = Tensor::empty({B, C}, DType::f32);
        for (int64_t b = 0; b < B; ++b)
            for (int64_t c = 0; c < C; ++c) {
                const int64_t row = multiple_choice_ ? c : 0, weights = multiple_choice_ ? 0 : c;
                float v = b_.value.data<float>()[weights];
                for (int64_t t = 0; t < T; ++t) {
                    const int64_t at = (b * rows + row) * T + t;
                    v += float(mask.data<int64_t>()[at]) *
                         w_.value.data<float>()[weights * vocab_ + text.data<int64_t>()[at]];
                }
                z.data<float>()[b * C + c] = v;
            }
        return z;
    }

    int64_t vocab_, classes_;
    bool multiple_choice_;
    nn::Parameter w_, b_;
};

class ToyTaskFamily final : public ModelFamily {
  public:
    std::string_view name() const override { return "toy"; }
    std::vector<FlagInfo> flags() const override {
        FlagInfo seq_length;
        seq_length.name = "seq-length";
        seq_length.help = "tokens per row";
        return {seq_length};
    }
    ModelArgs resolved_args(const ModelArgs& args) const override { return args; }
    std::unique_ptr<Model> build(const ModelArgs& args, const BuildContext&) const override {
        const bool choices = args.at("task-head") == "multichoice";
        return std::make_unique<ToyTaskModel>(std::stoll(args.at("vocab-size")),
                                              choices ? 4 : std::stoll(args.at("num-classes")),
                                              choices);
    }
};

// QQP rows "id qid1 qid2 q1 q2 label": duplicates say "hello", the others "world".
std::string qqp_file(int rows, int offset) {
    std::string tsv = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n";
    for (int i = 0; i < rows; ++i) {
        const bool dup = (i + offset) % 3 != 0;
        tsv += std::to_string(i) + "\t1\t2\tit is " + std::string(dup ? "hello" : "world") +
               " x\tcafe " + (i % 2 ? "ab" : "un") + "\t" + (dup ? "1" : "0") + "\n";
    }
    return tsv;
}

// write_file into a directory made first.
void write_into(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    mt::test::write_file(path, text);
}

struct ToyRun {
    std::vector<eval::EpochAccuracy> results;
    std::string output;
};

eval::FinetuneFlags toy_flags(const TempDir& dir, const std::string& task) {
    eval::FinetuneFlags f;
    f.task = task;
    f.tokenizer.type = "BertWordPieceLowerCase";
    f.tokenizer.options.vocab_file =
        (mt::test::fixtures_dir() / "wordpiece" / "tiny_vocab.txt").string();
    auto& t = f.training;
    t.micro_batch_size = 4;
    t.schedule.lr = 0.05;
    t.schedule.lr_decay_style = "constant";
    t.schedule.start_weight_decay = t.schedule.end_weight_decay = 0.0;
    t.weight_decay = 0.0;
    t.log_interval = 1;
    t.eval_interval = 4;
    t.eval_iters = 1;
    if (task == "QQP") {
        write_into(dir / "QQP" / "train.tsv", qqp_file(26, 0));
        write_into(dir / "QQP" / "dev_a.tsv", qqp_file(9, 1));
        write_into(dir / "QQP" / "test_b.tsv", qqp_file(6, 2));
        f.train_data = {(dir / "QQP" / "train.tsv").string()};
        f.valid_data = {(dir / "QQP" / "dev_a.tsv").string(),
                        (dir / "QQP" / "test_b.tsv").string()};
    }
    return f;
}

ToyRun run_toy(const eval::FinetuneFlags& f) {
    const ToyTaskFamily family;
    testing::internal::CaptureStdout();
    ToyRun run;
    try {
        run.results = eval::finetune(f, family, {{"seq-length", "12"}}, family.flags());
    } catch (...) {
        run.output = testing::internal::GetCapturedStdout();
        throw;
    }
    run.output = testing::internal::GetCapturedStdout();
    return run;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

TEST(Finetune, EvaluationOnlyReportsEpochMinusOne) {
    TempDir dir;
    eval::FinetuneFlags f = toy_flags(dir, "QQP");
    f.epochs = 0;
    f.output_json = (dir / "out.json").string();
    const ToyRun r = run_toy(f);
    ASSERT_EQ(r.results.size(), 1u) << r.output;
    const eval::EpochAccuracy& a = r.results[0];
    EXPECT_EQ(a.epoch, -1);
    ASSERT_EQ(a.datasets.size(), 2u);
    EXPECT_EQ(a.datasets[0].first, "dev-a");
    // ".tsv" strips from both ends: the leading '/' keeps test's 't'.
    EXPECT_EQ(a.datasets[1].first, "test-b");
    EXPECT_EQ(a.datasets[0].second.total, 9);
    EXPECT_EQ(a.datasets[1].second.total, 6);
    EXPECT_EQ(a.overall.total, 15);
    EXPECT_TRUE(contains(r.output, "evaluation only mode, setting epoch to -1\n")) << r.output;
    EXPECT_TRUE(contains(r.output, " > |epoch: -1| metrics for dev-a: correct / total = "))
        << r.output;
    EXPECT_TRUE(contains(r.output, eval::overall_accuracy_line(-1, a.overall) + "\n")) << r.output;
    EXPECT_TRUE(contains(r.output, "done :-)")) << r.output;
    simdjson::dom::parser parser;
    simdjson::dom::element json = parser.load(f.output_json);
    EXPECT_EQ(std::string_view(json["task"]), "QQP");
    EXPECT_EQ(int64_t(json["results"].at(0)["overall"]["total"]), 15);
    EXPECT_EQ(int64_t(json["results"].at(0)["epoch"]), -1);
}

TEST(Finetune, TrainsEpochsAndMeasuresEachOne) {
    TempDir dir;
    eval::FinetuneFlags f = toy_flags(dir, "QQP");
    f.epochs = 3;
    f.training.seed = 1234;
    const ToyRun r = run_toy(f);
    ASSERT_EQ(r.results.size(), 3u) << r.output;
    for (int64_t e = 0; e < 3; ++e) {
        EXPECT_EQ(r.results[size_t(e)].epoch, e);
        EXPECT_TRUE(
            contains(r.output, eval::overall_accuracy_line(e, r.results[size_t(e)].overall)))
            << r.output;
    }
    // 26 samples in batches of 4: 6 iterations an epoch, 18 in all, the last 2 samples dropped.
    EXPECT_TRUE(contains(r.output, "iteration       18/      18 |")) << r.output;
    EXPECT_FALSE(contains(r.output, "iteration       19/")) << r.output;
    // Megatron's finetuning never counts consumed samples.
    EXPECT_TRUE(contains(r.output, "consumed samples:            0 |")) << r.output;
    EXPECT_TRUE(contains(r.output, "global batch size:     4 |")) << r.output;
    EXPECT_TRUE(contains(r.output, "working on epoch 1 ...\n")) << r.output;
    EXPECT_TRUE(contains(r.output, "working on epoch 3 ...\n")) << r.output;
    EXPECT_TRUE(contains(r.output, " validation loss at iteration 4 | lm loss value: "))
        << r.output;
    // It learns "hello" against "world".
    EXPECT_EQ(r.results.back().overall.correct, r.results.back().overall.total) << r.output;
    // The accuracy line of epoch 0 comes after iteration 6 and before iteration 7.
    const size_t end0 = r.output.find(" >> |epoch: 0|");
    EXPECT_LT(r.output.find("iteration        6/"), end0);
    EXPECT_GT(r.output.find("iteration        7/"), end0);
}

TEST(Finetune, RefusesWhatMegatronRefuses) {
    TempDir dir;
    eval::FinetuneFlags f = toy_flags(dir, "QQP");
    auto error = [&](const eval::FinetuneFlags& flags) {
        return mt::test::error_of([&] { run_toy(flags); });
    };
    EXPECT_NE(error(f).find("needs --epochs"), std::string::npos);
    f.epochs = 1;
    eval::FinetuneFlags accumulate = f;
    accumulate.training.global_batch_size = 8;
    EXPECT_NE(error(accumulate).find("gradient accumulation"), std::string::npos);
    eval::FinetuneFlags rampup = f;
    rampup.training.rampup = train::BatchRampup{4, 4, 100};
    EXPECT_NE(error(rampup).find("batch size scaling is not supported for finetuning"),
              std::string::npos);
    eval::FinetuneFlags keep = f;
    keep.keep_last = true;  // 26 samples: a last batch of 2
    EXPECT_NE(error(keep).find("not supported yet: --keep-last"), std::string::npos);
}

TEST(Finetune, RaceBatchesAreFourSequencesAnExample) {
    TempDir dir;
    std::string doc;
    for (int i = 0; i < 6; ++i) {
        const char answer = char('A' + i % 4);
        doc += R"({"article": "it is a cafe . hello world", "questions": ["which is )" +
               std::to_string(i) +
               R"( ?"], "options": [["x", "ab", "un", "hello"]], "answers": [")" +
               std::string(1, answer) + "\"], \"id\": \"d" + std::to_string(i) + "\"}\n";
    }
    write_into(dir / "RACE" / "train" / "m.txt", doc);
    write_into(dir / "RACE" / "dev" / "m.txt", doc);
    eval::FinetuneFlags f = toy_flags(dir, "RACE");
    f.train_data = {(dir / "RACE" / "train").string()};
    f.valid_data = {(dir / "RACE" / "dev").string()};
    f.training.micro_batch_size = 2;
    f.epochs = 1;
    const ToyRun r = run_toy(f);
    ASSERT_EQ(r.results.size(), 1u) << r.output;
    EXPECT_EQ(r.results[0].datasets[0].first, "dev");
    EXPECT_EQ(r.results[0].overall.total, 6);
    EXPECT_TRUE(contains(r.output, " > building RACE dataset for training:")) << r.output;
    // Megatron multiplies the batch by the 4 choices in its log line.
    EXPECT_TRUE(contains(r.output, "global batch size:     8 |")) << r.output;
    EXPECT_TRUE(contains(r.output, "iteration        3/       3 |")) << r.output;
}

TEST(Finetune, PretrainedCheckpointWithoutTheHead) {
    TempDir dir;
    eval::FinetuneFlags f = toy_flags(dir, "QQP");
    // A "pretrained" model: the encoder, and a head the task model lacks; no task head.
    const int64_t vocab =
        Registry::global().create_tokenizer(f.tokenizer.type, f.tokenizer.options)->vocab_size();
    Tensor w = Tensor::empty({2, vocab}, DType::f32);
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.5f - 0.01f * float(i);
    CheckpointState state;
    state.iteration = 7;
    state.model = {
        {"encoder.weight", ShardedTensor::whole(w)},
        {"lm_head.dense.weight", ShardedTensor::whole(Tensor::zeros({3, 3}, DType::f32))}};
    Registry::global().create_checkpoint("torch")->save(dir / "pretrained", state);
    f.pretrained_checkpoint = (dir / "pretrained").string();
    f.epochs = 0;
    const ToyRun r = run_toy(f);
    EXPECT_TRUE(contains(r.output,
                         "***WARNING*** could not find classification_head in the "
                         "checkpoint, initializing to random\n"))
        << r.output;
    EXPECT_TRUE(contains(r.output, " loading checkpoint from " + (dir / "pretrained").string() +
                                       " at iteration 7\n"))
        << r.output;
    ASSERT_EQ(r.results.size(), 1u);

    // A checkpoint without a non-head parameter the model needs is an error.
    CheckpointState headless;
    headless.iteration = 1;
    headless.model = {
        {"classification_head.bias", ShardedTensor::whole(Tensor::zeros({2}, DType::f32))}};
    Registry::global().create_checkpoint("torch")->save(dir / "broken", headless);
    f.pretrained_checkpoint = (dir / "broken").string();
    EXPECT_NE(mt::test::error_of([&] { run_toy(f); }).find("has no model tensor 'encoder.weight'"),
              std::string::npos);
}

TEST(Finetune, ResumesMidEpochToTheSameResult) {
    TempDir dir;
    eval::FinetuneFlags f = toy_flags(dir, "QQP");
    f.epochs = 3;
    f.training.ckpt_format = "torch";
    const ToyRun whole = run_toy(f);
    ASSERT_EQ(whole.results.size(), 3u) << whole.output;

    // Stopped at iteration 9 (epoch 2 of 3, mid-epoch), then resumed from its checkpoint.
    eval::FinetuneFlags first = f;
    first.training.save = (dir / "ckpt").string();
    first.training.exit_interval = 9;
    const ToyRun stopped = run_toy(first);
    EXPECT_EQ(stopped.results.size(), 1u) << stopped.output;
    EXPECT_TRUE(contains(stopped.output, "exiting program at iteration 9")) << stopped.output;
    eval::FinetuneFlags second = f;
    second.training.save = second.training.load = (dir / "ckpt").string();
    const ToyRun resumed = run_toy(second);
    ASSERT_EQ(resumed.results.size(), 2u) << resumed.output;
    EXPECT_TRUE(contains(resumed.output, "working on epoch 2 ...\n")) << resumed.output;
    EXPECT_FALSE(contains(resumed.output, "working on epoch 1 ...")) << resumed.output;
    EXPECT_TRUE(contains(resumed.output, "iteration       10/      18 |")) << resumed.output;
    for (size_t k = 0; k < 2; ++k) {
        EXPECT_EQ(resumed.results[k].epoch, whole.results[k + 1].epoch);
        EXPECT_EQ(resumed.results[k].overall.correct, whole.results[k + 1].overall.correct);
    }
    // The same losses as the uninterrupted run from iteration 10 on.
    const auto losses = [](const std::string& out, int from) {
        std::vector<std::string> lines;
        size_t at = 0;
        while ((at = out.find(" iteration ", at)) != std::string::npos) {
            const size_t end = out.find('\n', at);
            const std::string line = out.substr(at, end - at);
            if (line.find("consumed samples") != std::string::npos &&
                std::stoi(line.substr(11, 8)) >= from)
                lines.push_back(line.substr(line.find("lm loss:"), 22));
            at = end;
        }
        return lines;
    };
    EXPECT_EQ(losses(resumed.output, 10), losses(whole.output, 10)) << resumed.output;
    EXPECT_EQ(losses(resumed.output, 10).size(), 9u);
}

}  // namespace
