// Command lines read as argparse reads them: a flag given twice takes its last value (a
// multi-value flag its last list, not the union), other words stay in place, and abbreviations
// count only where the tool allows them.
#include <gtest/gtest.h>

#include <boost/program_options.hpp>

#include "mt/cli/tool.h"

namespace {

namespace po = boost::program_options;
using mt::cli::last_occurrences;
using Words = std::vector<std::string>;

po::options_description options() {
    po::options_description o;
    o.add_options()("lr", po::value<double>())("data-path",
                                               po::value<std::vector<std::string>>()->multitoken())(
        "sequence-parallel", po::bool_switch())("vocab-file", po::value<std::string>());
    return o;
}

TEST(CliArgs, TheLastOccurrenceWins) {
    const auto o = options();
    EXPECT_EQ(last_occurrences({"--lr", "1", "--sequence-parallel", "--lr", "2"}, o, false),
              (Words{"--sequence-parallel", "--lr", "2"}));
    EXPECT_EQ(
        last_occurrences({"--data-path", "A", "0.3", "B", "--lr=5", "--data-path", "C"}, o, false),
        (Words{"--lr=5", "--data-path", "C"}));
    EXPECT_EQ(last_occurrences({"--lr=1", "--lr", "3"}, o, false), (Words{"--lr", "3"}));
    // Unknown flags and stray words are left for the parser to report.
    EXPECT_EQ(last_occurrences({"stray", "--nope", "x", "--lr", "1"}, o, false),
              (Words{"stray", "--nope", "x", "--lr", "1"}));
}

TEST(CliArgs, AbbreviationsOnlyWhereAllowed) {
    const auto o = options();
    EXPECT_EQ(last_occurrences({"--vocab", "a", "--vocab-file", "b"}, o, true),
              (Words{"--vocab-file", "b"}));
    EXPECT_EQ(last_occurrences({"--vocab", "a", "--vocab-file", "b"}, o, false),
              (Words{"--vocab", "a", "--vocab-file", "b"}));
}

}  // namespace
