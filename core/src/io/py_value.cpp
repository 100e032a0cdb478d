#include "mt/io/py_value.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_set>

#include "mt/error.h"
#include "mt/text/utf8.h"

namespace mt::io {

std::string_view py_kind_name(PyKind kind) {
    switch (kind) {
        case PyKind::none:
            return "None";
        case PyKind::boolean:
            return "bool";
        case PyKind::integer:
            return "int";
        case PyKind::big_integer:
            return "big int";
        case PyKind::real:
            return "float";
        case PyKind::string:
            return "str";
        case PyKind::bytes:
            return "bytes";
        case PyKind::list:
            return "list";
        case PyKind::tuple:
            return "tuple";
        case PyKind::set:
            return "set";
        case PyKind::dict:
            return "dict";
        case PyKind::global:
            return "global";
        case PyKind::object:
            return "object";
        case PyKind::storage:
            return "storage";
        case PyKind::tensor:
            return "tensor";
    }
    return "?";
}

PyValue PyValue::boolean(bool v) {
    return {PyKind::boolean, v};
}
PyValue PyValue::integer(int64_t v) {
    return {PyKind::integer, v};
}
PyValue PyValue::big_integer(std::string decimal) {
    return {PyKind::big_integer, std::move(decimal)};
}
PyValue PyValue::real(double v) {
    return {PyKind::real, v};
}
PyValue PyValue::string(std::string utf8) {
    return {PyKind::string, std::move(utf8)};
}
PyValue PyValue::bytes(std::string data) {
    return {PyKind::bytes, std::move(data)};
}
PyValue PyValue::list(std::vector<PyValue> items) {
    return {PyKind::list, std::make_shared<std::vector<PyValue>>(std::move(items))};
}
PyValue PyValue::tuple(std::vector<PyValue> items) {
    return {PyKind::tuple, std::make_shared<std::vector<PyValue>>(std::move(items))};
}
PyValue PyValue::set(std::vector<PyValue> items) {
    return {PyKind::set, std::make_shared<std::vector<PyValue>>(std::move(items))};
}
PyValue PyValue::dict(bool ordered) {
    auto d = std::make_shared<PyDict>();
    d->ordered = ordered;
    return {PyKind::dict, std::move(d)};
}
PyValue PyValue::global(std::string module, std::string name) {
    auto o = std::make_shared<PyObject>();
    o->module = std::move(module);
    o->name = std::move(name);
    return {PyKind::global, std::move(o)};
}
PyValue PyValue::object(PyObject object) {
    MT_CHECK(object.make != PyObject::Make::global,
             "PyValue::object needs a reduce or newobj object");
    return {PyKind::object, std::make_shared<PyObject>(std::move(object))};
}
PyValue PyValue::storage(PyStorage storage) {
    return {PyKind::storage, std::make_shared<PyStorage>(std::move(storage))};
}
PyValue PyValue::tensor(PyTensor tensor) {
    return {PyKind::tensor, std::make_shared<PyTensor>(std::move(tensor))};
}
PyValue PyValue::tensor(Tensor tensor) {
    PyTensor t;
    t.tensor = std::move(tensor);
    return PyValue::tensor(std::move(t));
}

void PyValue::expect(PyKind kind) const {
    MT_CHECK(kind_ == kind, "expected a Python ", py_kind_name(kind), " but found ",
             py_kind_name(kind_));
}

bool PyValue::as_bool() const {
    expect(PyKind::boolean);
    return std::get<bool>(payload_);
}
int64_t PyValue::as_int() const {
    expect(PyKind::integer);
    return std::get<int64_t>(payload_);
}
double PyValue::as_double() const {
    if (kind_ == PyKind::integer) return static_cast<double>(std::get<int64_t>(payload_));
    expect(PyKind::real);
    return std::get<double>(payload_);
}
const std::string& PyValue::as_string() const {
    expect(PyKind::string);
    return std::get<std::string>(payload_);
}
const std::string& PyValue::as_bytes() const {
    expect(PyKind::bytes);
    return std::get<std::string>(payload_);
}
const std::string& PyValue::as_big_integer() const {
    expect(PyKind::big_integer);
    return std::get<std::string>(payload_);
}
std::vector<PyValue>& PyValue::items() {
    MT_CHECK(kind_ == PyKind::list || kind_ == PyKind::tuple || kind_ == PyKind::set,
             "expected a Python list, tuple or set but found ", py_kind_name(kind_));
    return *std::get<std::shared_ptr<std::vector<PyValue>>>(payload_);
}
const std::vector<PyValue>& PyValue::items() const {
    return const_cast<PyValue*>(this)->items();
}
PyDict& PyValue::dict_ref() {
    expect(PyKind::dict);
    return *std::get<std::shared_ptr<PyDict>>(payload_);
}
const PyDict& PyValue::dict_ref() const {
    return const_cast<PyValue*>(this)->dict_ref();
}
PyObject& PyValue::object_ref() {
    MT_CHECK(kind_ == PyKind::object || kind_ == PyKind::global,
             "expected a Python object or global but found ", py_kind_name(kind_));
    return *std::get<std::shared_ptr<PyObject>>(payload_);
}
const PyObject& PyValue::object_ref() const {
    return const_cast<PyValue*>(this)->object_ref();
}
const PyStorage& PyValue::storage_ref() const {
    expect(PyKind::storage);
    return *std::get<std::shared_ptr<PyStorage>>(payload_);
}
PyTensor& PyValue::tensor_ref() {
    expect(PyKind::tensor);
    return *std::get<std::shared_ptr<PyTensor>>(payload_);
}
const PyTensor& PyValue::tensor_ref() const {
    return const_cast<PyValue*>(this)->tensor_ref();
}
const Tensor& PyValue::as_tensor() const {
    return tensor_ref().tensor;
}

const PyValue* PyValue::find(std::string_view key) const {
    if (kind_ == PyKind::dict) return dict_ref().find(key);
    if (kind_ == PyKind::object) {
        const PyObject& o = object_ref();
        if (o.state.kind() == PyKind::dict) return o.state.dict_ref().find(key);
        return nullptr;
    }
    MT_FAIL("cannot look up key '", key, "' in a Python ", py_kind_name(kind_));
}

const PyValue& PyValue::operator[](std::string_view key) const {
    const PyValue* v = find(key);
    MT_CHECK(v != nullptr, "no key '", key, "' in the ", py_kind_name(kind_));
    return *v;
}

long PyValue::use_count() const {
    return std::visit(
        [](const auto& p) -> long {
            using T = std::decay_t<decltype(p)>;
            if constexpr (std::is_same_v<T, std::monostate> || std::is_same_v<T, bool> ||
                          std::is_same_v<T, int64_t> || std::is_same_v<T, double> ||
                          std::is_same_v<T, std::string>) {
                return 0;
            } else {
                return p.use_count();
            }
        },
        payload_);
}

const void* PyValue::identity() const {
    return std::visit(
        [](const auto& p) -> const void* {
            using T = std::decay_t<decltype(p)>;
            if constexpr (std::is_same_v<T, std::monostate> || std::is_same_v<T, bool> ||
                          std::is_same_v<T, int64_t> || std::is_same_v<T, double> ||
                          std::is_same_v<T, std::string>) {
                return nullptr;
            } else {
                return p.get();
            }
        },
        payload_);
}

namespace {

// Keys Python would hash as equal: None, bools, ints, strings, bytes, and tuples of them.
bool same_key(const PyValue& a, const PyValue& b) {
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case PyKind::none:
            return true;
        case PyKind::boolean:
            return a.as_bool() == b.as_bool();
        case PyKind::integer:
            return a.as_int() == b.as_int();
        case PyKind::big_integer:
            return a.as_big_integer() == b.as_big_integer();
        case PyKind::real:
            return a.as_double() == b.as_double();
        case PyKind::string:
            return a.as_string() == b.as_string();
        case PyKind::bytes:
            return a.as_bytes() == b.as_bytes();
        case PyKind::tuple: {
            const auto &x = a.items(), &y = b.items();
            if (x.size() != y.size()) return false;
            for (size_t i = 0; i < x.size(); ++i)
                if (!same_key(x[i], y[i])) return false;
            return true;
        }
        default:
            return a.identity() == b.identity();
    }
}

}  // namespace

