// A tokenizer plugin built in several broken variants (MT_TEST_CASE_*) to test the loader:
// good, bad ABI version, bad build id, no entry point, throwing registration, wrong kind.
#include <memory>
#include <stdexcept>

#include "mt/plugin.h"
#include "mt/registry.h"
#include "mt/tokenizer.h"

namespace {

// Bytes as ids: enough to prove that an object made by a loaded plugin works.
class EchoTokenizer final : public mt::Tokenizer {
  public:
    EchoTokenizer() { ids_.eod = 256; }
    void encode_append(std::string_view text, std::vector<int32_t>& out) const override {
        for (unsigned char c : text) out.push_back(c);
    }
    std::string decode(std::span<const int32_t> ids) const override {
        std::string s;
        for (int32_t id : ids) s.push_back(static_cast<char>(id));
        return s;
    }
    int64_t vocab_size() const override { return 257; }
    const mt::SpecialIds& special_ids() const override { return ids_; }
    std::string_view name() const override { return "TestEchoTokenizer"; }

  private:
    mt::SpecialIds ids_;
};

#ifndef MT_TEST_CASE_NO_ENTRY
void register_echo(mt::Registry& r) {
#ifdef MT_TEST_CASE_THROWS
    throw std::runtime_error("the test plugin refuses to register");
#endif
    r.tokenizers().add("TestEchoTokenizer", [](const mt::TokenizerOptions&) {
        return std::make_unique<EchoTokenizer>();
    });
}
#endif

}  // namespace

#if defined(MT_TEST_CASE_GOOD) || defined(MT_TEST_CASE_THROWS) || defined(MT_TEST_CASE_WRONG_KIND)
MT_PLUGIN("tokenizer", "testecho", "1.2.3", register_echo)
#elif defined(MT_TEST_CASE_BAD_ABI) || defined(MT_TEST_CASE_BAD_BUILD)
namespace {
int register_raw(void* r, char* e, size_t n) {
    return mt::detail::register_guarded(r, e, n, register_echo);
}
#ifdef MT_TEST_CASE_BAD_ABI
const mt_plugin_descriptor descriptor = {MT_PLUGIN_ABI_VERSION + 41,
                                         sizeof(mt_plugin_descriptor),
                                         "tokenizer",
                                         "testecho",
                                         "1.2.3",
                                         MT_BUILD_ID,
                                         &register_raw};
#else
const mt_plugin_descriptor descriptor = {MT_PLUGIN_ABI_VERSION,
                                         sizeof(mt_plugin_descriptor),
                                         "tokenizer",
                                         "testecho",
                                         "1.2.3",
                                         "some-other-compiler",
                                         &register_raw};
#endif
}  // namespace
extern "C" __attribute__((visibility("default"))) const mt_plugin_descriptor* mt_plugin_entry() {
    return &descriptor;
}
#else  // MT_TEST_CASE_NO_ENTRY: a shared object that is not a plugin
extern "C" __attribute__((visibility("default"))) int some_other_symbol() {
    return 1;
}
#endif
