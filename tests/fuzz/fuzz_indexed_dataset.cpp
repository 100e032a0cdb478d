// Megatron's .idx/.bin pair from arbitrary bytes: the first two bytes give the .idx's share of
// the input, the rest is the .bin; every sequence the index admits is read.
#include "fuzz_support.h"
#include "mt/data/indexed_dataset.h"
#include "mt/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto files = mt::fuzz::split_two(data, size);
    if (!files) return 0;
    const auto idx = mt::fuzz::write_input(files->first, ".idx");
    mt::fuzz::write_input(files->second, ".bin");
    const std::string prefix = (idx.parent_path() / "input").string();
    for (bool multimodal : {false, true}) {
        try {
            auto dataset = mt::data::IndexedDataset::open(prefix, multimodal);
            for (int64_t i = 0; i < std::min<int64_t>(dataset.num_sequences(), 64); ++i)
                dataset.get(i);
            for (int64_t k = 0; k <= std::min<int64_t>(dataset.num_documents(), 64); ++k)
                dataset.document_index(k);
        } catch (const mt::Error&) {
        }
    }
    return 0;
}
