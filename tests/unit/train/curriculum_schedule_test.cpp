// DeepSpeed's legacy seqlen curriculum: ds_config "curriculum_learning" sections read by
// read_deepspeed_config and stepped by CurriculumSchedule give the difficulties DeepSpeed's own
// CurriculumScheduler gave (tests/fixtures/curriculum/make_fixture.py), and what DeepSpeed would
// assert on is an error naming the key.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "mt/error.h"
#include "mt/train/curriculum_schedule.h"
#include "mt/train/deepspeed_config.h"
#include "test_support.h"

namespace {

using mt::train::read_deepspeed_config;

// The configuration `json` (a whole ds_config.json) as read from a file.
mt::train::DeepSpeedConfig read(const mt::test::TempDir& dir, const std::string& json) {
    const auto path = dir / "ds_config.json";
    mt::test::write_file(path, json);
    return read_deepspeed_config(path.string());
}

TEST(CurriculumSchedule, GivesDeepSpeedsDifficulties) {
    simdjson::dom::parser parser;
    const simdjson::dom::array cases =
        parser.load((mt::test::fixtures_dir() / "curriculum" / "schedules.json").string());
    mt::test::TempDir dir;
    int configs = 0, checked = 0;
    for (simdjson::dom::element c : cases) {
        const std::string section = simdjson::to_string(c["config"]);
        const auto ds = read(dir, "{\"curriculum_learning\": " + section + "}");
        ASSERT_TRUE(ds.curriculum.has_value()) << section;
        mt::train::CurriculumSchedule schedule(*ds.curriculum);
        const simdjson::dom::array steps = c["steps"], difficulty = c["difficulty"];
        auto d = difficulty.begin();
        for (int64_t step : steps) {
            EXPECT_EQ(schedule.update(step), int64_t(*d)) << section << " step " << step;
            ++d;
            ++checked;
        }
        ++configs;
    }
    EXPECT_EQ(configs, 8);
    EXPECT_GT(checked, 300);
}

TEST(CurriculumSchedule, DisabledOrMalformedSections) {
    mt::test::TempDir dir;
    EXPECT_FALSE(read(dir, R"({"curriculum_learning": {"enabled": false, "min_difficulty": 8}})")
                     .curriculum.has_value());
    EXPECT_FALSE(read(dir, R"({"curriculum_learning": {"curriculum_type": "seqlen"}})")
                     .curriculum.has_value());
    const std::string base =
        R"("enabled": true, "curriculum_type": "seqlen", "min_difficulty": 8,
           "max_difficulty": 64, )";
    struct Case {
        std::string rest, message;
    };
    const std::vector<Case> cases{
        {R"("schedule_type": "fixed_linear"})",
         "curriculum learning with fixed_linear requires \"curriculum_learning.schedule_config\""},
        {R"("schedule_type": "fixed_root", "schedule_config": {"total_curriculum_step": 9,
            "difficulty_step": 8}})",
         "schedule requires \"curriculum_learning.schedule_config.root_degree\""},
        {R"("schedule_type": "fixed_discrete", "schedule_config": {"difficulty": [8, 16],
            "max_step": [2, 3]}})",
         "must have one entry more than \"max_step\""},
        {R"("schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": 9,
            "difficulty_step": 0}})",
         "total_curriculum_step and difficulty_step must be positive"},
        {R"("schedule_type": "custom"})", "not supported yet: a custom curriculum schedule"},
        {R"("schedule_type": "fixed_cubic"})", "unsupported curriculum schedule type"},
        {R"("schedule_type": "fixed_linear", "schedule_config": {"total_curriculum_step": 9,
            "difficulty_step": 8, "warmup": 3}})",
         "\"curriculum_learning.schedule_config.warmup\": not supported yet"},
    };
    for (const Case& c : cases) {
        try {
            read(dir, "{\"curriculum_learning\": {" + base + c.rest + "}");
            ADD_FAILURE() << "accepted " << c.rest;
        } catch (const mt::Error& e) {
            EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << c.rest << "\n"
                                                                                << e.what();
        }
    }
    try {
        read(dir,
             R"({"curriculum_learning": {"enabled": true, "curriculum_type": "vocabularyrarity",
             "min_difficulty": 1, "max_difficulty": 5, "schedule_type": "fixed_linear"}})");
        ADD_FAILURE() << "accepted a curriculum type other than seqlen";
    } catch (const mt::Error& e) {
        EXPECT_NE(std::string(e.what()).find("not supported yet: the curriculum type "
                                             "\"vocabularyrarity\""),
                  std::string::npos)
            << e.what();
    }
    try {
        read(dir, R"({"curriculum_learning": {"enabled": true, "curriculum_type": "seqlen"}})");
        ADD_FAILURE() << "accepted a section without its difficulties";
    } catch (const mt::Error& e) {
        EXPECT_NE(std::string(e.what()).find("requires \"curriculum_learning.min_difficulty\""),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
