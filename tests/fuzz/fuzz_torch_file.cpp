// A whole torch checkpoint file (a zip archive: central directory, CRCs, data.pkl, storages)
// loaded from arbitrary bytes.
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/io/torch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto path = mt::fuzz::write_input(mt::fuzz::as_text(data, size), ".pt");
    try {
        mt::io::load_torch_file(path);
    } catch (const mt::Error&) {
    }
    return 0;
}
