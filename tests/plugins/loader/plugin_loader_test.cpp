// The Boost.DLL plugin path end to end: discovery, on-demand loading by name, the objects a
// plugin makes, and a clear mt::Error for every way a plugin can be wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "mt/error.h"
#include "mt/plugin.h"
#include "mt/plugin_loader.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mt::test::binary_dir;

namespace {

using mt::test::error_of;

fs::path case_dir(const std::string& c) {
    return binary_dir() / "tests" / "plugins" / c;
}
fs::path case_file(const std::string& c, const std::string& kind = "tokenizer") {
    return case_dir(c) / ("libmt_" + kind + "_testecho.so");
}

TEST(PluginLoader, LoadsAPluginAndUsesWhatItMakes) {
    mt::Registry registry;
    const auto& info = registry.loader().load_file(case_file("good"));
    EXPECT_EQ(info.kind, "tokenizer");
    EXPECT_EQ(info.name, "testecho");
    EXPECT_EQ(info.version, "1.2.3");
    ASSERT_EQ(info.registered, std::vector<std::string>{"TestEchoTokenizer"});
    auto tok = registry.create_tokenizer("TestEchoTokenizer", {});
    EXPECT_EQ(tok->encode("hi"), (std::vector<int32_t>{'h', 'i'}));
    EXPECT_EQ(tok->eod(), 256);
    // Loading the same file again is a no-op, not a duplicate registration.
    EXPECT_NO_THROW(registry.loader().load_file(case_file("good")));
}

TEST(PluginLoader, FindsPluginsOnDemandThroughPluginDir) {
    mt::Registry registry;
    registry.loader().add_search_dir(case_dir("good"));
    EXPECT_EQ(registry.loader().search_path().front(), case_dir("good"));
    auto tok = registry.create_tokenizer("TestEchoTokenizer", {});
    EXPECT_EQ(tok->decode(std::vector<int32_t>{'o', 'k'}), "ok");
}

TEST(PluginLoader, FindsPluginsThroughTheEnvironment) {
    std::string value = "/nonexistent/dir:" + case_dir("good").string();
    ASSERT_EQ(setenv("MT_PLUGIN_PATH", value.c_str(), 1), 0);
    mt::Registry registry;
    auto path = registry.loader().search_path();
    unsetenv("MT_PLUGIN_PATH");
    ASSERT_GE(path.size(), 2u);
    EXPECT_EQ(path[0], "/nonexistent/dir");
    EXPECT_EQ(path[1], case_dir("good"));
}

TEST(PluginLoader, DefaultPathHoldsTheBuiltPlugins) {
    // The test executable lives in <build>/tests, so <exe>/../lib/mt/plugins is the build's
    // plugin directory: every tokenizer Megatron names is found without any flag.
    mt::Registry registry;
    registry.loader().load_kind("tokenizer");
    auto names = registry.names("tokenizer");
    for (const char* name :
         {"GPT2BPETokenizer", "BertWordPieceLowerCase", "BertWordPieceCase", "NullTokenizer"})
        EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

TEST(PluginLoader, UnknownNameListsWhatIsAvailable) {
    mt::Registry registry;
    registry.loader().add_search_dir(case_dir("good"));
    std::string msg = error_of([&] { registry.create_tokenizer("NoSuchTokenizer", {}); });
    EXPECT_NE(msg.find("unknown tokenizer 'NoSuchTokenizer'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("TestEchoTokenizer"), std::string::npos) << msg;
    EXPECT_NE(msg.find(case_dir("good").string()), std::string::npos) << msg;
}

TEST(PluginLoader, APluginThatCannotLoadDoesNotHideTheOthersOfItsKind) {
    mt::test::TempDir dir;
    mt::test::write_file(dir / "libmt_tokenizer_broken.so", "this is not an ELF file");
    mt::Registry registry;
    registry.loader().add_search_dir(dir.path());
    registry.loader().add_search_dir(case_dir("good"));
    EXPECT_NO_THROW(registry.create_tokenizer("TestEchoTokenizer", {}));
    std::string msg = error_of([&] { registry.create_tokenizer("NoSuchTokenizer", {}); });
    EXPECT_NE(msg.find("plugins that could not be loaded: cannot load plugin " +
                       (dir / "libmt_tokenizer_broken.so").string()),
              std::string::npos)
        << msg;
}

TEST(PluginLoader, MissingFile) {
    mt::Registry registry;
    std::string msg =
        error_of([&] { registry.loader().load_file("/no/such/libmt_tokenizer_x.so"); });
    EXPECT_NE(msg.find("plugin file not found: /no/such/libmt_tokenizer_x.so"), std::string::npos)
        << msg;
}

TEST(PluginLoader, FileThatIsNotASharedObject) {
    mt::test::TempDir dir;
    fs::path bogus = dir / "libmt_tokenizer_garbage.so";
    mt::test::write_file(bogus, "this is not an ELF file");
    mt::Registry registry;
    std::string msg = error_of([&] { registry.loader().load_file(bogus); });
    EXPECT_NE(msg.find("cannot load plugin " + bogus.string()), std::string::npos) << msg;
}

TEST(PluginLoader, BadFileName) {
    mt::Registry registry;
    std::string msg = error_of([&] { registry.loader().load_file(mt::test::fixtures_dir()); });
    EXPECT_NE(msg.find("is not named libmt_<kind>_<name>.so"), std::string::npos) << msg;
}

TEST(PluginLoader, SharedObjectWithoutEntry) {
    mt::Registry registry;
    std::string msg = error_of([&] { registry.loader().load_file(case_file("no_entry")); });
    EXPECT_NE(msg.find("is not a megatron.cpp plugin: it exports no mt_plugin_entry"),
              std::string::npos)
        << msg;
}

TEST(PluginLoader, AbiMismatchNamesBothVersions) {
    mt::Registry registry;
    std::string msg = error_of([&] { registry.loader().load_file(case_file("bad_abi")); });
    EXPECT_NE(msg.find(mt::str("built for plugin ABI version ", MT_PLUGIN_ABI_VERSION + 41,
                               " but this build uses ABI version ", MT_PLUGIN_ABI_VERSION)),
              std::string::npos)
        << msg;
    EXPECT_TRUE(registry.names("tokenizer").empty());
}

TEST(PluginLoader, BuildMismatchNamesBothBuilds) {
    mt::Registry registry;
    std::string msg = error_of([&] { registry.loader().load_file(case_file("bad_build")); });
    EXPECT_NE(msg.find(std::string("built by 'some-other-compiler' but this build is '") +
                       MT_BUILD_ID + "'"),
              std::string::npos)
        << msg;
}

TEST(PluginLoader, RegistrationFailureIsReportedNotThrownThroughC) {
    mt::Registry registry;
    std::string msg = error_of([&] { registry.loader().load_file(case_file("throws")); });
    EXPECT_NE(msg.find("failed to register: the test plugin refuses to register"),
              std::string::npos)
        << msg;
}

TEST(PluginLoader, DescriptorMustMatchFileName) {
    mt::Registry registry;
    std::string msg =
        error_of([&] { registry.loader().load_file(case_file("wrong_kind", "model")); });
    EXPECT_NE(msg.find("declares itself tokenizer/testecho, which contradicts its file name"),
              std::string::npos)
        << msg;
}

TEST(PluginLoader, ListsEverythingOnThePath) {
    mt::Registry registry;
    registry.loader().add_search_dir(case_dir("good"));
    auto all = registry.loader().load_all();
    bool found = false;
    for (const auto& p : all) found |= p.name == "testecho";
    EXPECT_TRUE(found);
}

}  // namespace
