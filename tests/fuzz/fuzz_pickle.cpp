// The pickle reader on arbitrary bytes (torch checkpoints' data.pkl, Megatron's args), with a
// persistent_load that answers every persistent id, as torch_file's does.
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/io/pickle_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        mt::io::read_pickle(mt::fuzz::as_text(data, size), "fuzz.pkl",
                            [](const mt::io::PyValue&) { return mt::io::PyValue(); });
    } catch (const mt::Error&) {
    }
    return 0;
}
