// A torch_dist checkpoint whose metadata.json (Megatron's dist-checkpoint config: the sharded
// backend and its version, the common backend) is arbitrary bytes, the rest being the committed
// gpt2_tp1 fixture's files, loaded by the torch_dist plugin.
#include "fuzz_support.h"
#include "mt/checkpoint.h"
#include "mt/error.h"
#include "mt/registry.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto format = mt::Registry::global().create_checkpoint("torch_dist");
    static const fs::path dir = [] {
        const fs::path fixture =
            mt::fuzz::source_dir() / "tests/fixtures/torch_dist/gpt2_tp1/iter_0000007";
        const fs::path d =
            mt::fuzz::write_input("7", "/latest_checkpointed_iteration.txt").parent_path();
        fs::create_directories(d / "iter_0000007");
        for (const auto& entry : fs::directory_iterator(fixture))
            if (entry.path().filename() != "metadata.json")
                fs::copy_file(entry.path(), d / "iter_0000007" / entry.path().filename(),
                              fs::copy_options::overwrite_existing);
        return d;
    }();
    mt::fuzz::write_input(mt::fuzz::as_text(data, size), "/iter_0000007/metadata.json");
    try {
        format->load(dir);
    } catch (const mt::Error&) {
    }
    return 0;
}
