// LineReader over arbitrary bytes as a ".jsonl.zst" file (megatron-preprocess's compressed
// input): every line read to the end, lines bounded at 64 MiB (the default, 1 GiB, is above what
// the fuzzer lets a process hold).
#include <string_view>

#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/io/line_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto path = mt::fuzz::write_input(mt::fuzz::as_text(data, size), ".jsonl.zst");
    try {
        mt::io::LineReader reader(path, int64_t(64) << 20);
        std::string_view line;
        while (reader.next(line)) {
        }
    } catch (const mt::Error&) {
    }
    return 0;
}
