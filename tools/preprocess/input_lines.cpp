#include "input_lines.h"

#include <glob.h>

#include "mt/error.h"

namespace fs = std::filesystem;

namespace mt::preprocess {

std::vector<fs::path> resolve_inputs(const std::string& input, int partitions) {
    if (partitions <= 1) {
        MT_CHECK(fs::exists(input), "--input ", input, ": no such file");
        return {fs::path(input)};
    }
    glob_t g{};
    int rc = ::glob(input.c_str(), 0, nullptr, &g);
    std::vector<fs::path> files;
    if (rc == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    MT_CHECK(!files.empty(), "--input ", input, ": no file matches");
    return files;  // glob() sorts its matches
}

int64_t count_lines(const std::vector<fs::path>& files) {
    int64_t total = 0;
    for (const auto& f : files) {
        io::LineReader reader(f);
        std::string_view line;
        while (reader.next(line)) ++total;
    }
    return total;
}

InputLines::InputLines(std::vector<fs::path> files, PartitionPlan plan)
    : files_(std::move(files)), plan_(plan) {}

InputLines::~InputLines() = default;

bool InputLines::next(std::string_view& line) {
    while (true) {
        if (!reader_) {
            if (file_index_ >= files_.size()) return false;
            reader_ = std::make_unique<io::LineReader>(files_[file_index_]);
        }
        while (reader_->next(line))
            if (plan_.owns(global_line_++)) return true;
        reader_.reset();
        ++file_index_;
    }
}

const fs::path& InputLines::current_file() const {
    return files_.at(file_index_);
}
int64_t InputLines::current_line() const {
    return reader_ ? reader_->line_number() : 0;
}

}  // namespace mt::preprocess
