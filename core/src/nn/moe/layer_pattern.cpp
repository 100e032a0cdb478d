#include "mt/nn/moe/layer_pattern.h"

#include <cctype>
#include <cstdlib>

#include "mt/error.h"

namespace mt::nn {

namespace {

// A recursive-descent reading of the list expressions --moe-layer-freq and
// --window-attn-skip-freq take (Megatron evals them as Python): sum := product ('+' product)*;
// product := atom ('*' atom)*; atom := integer | '[' integers ']' | '(' sum ')'. A product
// multiplies a list by an integer (either side).
class PatternReader {
  public:
    PatternReader(const std::string& text, const char* flag) : text_(text), flag_(flag) {}

    std::vector<int64_t> read() {
        Value v = sum();
        skip_spaces();
        expect(pos_ == text_.size() && v.is_list, "a list expression");
        return v.list;
    }

  private:
    struct Value {
        bool is_list = false;
        int64_t number = 0;
        std::vector<int64_t> list;
    };

    void expect(bool ok, const char* what) const {
        MT_CHECK(ok, "--", flag_, " \"", text_.substr(0, 200), "\": expected ", what,
                 " at character ", pos_ + 1);
    }
    void skip_spaces() {
        while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    bool take(char c) {
        skip_spaces();
        if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
        return false;
    }
    int64_t integer() {
        skip_spaces();
        const size_t start = pos_;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
        expect(pos_ > start && pos_ - start < 10, "an integer");
        return std::stoll(text_.substr(start, pos_ - start));
    }
    Value atom() {
        Value v;
        if (take('(')) {
            v = sum();
            expect(take(')'), "')'");
        } else if (take('[')) {
            v.is_list = true;
            if (!take(']')) {
                do v.list.push_back(integer());
                while (take(','));
                expect(take(']'), "']'");
            }
        } else {
            v.number = integer();
        }
        return v;
    }
    Value product() {
        Value v = atom();
        while (take('*')) {
            Value w = atom();
            expect(v.is_list != w.is_list, "a list times an integer");
            Value& list = v.is_list ? v : w;
            const int64_t times = v.is_list ? w.number : v.number;
            expect(times >= 0 && times * int64_t(list.list.size()) <= (1 << 20), "a small count");
            Value out{true, 0, {}};
            for (int64_t i = 0; i < times; ++i)
                out.list.insert(out.list.end(), list.list.begin(), list.list.end());
            v = std::move(out);
        }
        return v;
    }
    Value sum() {
        Value v = product();
        while (take('+')) {
            Value w = product();
            expect(v.is_list && w.is_list, "lists on both sides of '+'");
            v.list.insert(v.list.end(), w.list.begin(), w.list.end());
        }
        return v;
    }

    const std::string& text_;
    const char* flag_;
    size_t pos_ = 0;
};

}  // namespace

std::vector<int64_t> read_layer_list(const std::string& text, const char* flag) {
    return PatternReader(text, flag).read();
}

MoeLayerPattern MoeLayerPattern::parse(const std::string& text, int64_t num_layers) {
    MoeLayerPattern p;
    if (text.find('[') == std::string::npos) {
        char* end = nullptr;
        const long long k = std::strtoll(text.c_str(), &end, 10);
        MT_CHECK(!text.empty() && *end == '\0' && k > 0, "--moe-layer-freq ", text,
                 ": must be a positive integer or a list expression");
        for (int64_t i = 0; i < num_layers; ++i) p.moe.push_back(i % k == 0);
        return p;
    }
    std::vector<int64_t> flags = read_layer_list(text, "moe-layer-freq");
    MT_CHECK(int64_t(flags.size()) == num_layers, "--moe-layer-freq ", text, " gives ",
             flags.size(), " layers for --num-layers ", num_layers);
    for (int64_t f : flags) {
        MT_CHECK(f == 0 || f == 1, "--moe-layer-freq ", text, ": entries must be 0 or 1, got ", f);
        p.moe.push_back(f == 1);
    }
    return p;
}

MoeLayerPattern MoeLayerPattern::deepspeed(const std::vector<int64_t>& num_experts,
                                           int64_t interval, int64_t num_layers) {
    MT_CHECK(interval > 0, "--expert-interval must be positive, got ", interval);
    const int64_t moe_layers = num_layers / interval;
    // (Megatron-DeepSpeed's assertion.)
    MT_CHECK(num_experts.size() == 1 || int64_t(num_experts.size()) == moe_layers,
             "num_experts must be either a single value or a list of the same length as the "
             "number of MoE layers (--num-experts gives ",
             num_experts.size(), " values for ", moe_layers, " MoE layers: --num-layers ",
             num_layers, " / --expert-interval ", interval, ")");
    MoeLayerPattern p;
    for (int64_t layer = 1; layer <= num_layers; ++layer) {
        int64_t n = 1;
        if (layer % interval == 0)
            n = num_experts.size() == 1 ? num_experts[0]
                                        : num_experts[size_t((layer - 1) / interval)];
        MT_CHECK(n > 0, "--num-experts must be positive, got ", n);
        p.moe.push_back(n > 1);
        p.experts.push_back(n > 1 ? n : 0);
    }
    return p;
}

int64_t MoeLayerPattern::count() const {
    int64_t n = 0;
    for (bool m : moe) n += m;
    return n;
}

}  // namespace mt::nn
