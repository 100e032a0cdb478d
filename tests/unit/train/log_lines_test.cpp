// The printed lines are Megatron's to the character (strings built with Python's own
// formatting of the same values).
#include <gtest/gtest.h>

#include "mt/train/log_lines.h"

namespace {

TEST(LogLines, IterationLineAsTrainingPy) {
    mt::train::IterationLog l;
    l.timestamp = "2025-07-25 10:00:00";
    l.iteration = 100;
    l.train_iters = 10000;
    l.consumed_samples = 51200;
    l.elapsed_ms_per_iteration = 812.34;
    l.learning_rate = 1.5e-4;
    l.global_batch_size = 512;
    l.losses = {{"lm loss", 6.512345}, {"zero loss", 0.0}};
    l.grad_norm = 1.2345;
    // Python: the f-strings of megatron/training/training.py training_log at core_v0.13.0.
    EXPECT_EQ(mt::train::format_iteration_line(l),
              " [2025-07-25 10:00:00] iteration      100/   10000 | consumed samples:        51200 "
              "| elapsed time per iteration (ms): 812.3 | learning rate: 1.500000E-04 | global "
              "batch size:   512 | lm loss: 6.512345E+00 | loss scale: 1.0 | grad norm: 1.234 | "
              "number of skipped iterations:   0 | number of nan iterations:   0 |");
    l.skipped_samples = 3;
    l.params_norm = 250.5;
    l.num_zeros = 7;
    l.grad_norm.reset();
    std::string s = mt::train::format_iteration_line(l);
    EXPECT_NE(s.find("| skipped samples:            3 | elapsed"), std::string::npos) << s;
    // count_zeros_fp32 returns a float: "7.0".
    EXPECT_NE(s.find("| loss scale: 1.0 | num zeros: 7.0 | params norm: 250.500 |"),
              std::string::npos)
        << s;
}

TEST(LogLines, EvaluationBlock) {
    std::string b = mt::train::format_evaluation_block("iteration 100", {{"lm loss", 2.0}});
    std::string line =
        " validation loss at iteration 100 | lm loss value: 2.000000E+00 | lm loss PPL: "
        "7.389056E+00 | ";
    std::string rule(line.size() + 1, '-');
    EXPECT_EQ(b, rule + "\n" + line + "\n" + rule);
    // PPL saturates at exp(20).
    EXPECT_NE(mt::train::format_evaluation_block("iteration 5 on test set", {{"lm loss", 30.0}})
                  .find("lm loss PPL: 4.851652E+08 | "),
              std::string::npos);
}

TEST(LogLines, SavedCheckpoint) {
    EXPECT_EQ(mt::train::format_saved_checkpoint(100, "/ckpt", 0, 1, 0, 1),
              "  successfully saved checkpoint from iteration     100 to /ckpt [ t 1/1, p 1/1 ]");
}

TEST(LogLines, TimestampShape) {
    std::string t = mt::train::now_timestamp();
    ASSERT_EQ(t.size(), 19u);
    EXPECT_EQ(t[4], '-');
    EXPECT_EQ(t[13], ':');
}

}  // namespace
