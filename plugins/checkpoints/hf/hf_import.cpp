#include "hf_import.h"

#include "hf_layout.h"
#include "mt/error.h"

namespace mt::plugins::hf {

std::string HfImport::hf(const std::string& name, const Shape& shape) const {
    const Shape& found = tensors_.shape(name);
    MT_CHECK(found == shape, "Hugging Face tensor '", name, "' has shape ", shape_str(found),
             ", config.json implies ", shape_str(shape));
    return name;
}

void HfImport::put(const std::string& name, Shape shape, const std::vector<std::string>& sources,
                   Make make, std::optional<DType> dtype) {
    DType made = tensors_.dtype(sources.at(0));
    for (const std::string& s : sources)
        if (tensors_.dtype(s) != made) made = DType::f32;
    recipes_.push_back({name, std::move(shape), dtype.value_or(made), std::move(make)});
}

void HfImport::put(const std::string& name, const std::string& src) {
    put(name, tensors_.shape(src), {src}, [src](const HfRead& t) { return t.get(src); });
}

void HfImport::put_transposed(const std::string& name, const std::string& src) {
    const Shape& s = tensors_.shape(src);
    put(name, {s[1], s[0]}, {src}, [src](const HfRead& t) { return transposed(t.get(src)); });
}

void HfImport::put_swiglu(const std::string& dst, const std::string& src, int64_t ffn,
                          const SwigluNames& names) {
    const int64_t h = c_.hidden_size;
    const std::string gate = hf(src + names.gate + ".weight", {ffn, h}),
                      up = hf(src + names.up + ".weight", {ffn, h});
    put(dst + "linear_fc1.weight", {2 * ffn, h}, {gate, up},
        [gate, up](const HfRead& t) { return concat_rows(t.get(gate), t.get(up)); });
    put(dst + "linear_fc2.weight", hf(src + names.down + ".weight", {h, ffn}));
}

void HfImport::put_qkv(const std::string& name, const std::string& q, const std::string& k,
                       const std::string& v, int64_t nq, int64_t ng, int64_t hd) {
    Shape shape = tensors_.shape(q);
    shape[0] = (nq + 2 * ng) * hd;
    put(name, shape, {q, k, v}, [q, k, v, nq, ng, hd](const HfRead& t) {
        return group_qkv(t.get(q), t.get(k), t.get(v), nq, ng, hd);
    });
}

}  // namespace mt::plugins::hf