void PyDict::set(PyValue key, PyValue value) {
    if (key.kind() == PyKind::string) {
        auto [it, inserted] = string_index_.emplace(key.as_string(), items.size());
        if (!inserted) {
            items[it->second].second = std::move(value);
            return;
        }
        items.emplace_back(std::move(key), std::move(value));
        return;
    }
    for (auto& kv : items) {
        if (same_key(kv.first, key)) {
            kv.second = std::move(value);
            return;
        }
    }
    items.emplace_back(std::move(key), std::move(value));
}

const PyValue* PyDict::find(std::string_view key) const {
    auto it = string_index_.find(std::string(key));
    return it == string_index_.end() ? nullptr : &items[it->second].second;
}

namespace {

struct DtypeName {
    DType dtype;
    const char* torch_name;
};
constexpr DtypeName kTorchDtypes[] = {
    {DType::f32, "float32"},   {DType::f64, "float64"},  {DType::f16, "float16"},
    {DType::bf16, "bfloat16"}, {DType::i8, "int8"},      {DType::i16, "int16"},
    {DType::i32, "int32"},     {DType::i64, "int64"},    {DType::u8, "uint8"},
    {DType::u16, "uint16"},    {DType::boolean, "bool"},
};

}  // namespace

std::optional<DType> torch_dtype_of(const PyValue& value) {
    if (value.kind() != PyKind::global || value.object_ref().module != "torch") return std::nullopt;
    const std::string& n = value.object_ref().name;
    static const std::map<std::string, DType> aliases = {
        {"float", DType::f32}, {"double", DType::f64}, {"half", DType::f16},
        {"long", DType::i64},  {"int", DType::i32},    {"short", DType::i16}};
    for (const auto& d : kTorchDtypes)
        if (n == d.torch_name) return d.dtype;
    auto it = aliases.find(n);
    if (it != aliases.end()) return it->second;
    return std::nullopt;
}

