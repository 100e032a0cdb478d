// The `llama_meta` format's streamed load (CheckpointFormat::load_streamed, megatron-convert's
// source path): placeholders with load()'s names, shapes and dtypes, and make(i) giving load()'s
// bytes (shards joined, wq/wk permuted, QKV grouped, [w1; w3] joined), made only when asked for
// (tests/fixtures/convert/llama_meta: two model-parallel shards).
#include <gtest/gtest.h>

#include "meta_checkpoint.h"
#include "same_bytes.h"
#include "test_support.h"

namespace mt::plugins::torch_ckpt {
namespace {

TEST(MetaStreamedLoad, PlaceholdersMadeOnRequestGiveLoadsTensors) {
    const auto dir = mt::test::fixtures_dir() / "convert" / "llama_meta";
    MetaCheckpoint format;
    const CheckpointState loaded = format.load(dir);
    StreamedState streamed = format.load_streamed(dir);
    ASSERT_TRUE(streamed.make);
    EXPECT_EQ(streamed.state.args, loaded.args);
    ASSERT_EQ(streamed.state.model.size(), loaded.model.size());
    ASSERT_FALSE(loaded.model.empty());
    for (size_t i = loaded.model.size(); i-- > 0;) {
        const auto& [want_name, want] = loaded.model[i];
        const auto& [got_name, placeholder] = streamed.state.model[i];
        EXPECT_EQ(got_name, want_name);
        EXPECT_EQ(placeholder.local.shape(), want.local.shape()) << want_name;
        EXPECT_EQ(placeholder.local.dtype(), want.local.dtype()) << want_name;
        EXPECT_EQ(placeholder.local.storage()->data, nullptr) << want_name << ": not lazy";
        const Tensor made = streamed.make(i);
        EXPECT_TRUE(same_bytes(made, want.local)) << want_name;
        EXPECT_TRUE(same_bytes(streamed.make(i), made)) << want_name << ", made again";
    }
}

}  // namespace
}  // namespace mt::plugins::torch_ckpt
