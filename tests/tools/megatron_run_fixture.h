// Runs of Megatron itself recorded as fixtures (tests/fixtures/<dir>/make_fixture.py): their
// expected.json holds per variant the flags ("<data>", "<cache>", "<save>" placeholders), each
// iteration's lm loss and grad norm, and each evaluation's lm loss; iter_0000001/ beside it is
// the checkpoint Megatron saved after iteration 1. megatron-train resumed from it must log
// Megatron's iterations 2 and 3 and the evaluations after them.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "test_support.h"

namespace mt::test {

class MegatronRunFixture : public ::testing::Test {
  protected:
    explicit MegatronRunFixture(const char* dir) : root(fixtures_dir() / dir) {}

    void SetUp() override {
        data = test_data("megatron_indexed");
        if (!data) GTEST_SKIP() << "MEGATRON_TEST_DATA not set: no data of Megatron's runs";
        expected = parser.load((root / "expected.json").string());
    }
    // megatron-train with the flags of Megatron's run `key`, saving to `save`.
    std::string command(const char* key, const std::filesystem::path& save) const {
        std::string command = tool_path("megatron-train").string();
        for (auto word : expected["variants"][key]["flags"].get_array()) {
            std::string w{std::string_view(word)};
            for (const auto& [from, to] :
                 {std::pair<std::string, std::string>{"<data>", data->string()},
                  {"<cache>", (work / "cache").string()},
                  {"<save>", save.string()},
                  {"tests/fixtures", fixtures_dir().string()}})
                if (w.rfind(from, 0) == 0) w = to + w.substr(from.size());
            command += " " + shell_quote(w);
        }
        return command;
    }
    // `field` of each iteration of Megatron's run `key`.
    std::vector<double> run_values(const char* key, const char* field) const {
        std::vector<double> out;
        for (auto it : expected["variants"][key]["iterations"].get_array())
            out.push_back(double(it[field]));
        return out;
    }
    // The lm loss of each evaluation of Megatron's run `key`.
    std::vector<double> evaluations(const char* key) const {
        std::vector<double> out;
        for (auto e : expected["variants"][key]["evaluations"].get_array())
            out.push_back(double(e["lm loss"]));
        return out;
    }
    // `output` of megatron-train resumed from iteration 1 of run `key`: iterations 2 and 3 and
    // the four evaluations after them (every iteration, then validation and test) are
    // Megatron's to `tolerance` (relative; grad norms to 2e-3 absolute).
    void expect_continues(const char* key, const std::string& output, double tolerance) const {
        const auto losses = logged_values(output, "lm loss");
        const auto norms = logged_values(output, "grad norm");
        const auto theirs = run_values(key, "lm_loss");
        const auto their_norms = run_values(key, "grad_norm");
        ASSERT_EQ(losses.size(), 2u) << key << "\n" << output;
        ASSERT_EQ(norms.size(), 2u) << key << "\n" << output;
        for (size_t i = 0; i < 2; ++i) {
            EXPECT_NEAR(losses[i], theirs[i + 1], tolerance * theirs[i + 1])
                << key << " iteration " << i + 2;
            EXPECT_NEAR(norms[i], their_norms[i + 1], 2e-3) << key << " iteration " << i + 2;
        }
        const auto ours = logged_values(output, "lm loss value");
        const auto want = evaluations(key);
        ASSERT_EQ(ours.size(), 4u) << key << "\n" << output;
        ASSERT_EQ(want.size(), 5u) << key;
        for (size_t i = 0; i < 4; ++i)
            EXPECT_NEAR(ours[i], want[i + 1], tolerance * want[i + 1])
                << key << " evaluation " << i + 1;
    }

    std::optional<std::filesystem::path> data;
    const std::filesystem::path root;
    simdjson::dom::parser parser;
    simdjson::dom::element expected;
    TempDir work;
};

}  // namespace mt::test
