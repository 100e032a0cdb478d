// config.json's sliding windows <-> Megatron's window flags.
#include "sliding_window.h"

#include <algorithm>
#include <string>
#include <utility>

namespace mt::plugins::hf {

void read_windowed_layers(const ConfigJson& j, HfConfig& c) {
    const std::string& where = j.where();
    simdjson::dom::array types;
    if (!j.object()["layer_types"].get_array().get(types)) {
        for (auto type : types) {
            std::string_view name;
            MT_CHECK(!type.get_string().get(name) &&
                         (name == "sliding_attention" || name == "full_attention"),
                     where,
                     ": 'layer_types' holds something other than \"sliding_attention\" and "
                     "\"full_attention\"");
            c.windowed_layers.push_back(name == "sliding_attention");
        }
        MT_CHECK(int64_t(c.windowed_layers.size()) == c.num_layers, where, ": 'layer_types' has ",
                 c.windowed_layers.size(), " entries for ", c.num_layers, " layers");
    } else if (j.has("max_window_layers")) {
        for (int64_t i = 0; i < c.num_layers; ++i)
            c.windowed_layers.push_back(i >= j.integer("max_window_layers"));
    }
    if (std::none_of(c.windowed_layers.begin(), c.windowed_layers.end(),
                     [](bool w) { return w; }) &&
        !c.windowed_layers.empty())
        c.sliding_window = 0;  // no layer windowed
    else if (std::all_of(c.windowed_layers.begin(), c.windowed_layers.end(),
                         [](bool w) { return w; }))
        c.windowed_layers.clear();
}

void put_window_args(const HfConfig& c, ModelArgs& a) {
    if (c.sliding_window <= 0) return;
    a["window-size"] = "(" + std::to_string(c.sliding_window - 1) + ", 0)";
    if (c.windowed_layers.empty()) return;
    std::string pattern;
    for (bool w : c.windowed_layers)
        pattern += (pattern.empty() ? "[" : ",") + std::string(w ? "1" : "0");
    a["window-attn-skip-freq"] = pattern + "]";
}

nn::AttentionWindows windows_of(const SaverArgs& a, int64_t layers) {
    ModelArgs flags;
    for (const auto& [dest, flag] : {std::pair{"window_size", "window-size"},
                                     std::pair{"window_attn_skip_freq", "window-attn-skip-freq"}}) {
        const ArgValue* v = a.find(dest);
        if (!v) continue;
        if (const auto* list = std::get_if<std::vector<int64_t>>(v))
            flags[flag] = int_list_text(*list);
        else if (const auto* text = std::get_if<std::string>(v))
            flags[flag] = *text;
        else if (const auto* n = std::get_if<int64_t>(v))
            flags[flag] = std::to_string(*n);
    }
    return nn::read_attention_windows(flags, layers);
}

bool read_windows_of_args(const SaverArgs& a, HfConfig& c) {
    const nn::AttentionWindows w = windows_of(a, c.num_layers);
    if (!w.enabled()) return false;
    c.sliding_window = w.left + 1;
    c.windowed_layers = w.windowed;
    return true;
}

}  // namespace mt::plugins::hf
