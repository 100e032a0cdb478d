#include "formula_weights.h"

namespace mt::test {

uint64_t fnv1a64(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

uint64_t formula_hash(uint64_t base, uint64_t i) {
    uint64_t x = base + i * 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

void fill_formula_weight(nn::Parameter& p) {
    const uint64_t base = fnv1a64(p.name);
    // A bf16 parameter receives the f32 formula rounded.
    Tensor f32 =
        p.value.dtype() == DType::f32 ? p.value : Tensor::empty(p.value.shape(), DType::f32);
    float* v = f32.data<float>();
    for (int64_t i = 0; i < p.value.numel(); ++i) {
        const float u =
            float(int64_t(formula_hash(base, uint64_t(i)) >> 40) - (1 << 23)) / float(1 << 23);
        if (p.value.dim() > 1)
            v[i] = u * 0.25f;
        else if (p.name.ends_with("bias"))
            v[i] = u * 0.125f;
        else
            v[i] = 1.0f + u * 0.125f;
    }
    if (f32.raw_data() != p.value.raw_data()) p.value.copy_from(cast_float(f32, p.value.dtype()));
}

}  // namespace mt::test
