// The chat template engine (mt/text/jinja.h) on a template and its variables: the first two
// bytes (little-endian) give the template's share of the input, the rest is the JSON of the
// variables (an empty dict when it does not parse as one). Parse and render; refusals are
// mt::Error, anything else (a crash, a hang, runaway memory) is a finding.
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/text/jinja.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using mt::text::jinja::Template;
    using mt::text::jinja::Value;
    const auto parts = mt::fuzz::split_two(data, size);
    if (!parts) return 0;
    Value context = Value::dict();
    try {
        Value parsed = Value::from_json(parts->second);
        if (parsed.is_dict()) context = std::move(parsed);
    } catch (const mt::Error&) {
    }
    std::tm now{};
    now.tm_year = 125, now.tm_mon = 2, now.tm_mday = 7;
    try {
        const Template t(parts->first);
        t.render(context, now);
    } catch (const mt::Error&) {
    }
    return 0;
}
