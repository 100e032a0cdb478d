// The `hf` format's streamed load (CheckpointFormat::load_streamed, megatron-convert's source
// path): placeholders with load()'s names, shapes and dtypes, and make(i) giving load()'s bytes
// (GPT-2's Conv1D transposed and c_attn regrouped, Llama's QKV grouped and [gate; up] joined)
// in the files' dtype (Mistral's bfloat16, which load() widens), made only when asked for; and a
// conversion from an hf folder writes the very bytes it wrote when the loader converted the whole
// model up front.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "hf_checkpoint.h"
#include "hf_fixtures.h"
#include "mt/checkpoint/convert.h"
#include "mt/registry.h"
#include "test_support.h"

namespace mt::plugins::hf {
namespace {

namespace fs = std::filesystem;
using mt::test::TempDir;

bool same_bytes(const Tensor& a, const Tensor& b) {
    const Tensor ca = a.contiguous(), cb = b.contiguous();
    return ca.shape() == cb.shape() && ca.dtype() == cb.dtype() &&
           std::memcmp(ca.raw_data(), cb.raw_data(), size_t(ca.nbytes())) == 0;
}

TEST(HfStreamedLoad, PlaceholdersMadeOnRequestGiveLoadsTensors) {
    for (const char* name : {"gpt2", "llama", "mistral"}) {
        SCOPED_TRACE(name);
        HfCheckpoint format;
        const CheckpointState loaded = format.load(fixture(name));
        StreamedState streamed = format.load_streamed(fixture(name));
        ASSERT_TRUE(streamed.make);
        EXPECT_EQ(streamed.state.args, loaded.args);
        ASSERT_EQ(streamed.state.model.size(), loaded.model.size());
        // Backwards, so that no tensor's making depends on another's made before it.
        for (size_t i = loaded.model.size(); i-- > 0;) {
            const auto& [want_name, want] = loaded.model[i];
            const auto& [got_name, placeholder] = streamed.state.model[i];
            EXPECT_EQ(got_name, want_name);
            EXPECT_EQ(placeholder.local.shape(), want.local.shape()) << want_name;
            EXPECT_EQ(placeholder.local.dtype(),
                      name == std::string("mistral") ? DType::bf16 : DType::f32)
                << want_name;
            EXPECT_EQ(placeholder.global_shape, want.global_shape) << want_name;
            EXPECT_EQ(placeholder.local.storage()->data, nullptr) << want_name << ": not lazy";
            const Tensor made = streamed.make(i);
            EXPECT_EQ(made.dtype(), placeholder.local.dtype()) << want_name;
            EXPECT_TRUE(same_bytes(cast_float(made, DType::f32), want.local)) << want_name;
            EXPECT_TRUE(same_bytes(streamed.make(i), made)) << want_name << ", made again";
        }
        EXPECT_NE(mt::test::error_of([&] { streamed.make(loaded.model.size()); }).find("no tensor"),
                  std::string::npos);
    }
}

// HfCheckpoint loading the old way: every tensor converted by load() (the base class's
// load_streamed wraps it).
class EagerHf : public HfCheckpoint {
  public:
    StreamedState load_streamed(const fs::path& dir) override {
        return CheckpointFormat::load_streamed(dir);
    }
};

std::map<std::string, std::string> files_under(const fs::path& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file())
            out[fs::relative(e.path(), dir).string()] = mt::test::read_file(e.path());
    return out;
}

TEST(HfStreamedLoad, ConversionWritesTheBytesOfTheEagerLoad) {
    auto family = Registry::global().create_model("gpt");
    struct Case {
        const char* fixture;
        const char* saver;
        int64_t tp;
        std::optional<DType> dtype;
    };
    for (const Case& c :
         {Case{"gpt2", "torch", 2, {}}, Case{"llama", "torch", 2, {}},
          Case{"llama", "torch_dist", 1, DType::bf16}, Case{"mistral", "torch", 1, DType::f32},
          Case{"mistral", "torch_dist", 1, DType::f16}}) {
        SCOPED_TRACE(std::string(c.fixture) + " -> " + c.saver);
        TempDir dir;
        ConvertOptions o;
        o.target_tensor_parallel = c.tp;
        o.dtype = c.dtype;
        o.progress = false;
        HfCheckpoint streamed;
        EagerHf eager;
        auto saver = Registry::global().create_checkpoint(c.saver);
        convert_checkpoint(streamed, fixture(c.fixture), *saver, dir / "streamed", *family, o);
        convert_checkpoint(eager, fixture(c.fixture), *saver, dir / "eager", *family, o);
        const auto want = files_under(dir / "eager");
        const auto got = files_under(dir / "streamed");
        ASSERT_FALSE(want.empty());
        ASSERT_EQ(got.size(), want.size());
        for (const auto& [file, bytes] : want) {
            auto it = got.find(file);
            ASSERT_NE(it, got.end()) << file;
            EXPECT_TRUE(it->second == bytes) << file << " differs";
        }
    }
}

}  // namespace
}  // namespace mt::plugins::hf
