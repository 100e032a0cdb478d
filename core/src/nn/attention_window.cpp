#include "mt/nn/attention_window.h"

#include <cstdlib>

#include "mt/error.h"
#include "mt/model_args_reader.h"
#include "mt/nn/moe/layer_pattern.h"

namespace mt::nn {

namespace {

// Megatron's tuple_type: "(4096, 0)", "4096,0" or "[4096, 0]" as two integers.
std::pair<int64_t, int64_t> window_pair(const std::string& text) {
    std::string digits;
    for (char c : text)
        if (c != '(' && c != ')' && c != '[' && c != ']' && c != ' ') digits += c;
    const size_t comma = digits.find(',');
    char* end = nullptr;
    const long long left = std::strtoll(digits.c_str(), &end, 10);
    const bool left_ok = comma != std::string::npos && end == digits.c_str() + comma && comma > 0;
    const char* right_text = left_ok ? digits.c_str() + comma + 1 : "";
    const long long right = std::strtoll(right_text, &end, 10);
    MT_CHECK(left_ok && end != right_text && *end == '\0' && left >= -1 && right >= -1,
             "--window-size ", text.substr(0, 200),
             ": expected two integers (left, right), each -1 or more");
    return {left, right};
}

}  // namespace

int64_t AttentionWindows::of_layer(int64_t layer) const {
    return enabled() && size_t(layer) < windowed.size() && windowed[size_t(layer)] ? left : -1;
}

std::vector<FlagInfo> attention_window_flags() {
    return {value_flag("window-size",
                       "sliding-window attention: (left, right) keys each query sees beside "
                       "itself; -1 is an infinite window (a causal model's right is 0)"),
            value_flag("window-attn-skip-freq",
                       "with --window-size: every N-th layer attends to all keys (an integer N), "
                       "or a list expression of 1 (windowed) and 0 (full attention) per layer"),
            value_flag("rotary-base-local",
                       "the rope base of the --window-size layers, which then rotate without "
                       "scaling or interpolation (Gemma 3's local layers; default: the model's "
                       "rope)")};
}

AttentionWindows read_attention_windows(const ModelArgs& args, int64_t num_layers) {
    const ModelArgsReader f(args);
    AttentionWindows w;
    if (!f.has("window-size") || f.text("window-size") == "None") {
        MT_CHECK(!f.has("window-attn-skip-freq") || f.text("window-attn-skip-freq") == "None",
                 "--window-attn-skip-freq needs --window-size");
        MT_CHECK(!f.has("rotary-base-local") || f.text("rotary-base-local") == "None",
                 "--rotary-base-local needs --window-size (it is the windowed layers' rope)");
        return w;
    }
    if (f.has("rotary-base-local") && f.text("rotary-base-local") != "None") {
        w.local_rope_base = f.real("rotary-base-local", 0);
        MT_CHECK(w.local_rope_base > 0, "--rotary-base-local must be positive, got ",
                 w.local_rope_base);
    }
    const auto [left, right] = window_pair(f.text("window-size"));
    MT_CHECK(right == 0 || left == -1, "not supported yet: --window-size ", left, ",", right,
             " (a window to the right of each query: causal models see none)");
    w.left = left;
    w.windowed.assign(size_t(num_layers), true);
    if (!f.has("window-attn-skip-freq") || f.text("window-attn-skip-freq") == "None") return w;
    const std::string& text = f.text("window-attn-skip-freq");
    if (text.find('[') == std::string::npos) {
        const int64_t n = f.integer("window-attn-skip-freq");
        MT_CHECK(n > 0, "--window-attn-skip-freq ", n, ": must be positive");
        for (int64_t i = 0; i < num_layers; ++i) w.windowed[size_t(i)] = (i + 1) % n != 0;
        return w;
    }
    const std::vector<int64_t> pattern = read_layer_list(text, "window-attn-skip-freq");
    MT_CHECK(int64_t(pattern.size()) == num_layers, "--window-attn-skip-freq ", text.substr(0, 200),
             " gives ", pattern.size(), " layers for --num-layers ", num_layers);
    for (size_t i = 0; i < pattern.size(); ++i) w.windowed[i] = pattern[i] != 0;
    return w;
}

LayerSpecs with_attention_windows(LayerSpecs specs, AttentionWindows windows) {
    if (!windows.enabled()) return specs;
    return [specs = std::move(specs), windows = std::move(windows)](int64_t layer) {
        LayerSpec spec = specs(layer);
        const int64_t window = windows.of_layer(layer);
        const double rope_base = window >= 0 ? windows.local_rope_base : 0;
        for (SublayerSpec& sublayer : spec.sublayers)
            sublayer.build = [build = std::move(sublayer.build), window, rope_base](
                                 const std::string& prefix, const TransformerConfig& config,
                                 Backend& backend) {
                TransformerConfig layer_config = config;
                layer_config.attention_window = window;
                if (rope_base > 0) {
                    ops::RopeConfig& rope = layer_config.rope;
                    rope.base = rope_base;
                    rope.llama3_scaling_factor = rope.seq_len_interpolation_factor = 0;
                    rope.yarn_scaling_factor = 0;
                    rope.table_scale = 1.0;
                }
                return build(prefix, layer_config, backend);
            };
        return spec;
    };
}

}  // namespace mt::nn
