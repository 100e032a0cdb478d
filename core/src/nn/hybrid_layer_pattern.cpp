// allocate_layers as Megatron writes it: attention layers evenly spaced between Mamba sections,
// then MLP layers right-justified among the Mamba ones; Python's round (half to even) and
// "%.2f".
#include "mt/nn/hybrid_layer_pattern.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "mt/error.h"

namespace mt::nn {

namespace {

constexpr char kMamba = 'M', kAttention = '*', kMlp = '-', kMoe = 'E', kPipe = '|';

// Python's round() of a float to an int: half to even.
int64_t python_round(double v) {
    return int64_t(std::nearbyint(v));  // the default rounding mode rounds half to even
}

std::string allocate_auto(int64_t total, double attention_ratio, double mlp_ratio) {
    const int64_t attention = python_round(double(total) * attention_ratio);
    int64_t mamba = total - attention;
    const double section = double(mamba) / double(attention + 1);
    std::string layers(size_t(total), kMamba);
    double x = section;
    for (int64_t l = 0; l < total; ++l) {
        if (x < 0.5) {
            layers[size_t(l)] = kAttention;
            x += section;
        } else {
            x -= 1;
        }
    }
    const int64_t mlp = python_round(double(total) * mlp_ratio);
    if (mlp > 0) {
        mamba -= mlp;
        const double per_mlp = double(mamba) / double(mlp);
        x = per_mlp;
        for (int64_t l = 0; l < total; ++l) {
            if (layers[size_t(l)] != kMamba) continue;
            if (x < 0.5) {
                layers[size_t(l)] = kMlp;
                x += per_mlp;
            } else {
                x -= 1;
            }
        }
    }
    return layers;
}

std::string two_decimals(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

}  // namespace

std::vector<int64_t> hybrid_pipeline_segments(const std::string& pattern) {
    std::vector<int64_t> segments{0};
    for (char c : pattern) {
        if (c == kPipe)
            segments.push_back(0);
        else
            ++segments.back();
    }
    return segments;
}

int64_t hybrid_pattern_layers(const std::string& pattern) {
    return int64_t(pattern.size()) - std::count(pattern.begin(), pattern.end(), kPipe);
}

HybridAllocation allocate_hybrid_layers(int64_t num_layers, double attention_ratio,
                                        double mlp_ratio,
                                        const std::optional<std::string>& override_pattern) {
    MT_CHECK(num_layers > 0, "hybrid model: --num-layers must be positive, got ", num_layers);
    MT_CHECK(attention_ratio >= 0 && attention_ratio <= 1 && mlp_ratio >= 0 && mlp_ratio <= 1 &&
                 attention_ratio + mlp_ratio <= 1,
             "hybrid model: --hybrid-attention-ratio (", attention_ratio,
             ") and --hybrid-mlp-ratio (", mlp_ratio,
             ") must each lie in [0, 1] and sum to at most 1");
    HybridAllocation out;
    out.layers = allocate_auto(num_layers, attention_ratio, mlp_ratio);
    const bool ratios = attention_ratio > 0 || mlp_ratio > 0;
    if (override_pattern) {
        std::string p = *override_pattern;
        std::erase(p, kPipe);
        MT_CHECK(int64_t(p.size()) == num_layers,
                 "The hybrid override pattern is the wrong length: got ", p.size(), ", expected ",
                 num_layers);
        for (char c : p) {
            // core_v0.19's other layer kinds and its multi-token prediction part.
            static const std::pair<char, const char*> kLater[] = {
                {'G', "gated delta net layers ('G')"},
                {'D', "DeepSeek sparse attention layers ('D')"},
                {'+', "multi-latent attention layers ('+')"},
                {'/', "multi-token prediction layers ('/')"}};
            for (const auto& [symbol, what] : kLater)
                MT_CHECK(c != symbol, "not supported yet: ", what, " in the hybrid layer pattern");
            MT_CHECK(c == kMamba || c == kAttention || c == kMlp || c == kMoe,
                     "In hybrid override pattern, '", c, "' is not one of 'M', '*', '-', 'E'");
        }
        out.lines.push_back("Using hybrid override pattern");
        for (char c : {kMamba, kAttention, kMlp, kMoe})
            MT_CHECK(!ratios || std::count(p.begin(), p.end(), c) ==
                                    std::count(out.layers.begin(), out.layers.end(), c),
                     "The number of each type of layer in the override pattern must match the "
                     "number in the overridden pattern.");
        if (p == out.layers) {
            out.lines.push_back("The override pattern matches the overridden pattern");
        } else {
            out.lines.push_back("Warning: overriding pattern A with pattern B");
            out.lines.push_back("A: " + out.layers);
            out.lines.push_back("B: " + p);
        }
        out.layers = p;
    }
    if (ratios || override_pattern) {
        const auto count = [&](char c) {
            return int64_t(std::count(out.layers.begin(), out.layers.end(), c));
        };
        const std::string total = std::to_string(num_layers);
        out.lines.push_back("Hybrid allocation (M is mamba, * is attention, - is mlp):");
        out.lines.push_back(out.layers);
        out.lines.push_back(std::to_string(count(kAttention)) + " attention layers in " + total +
                            " total layers.");
        out.lines.push_back("Target attention ratio: " + two_decimals(attention_ratio) +
                            ". Actual attention ratio: " +
                            two_decimals(double(count(kAttention)) / double(num_layers)) + ".");
        out.lines.push_back(std::to_string(count(kMlp)) + " mlp layers in " + total +
                            " total layers.");
        out.lines.push_back(
            "Target mlp ratio: " + two_decimals(mlp_ratio) +
            ". Actual mlp ratio: " + two_decimals(double(count(kMlp)) / double(num_layers)) + ".");
    }
    return out;
}

}  // namespace mt::nn
