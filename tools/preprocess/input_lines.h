// The input lines one partition processes: --input files in order (a glob when partitions > 1),
// with line i of the whole input going to partition i % N (preprocess_data.py's round-robin)
// or, with --keep-sequential-samples, to contiguous blocks of ceil(total / N) lines.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mt/io/line_reader.h"

namespace mt::preprocess {

// The files --input names: the path itself, or with partitions > 1 the sorted glob matches.
std::vector<std::filesystem::path> resolve_inputs(const std::string& input, int partitions);

// Number of lines across `files` (for contiguous partitioning).
int64_t count_lines(const std::vector<std::filesystem::path>& files);

struct PartitionPlan {
    int index = 0, count = 1;
    int64_t block = 0;  // > 0: contiguous blocks of this many lines; 0: round-robin
    bool owns(int64_t global_line) const {
        return block > 0 ? global_line / block == index : global_line % count == index;
    }
};

class InputLines {
  public:
    InputLines(std::vector<std::filesystem::path> files, PartitionPlan plan);
    ~InputLines();

    // Next line of this partition; valid until the next call. False at the end.
    bool next(std::string_view& line);
    // Where the last line came from (its file stays valid while this object lives).
    const std::filesystem::path& current_file() const;
    int64_t current_line() const;

  private:
    std::vector<std::filesystem::path> files_;
    PartitionPlan plan_;
    size_t file_index_ = 0;
    std::unique_ptr<io::LineReader> reader_;
    int64_t global_line_ = 0;
};

}  // namespace mt::preprocess
