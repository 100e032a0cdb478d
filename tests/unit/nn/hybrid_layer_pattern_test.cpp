// allocate_hybrid_layers against Megatron-core's own allocate_layers: every case of
// tests/fixtures/mamba/hybrid_allocation.txt (made by make_hybrid_allocation.py from
// core_v0.13.0's file) gives the same layers, the same log lines, or the same error.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "mt/error.h"
#include "mt/nn/hybrid_layer_pattern.h"
#include "test_support.h"

namespace {

struct Case {
    int64_t layers = 0;
    double attention = 0, mlp = 0;
    std::optional<std::string> pattern;
    std::vector<std::string> printed;
    std::string result;  // "result <layers>" or "error <message>"
};

std::vector<Case> read_cases() {
    std::ifstream in(mt::test::fixtures_dir() / "mamba" / "hybrid_allocation.txt");
    EXPECT_TRUE(in) << "missing tests/fixtures/mamba/hybrid_allocation.txt";
    std::vector<Case> cases;
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with("case ")) {
            Case c;
            std::string pattern;
            std::istringstream(line.substr(5)) >> c.layers >> c.attention >> c.mlp >> pattern;
            if (pattern != "-") c.pattern = pattern;
            cases.push_back(c);
        } else if (line.starts_with("print ")) {
            cases.back().printed.push_back(line.substr(6));
        } else {
            cases.back().result = line;
        }
    }
    return cases;
}

TEST(NnHybridLayerPattern, AllocatesAndLogsAsMegatron) {
    const std::vector<Case> cases = read_cases();
    ASSERT_GE(cases.size(), 20u);
    for (const Case& c : cases) {
        SCOPED_TRACE(std::to_string(c.layers) + " " + std::to_string(c.attention) + " " +
                     std::to_string(c.mlp) + " " + c.pattern.value_or("-"));
        if (c.result.starts_with("error ")) {
            // Python prints its symbol set in hash order: compare up to it.
            const std::string expected = c.result.substr(6, c.result.find('{') - 6);
            try {
                mt::nn::allocate_hybrid_layers(c.layers, c.attention, c.mlp, c.pattern);
                ADD_FAILURE() << "expected: " << expected;
            } catch (const mt::Error& e) {
                EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
            }
            continue;
        }
        const mt::nn::HybridAllocation a =
            mt::nn::allocate_hybrid_layers(c.layers, c.attention, c.mlp, c.pattern);
        EXPECT_EQ("result " + a.layers, c.result);
        EXPECT_EQ(a.lines, c.printed);
    }
}

// core_v0.19's pattern syntax: 'E' (MoE) layers, '|' stage separators (not layers), and the
// layer kinds and multi-token prediction part not built here, refused by name.
TEST(NnHybridLayerPattern, TakesCoreV019sSymbols) {
    const mt::nn::HybridAllocation a =
        mt::nn::allocate_hybrid_layers(5, 0, 0, std::string("M*|E-|M"));
    EXPECT_EQ(a.layers, "M*E-M");
    EXPECT_EQ(mt::nn::hybrid_pipeline_segments("M*|E-|M"), (std::vector<int64_t>{2, 2, 1}));
    EXPECT_EQ(mt::nn::hybrid_pipeline_segments("M*E"), (std::vector<int64_t>{3}));
    EXPECT_EQ(mt::nn::hybrid_pattern_layers("M*|E-|M"), 5);
    for (const auto& [pattern, what] :
         {std::pair{"MG", "gated delta net"}, std::pair{"M/M", "multi-token prediction"},
          std::pair{"M+", "multi-latent attention"}}) {
        try {
            mt::nn::allocate_hybrid_layers(mt::nn::hybrid_pattern_layers(pattern), 0, 0,
                                           std::string(pattern));
            ADD_FAILURE() << pattern;
        } catch (const mt::Error& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("not supported yet: ") + what),
                      std::string::npos)
                << e.what();
        }
    }
}

}  // namespace