PyValue torch_dtype_global(DType dtype) {
    for (const auto& d : kTorchDtypes)
        if (d.dtype == dtype) return PyValue::global("torch", d.torch_name);
    MT_FAIL("no torch dtype for ", dtype_name(dtype));
}

namespace {

std::string format_double(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

std::string element(const uint8_t* p, DType dtype) {
    auto load = [p](auto zero) {
        decltype(zero) v;
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    switch (dtype) {
        case DType::f32:
            return format_double(load(float{}));
        case DType::f64:
            return format_double(load(double{}));
        case DType::f16:
            return format_double(half_to_float(load(uint16_t{})));
        case DType::bf16:
            return format_double(bfloat16_to_float(load(uint16_t{})));
        case DType::i8:
            return std::to_string(load(int8_t{}));
        case DType::i16:
            return std::to_string(load(int16_t{}));
        case DType::i32:
            return std::to_string(load(int32_t{}));
        case DType::i64:
            return std::to_string(load(int64_t{}));
        case DType::u8:
            return std::to_string(load(uint8_t{}));
        case DType::u16:
            return std::to_string(load(uint16_t{}));
        case DType::boolean:
            return *p ? "True" : "False";
    }
    return "?";
}

std::string quote(const std::string& s) {
    std::string out = "'";
    for (unsigned char ch : s) {
        if (ch == '\\' || ch == '\'') {
            out += '\\';
            out += static_cast<char>(ch);
        } else if (ch < 0x20 || ch == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", ch);
            out += buf;
        } else {
            out += static_cast<char>(ch);
        }
    }
    return out + "'";
}

// Bounded for any value: a container inside itself prints as <cycle>, nesting beyond 1000
// levels as <...>, and after 64 MiB of output or 2^20 values (a small memo DAG, [L, L] of
// [L, L] ..., expands exponentially) everything else prints as <...>.
class Repr {
  public:
    explicit Repr(size_t budget = kBudget) : budget_(budget) {}

    std::string operator()(const PyValue& v) {
        if (produced_ > budget_ || ++visits_ > kMaxVisits || depth_ > kMaxDepth) return "<...>";
        const void* id = v.identity();
        if (id && !open_.insert(id).second) return "<cycle>";
        ++depth_;
        std::string out = one(v);
        --depth_;
        if (id) open_.erase(id);
        // What this value adds itself (a container's children were counted on their own).
        const bool container = v.kind() == PyKind::list || v.kind() == PyKind::tuple ||
                               v.kind() == PyKind::set || v.kind() == PyKind::dict ||
                               v.kind() == PyKind::object;
        produced_ += container ? 2 : out.size();
        return out;
    }

  private:
    static constexpr size_t kBudget = size_t(64) << 20;    // bytes of output
    static constexpr size_t kMaxVisits = size_t(1) << 20;  // values (a state dict has thousands)
    static constexpr int kMaxDepth = 1000;

    std::string one(const PyValue& v) {
        switch (v.kind()) {
            case PyKind::none:
                return "None";
            case PyKind::boolean:
                return v.as_bool() ? "True" : "False";
            case PyKind::integer:
                return std::to_string(v.as_int());
            case PyKind::big_integer:
                return v.as_big_integer();
            case PyKind::real:
                return "float(" + format_double(v.as_double()) + ")";
            case PyKind::string:
                return quote(v.as_string());
            case PyKind::bytes: {
                std::string out = "bytes(";
                char buf[4];
                for (unsigned char ch : v.as_bytes()) {
                    std::snprintf(buf, sizeof buf, "%02x", ch);
                    out += buf;
                }
                return out + ")";
            }
            case PyKind::list:
                return seq("[", v.items(), "]");
            case PyKind::tuple:
                return seq("(", v.items(), ")");
            case PyKind::set:
                return seq("set(", v.items(), ")");
            case PyKind::dict:
                return (v.dict_ref().ordered ? "OrderedDict" : "") + pairs(v.dict_ref().items);
            case PyKind::global:
                return "global(" + v.object_ref().module + "." + v.object_ref().name + ")";
            case PyKind::object:
                return object(v.object_ref());
            case PyKind::storage: {
                const PyStorage& s = v.storage_ref();
                return mt::str("storage(", dtype_name(s.dtype), ", numel=", s.numel, ", storage=#",
                               storage_id(s.storage.get()), ", location=", s.location, ")");
            }
            case PyKind::tensor:
                return tensor(v.tensor_ref());
        }
        return "?";
    }

    std::string seq(const char* open, const std::vector<PyValue>& items, const char* close) {
        std::string out = open;
        for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + (*this)(items[i]);
        return out + close;
    }
    std::string pairs(const std::vector<std::pair<PyValue, PyValue>>& items) {
        std::string out = "{";
        for (size_t i = 0; i < items.size(); ++i)
            out += (i ? ", " : "") + (*this)(items[i].first) + ": " + (*this)(items[i].second);
        return out + "}";
    }
    std::string object(const PyObject& o) {
        std::string out = o.module + "." + o.name +
                          (o.make == PyObject::Make::newobj ? "<newobj>" : "<reduce>") +
                          (*this)(o.args);
        if (!o.state.is_none()) out += ".state(" + (*this)(o.state) + ")";
        if (!o.list_items.empty()) out += ".items" + seq("[", o.list_items, "]");
        if (!o.dict_items.empty()) out += ".dict" + pairs(o.dict_items);
        return out;
    }
    size_t storage_id(const Storage* s) {
        return storage_ids_.emplace(s, storage_ids_.size()).first->second;
    }
    std::string tensor(const PyTensor& pt) {
        const Tensor& t = pt.tensor;
        // Strides of size-1 dims, and of empty tensors, carry no meaning and differ between
        // writers; they print as '*'.
        std::string strides = "[";
        for (size_t d = 0; d < t.shape().size(); ++d) {
            strides += d ? ", " : "";
            strides += t.shape()[d] == 1 || t.numel() == 0 ? "*" : std::to_string(t.strides()[d]);
        }
        strides += "]";
        std::string out = mt::str("tensor(", dtype_name(t.dtype()), ", ", shape_str(t.shape()),
                                  ", stride=", strides, ", offset=", t.offset(), ", storage=#",
                                  storage_id(t.storage().get()),
                                  ", requires_grad=", pt.requires_grad ? "True" : "False",
                                  ", parameter=", pt.parameter ? "True" : "False",
                                  ", location=", pt.location, ", values=[");
        const int64_t n = t.numel();
        const int64_t esize = dtype_size(t.dtype());
        const auto* base = static_cast<const uint8_t*>(t.storage()->data);
        std::vector<int64_t> index(t.shape().size(), 0);
        for (int64_t i = 0; i < n; ++i) {
            int64_t off = t.offset();
            for (size_t d = 0; d < index.size(); ++d) off += index[d] * t.strides()[d];
            out += (i ? ", " : "") + element(base + off * esize, t.dtype());
            for (size_t d = index.size(); d-- > 0;) {
                if (++index[d] < t.shape()[d]) break;
                index[d] = 0;
            }
        }
        return out + "])";
    }

    size_t budget_;
    std::map<const Storage*, size_t> storage_ids_;
    std::unordered_set<const void*> open_;  // containers being printed
    size_t produced_ = 0, visits_ = 0;
    int depth_ = 0;
};

}  // namespace

std::string repr(const PyValue& value) {
    return Repr()(value);
}

std::string short_repr(const PyValue& value, size_t max_chars) {
    const std::string out = Repr(max_chars)(value);
    if (out.size() <= max_chars) return out;
    return std::string(text::utf8_prefix(out, max_chars > 3 ? max_chars - 3 : 0)) + "...";
}

Shape py_shape(const PyValue& v, std::string_view what) {
    const PyValue* t = &v;
    if (v.kind() == PyKind::object) {
        const PyValue& args = v.object_ref().args;
        MT_CHECK(args.kind() == PyKind::tuple && !args.items().empty(), what,
                 " must be a tuple, not a ", v.object_ref().name, " object without arguments");
        t = &args.items()[0];
    }
    MT_CHECK(t->kind() == PyKind::tuple || t->kind() == PyKind::list, what,
             " must be a tuple, not a ", py_kind_name(t->kind()));
    Shape out;
    for (const PyValue& x : t->items()) out.push_back(x.as_int());
    return out;
}

}  // namespace mt::io
