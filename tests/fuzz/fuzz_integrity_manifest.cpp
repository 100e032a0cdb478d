// --verify-integrity's check of a torch_dist checkpoint whose integrity.json is arbitrary bytes,
// the rest being the committed gpt2_tp1 fixture's files.
#include "fuzz_support.h"
#include "mt/checkpoint/integrity_manifest.h"
#include "mt/error.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const fs::path dir = mt::fuzz::torch_dist_fixture_but("integrity.json");
    mt::fuzz::write_input(mt::fuzz::as_text(data, size), "/iter_0000007/integrity.json");
    try {
        mt::verify_integrity_manifest(dir / "iter_0000007");
    } catch (const mt::Error&) {
    }
    return 0;
}
