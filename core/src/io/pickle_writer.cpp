#include "mt/io/pickle_writer.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>
#include <utility>

#include "mt/error.h"

namespace mt::io {
namespace {

constexpr size_t kBatch = 1000;  // pickle's _BATCHSIZE for APPENDS / SETITEMS

// The legacy typed-storage class torch pickles for `dtype`, or null when there is none.
const char* storage_class(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return "FloatStorage";
        case DType::f64:
            return "DoubleStorage";
        case DType::f16:
            return "HalfStorage";
        case DType::bf16:
            return "BFloat16Storage";
        case DType::i8:
            return "CharStorage";
        case DType::i16:
            return "ShortStorage";
        case DType::i32:
            return "IntStorage";
        case DType::i64:
            return "LongStorage";
        case DType::u8:
            return "ByteStorage";
        case DType::boolean:
            return "BoolStorage";
        case DType::u16:
            break;  // no legacy class: torch writes _rebuild_tensor_v3 over bytes
    }
    return nullptr;
}

// Decimal text -> minimal two's-complement little-endian bytes (pickle's encode_long).
std::string encode_long(const std::string& decimal) {
    const bool negative = !decimal.empty() && decimal[0] == '-';
    std::vector<uint8_t> mag;  // little-endian magnitude
    for (size_t i = negative ? 1 : 0; i < decimal.size(); ++i) {
        MT_CHECK(decimal[i] >= '0' && decimal[i] <= '9', "bad big integer text '", decimal, "'");
        unsigned carry = static_cast<unsigned>(decimal[i] - '0');
        for (auto& b : mag) {
            unsigned v = b * 10u + carry;
            b = static_cast<uint8_t>(v);
            carry = v >> 8;
        }
        if (carry) mag.push_back(static_cast<uint8_t>(carry));
    }
    mag.push_back(0);  // room for the sign bit
    if (negative) {
        unsigned carry = 1;
        for (auto& b : mag) {
            unsigned v = static_cast<uint8_t>(~b) + carry;
            b = static_cast<uint8_t>(v);
            carry = v >> 8;
        }
    }
    // Drop redundant sign bytes.
    while (mag.size() > 1) {
        const uint8_t last = mag.back(), prev = mag[mag.size() - 2];
        if ((last == 0 && !(prev & 0x80)) || (last == 0xFF && (prev & 0x80)))
            mag.pop_back();
        else
            break;
    }
    return std::string(mag.begin(), mag.end());
}

std::string int64_bytes(int64_t v) {
    std::string b;
    for (int i = 0; i < 8; ++i)
        b.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xFF));
    while (b.size() > 1) {
        const auto last = static_cast<uint8_t>(b.back()),
                   prev = static_cast<uint8_t>(b[b.size() - 2]);
        if ((last == 0 && !(prev & 0x80)) || (last == 0xFF && (prev & 0x80)))
            b.pop_back();
        else
            break;
    }
    return b;
}

// UTF-8 of the latin-1 text that stands for `bytes` (what protocol 2 stores for bytes).
std::string latin1_text(const std::string& bytes) {
    std::string out;
    for (unsigned char c : bytes) {
        if (c < 0x80) {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back(static_cast<char>(0xC0 | (c >> 6)));
            out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
        }
    }
    return out;
}

class Pickler {
  public:
    Pickled run(const PyValue& v) {
        out_.data = "\x80\x02";
        save(v);
        out_.data.push_back('.');
        return std::move(out_);
    }

    // PickleStream's parts: the opcodes written so far, taken out, and the memo entries of
    // objects by identity let go (the objects are freed: their addresses can come back).
    std::string take_data() { return std::exchange(out_.data, {}); }
    void save_part(const PyValue& v) {
        save(v);
        MT_CHECK(out_.storages.empty(), "PickleStream: a tensor's storage cannot be streamed");
        std::erase_if(memo_, [](const auto& entry) { return entry.first.starts_with('@'); });
    }
    void new_object(const std::string& module, const std::string& name) {
        save_global(module, name);
        op(')');
        op('\x81');
        memoize();
    }
    void empty_dict() {
        op('}');
        memoize();
    }
    void op(char c) { out_.data.push_back(c); }

  private:
    template <class T>
    void le(T v) {
        for (size_t i = 0; i < sizeof(T); ++i)
            out_.data.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xFF));
    }
    void memoize(const std::string& key = {}) {
        const uint32_t index = next_memo_++;
        if (!key.empty()) memo_[key] = index;
        if (index < 256) {
            op('q');
            le<uint8_t>(static_cast<uint8_t>(index));
        } else {
            op('r');
            le<uint32_t>(index);
        }
    }
    // Emits BINGET and returns true when `key` was memoized before.
    bool get(const std::string& key) {
        auto it = memo_.find(key);
        if (it == memo_.end()) return false;
        if (it->second < 256) {
            op('h');
            le<uint8_t>(static_cast<uint8_t>(it->second));
        } else {
            op('j');
            le<uint32_t>(it->second);
        }
        return true;
    }
    static std::string id_key(const void* p) {
        return "@" + std::to_string(reinterpret_cast<uintptr_t>(p));
    }

    void save_int(int64_t v) {
        if (v >= 0 && v <= 0xFF) {
            op('K');
            le<uint8_t>(static_cast<uint8_t>(v));
        } else if (v >= 0 && v <= 0xFFFF) {
            op('M');
            le<uint16_t>(static_cast<uint16_t>(v));
        } else if (v >= INT32_MIN && v <= INT32_MAX) {
            op('J');
            le<int32_t>(static_cast<int32_t>(v));
        } else {
            save_long_bytes(int64_bytes(v));
        }
    }
    void save_long_bytes(const std::string& b) {
        if (b.size() < 256) {
            op('\x8a');
            le<uint8_t>(static_cast<uint8_t>(b.size()));
        } else {
            op('\x8b');
            le<int32_t>(static_cast<int32_t>(b.size()));
        }
        out_.data += b;
    }
    void save_str(const std::string& s) {
        op('X');
        le<uint32_t>(static_cast<uint32_t>(s.size()));
        out_.data += s;
        memoize();
    }
    // Strings Python shares by identity in torch.save output (literals and storage keys).
    void save_shared_str(const std::string& s) {
        if (get("s:" + s)) return;
        op('X');
        le<uint32_t>(static_cast<uint32_t>(s.size()));
        out_.data += s;
        memoize("s:" + s);
    }
    void save_global(std::string module, const std::string& name) {
        if (module == "builtins") module = "__builtin__";  // protocol 2 fix_imports
        const std::string key = "g:" + module + "\n" + name;
        if (get(key)) return;
        op('c');
        out_.data += module + "\n" + name + "\n";
        memoize(key);
    }
    void save_tuple_items(const std::vector<PyValue>& items) {
        if (items.empty()) {
            op(')');
            return;
        }
        if (items.size() > 3) op('(');
        for (const PyValue& x : items) save(x);
        op(items.size() > 3 ? 't' : static_cast<char>(0x84 + items.size()));
        memoize();
    }
    // CPython's C pickler batches exact lists and dicts differently from items coming out of
    // __reduce__ iterators (OrderedDict, objects): an exact container uses APPEND/SETITEM only
    // when it holds one item, an iterator whenever a batch holds one.
    static bool single(size_t batch, size_t total, bool exact) {
        return exact ? total == 1 : batch == 1;
    }
    void batch_appends(const std::vector<PyValue>& items, bool exact) {
        for (size_t i = 0; i < items.size(); i += kBatch) {
            const size_t n = std::min(kBatch, items.size() - i);
            const bool one = single(n, items.size(), exact);
            if (!one) op('(');
            for (size_t j = i; j < i + n; ++j) save(items[j]);
            op(one ? 'a' : 'e');
        }
    }
    void batch_setitems(const std::vector<std::pair<PyValue, PyValue>>& items, bool exact) {
        for (size_t i = 0; i < items.size(); i += kBatch) {
            const size_t n = std::min(kBatch, items.size() - i);
            const bool one = single(n, items.size(), exact);
            if (!one) op('(');
            for (size_t j = i; j < i + n; ++j) {
                save(items[j].first);
                save(items[j].second);
            }
            op(one ? 's' : 'u');
        }
    }

    void save_storage(const std::shared_ptr<Storage>& storage, DType dtype,
                      const std::string& location) {
        MT_CHECK(storage && storage->device.type == DeviceType::cpu,
                 "torch.save writer: tensor storage must be on the CPU (copy it there first)");
        auto [it, fresh] =
            storages_.emplace(storage.get(), Seen{std::to_string(storages_.size()), dtype});
        MT_CHECK(it->second.dtype == dtype, "torch.save writer: one storage viewed as both ",
                 dtype_name(it->second.dtype), " and ", dtype_name(dtype));
        if (fresh) out_.storages.push_back({it->second.key, storage, storage->bytes});
        op('(');
        save_shared_str("storage");
        if (const char* cls = storage_class(dtype))
            save_global("torch", cls);
        else
            save_global("torch.storage", "UntypedStorage");
        save_shared_str(it->second.key);
        if (location == "cpu")
            save_shared_str(location);  // a literal in torch; cuda tags are built per call
        else
            save_str(location);
        save_int(storage_class(dtype) ? storage->bytes / dtype_size(dtype) : storage->bytes);
        op('t');
        memoize();
        op('Q');
    }

    void save_tensor(const PyTensor& t) {
        if (t.parameter) {
            save_global("torch._utils", "_rebuild_parameter");
            PyTensor data = t;
            data.parameter = false;
            data.requires_grad = false;
            save_tensor(data);  // .data is a fresh tensor object each time
            op(t.requires_grad ? '\x88' : '\x89');
            save_empty_ordered_dict();
            op('\x87');
            memoize();
            op('R');
            memoize();
            return;
        }
        const Tensor& x = t.tensor;
        MT_CHECK(x.defined(), "torch.save writer: undefined tensor");
        const bool typed = storage_class(x.dtype()) != nullptr;
        save_global("torch._utils", typed ? "_rebuild_tensor_v2" : "_rebuild_tensor_v3");
        op('(');
        save_storage(x.storage(), x.dtype(), t.location);
        save_int(x.offset());
        save_tuple_items(ints(x.shape()));
        save_tuple_items(ints(x.strides()));
        op(t.requires_grad ? '\x88' : '\x89');
        save_empty_ordered_dict();
        if (!typed) save(torch_dtype_global(x.dtype()));
        op('t');
        memoize();
        op('R');
        memoize();
    }
    void save_empty_ordered_dict() {
        save_global("collections", "OrderedDict");
        op(')');
        op('R');
        memoize();
    }
    static std::vector<PyValue> ints(const Shape& s) {
        std::vector<PyValue> out;
        for (int64_t v : s) out.push_back(PyValue::integer(v));
        return out;
    }

    void save(const PyValue& v) {
        const void* id = v.identity();
        if (id && get(id_key(id))) return;
        switch (v.kind()) {
            case PyKind::none:
                op('N');
                return;
            case PyKind::boolean:
                op(v.as_bool() ? '\x88' : '\x89');
                return;
            case PyKind::integer:
                save_int(v.as_int());
                return;
            case PyKind::big_integer:
                save_long_bytes(encode_long(v.as_big_integer()));
                return;
            case PyKind::real: {
                uint64_t bits;
                const double d = v.as_double();
                std::memcpy(&bits, &d, 8);
                op('G');
                for (int i = 7; i >= 0; --i)
                    out_.data.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
                return;
            }
            case PyKind::string:
                save_str(v.as_string());
                return;
            case PyKind::bytes:
                if (v.as_bytes().empty()) {
                    save_global("builtins", "bytes");
                    op(')');
                } else {
                    save_global("_codecs", "encode");
                    save_str(latin1_text(v.as_bytes()));
                    save_shared_str("latin1");
                    op('\x86');
                    memoize();
                }
                op('R');
                memoize();
                return;
            case PyKind::list:
                op(']');
                memoize(id_key(id));
                batch_appends(v.items(), /*exact=*/true);
                return;
            case PyKind::tuple:
                save_tuple_items(v.items());
                if (!v.items().empty()) memo_[id_key(id)] = next_memo_ - 1;
                return;
            case PyKind::set:
                save_global("builtins", "set");
                op(']');
                memoize();
                batch_appends(v.items(), /*exact=*/true);
                op('\x85');
                memoize();
                op('R');
                memoize(id_key(id));
                return;
            case PyKind::dict:
                if (v.dict_ref().ordered) {
                    save_global("collections", "OrderedDict");
                    op(')');
                    op('R');
                } else {
                    op('}');
                }
                memoize(id_key(id));
                batch_setitems(v.dict_ref().items, /*exact=*/!v.dict_ref().ordered);
                return;
            case PyKind::global: {
                const PyObject& g = v.object_ref();
                save_global(g.module, g.name);
                return;
            }
            case PyKind::object: {
                const PyObject& o = v.object_ref();
                save_global(o.module, o.name);
                save(o.args.is_none() ? PyValue::tuple() : o.args);
                op(o.make == PyObject::Make::newobj ? '\x81' : 'R');
                memoize(id_key(id));
                batch_appends(o.list_items, /*exact=*/false);
                batch_setitems(o.dict_items, /*exact=*/false);
                if (!o.state.is_none()) {
                    save(o.state);
                    op('b');
                }
                return;
            }
            case PyKind::storage: {
                const PyStorage& s = v.storage_ref();
                save_storage(s.storage, s.dtype, s.location);
                return;
            }
            case PyKind::tensor:
                save_tensor(v.tensor_ref());
                memo_[id_key(id)] = next_memo_ - 1;
                return;
        }
    }

    struct Seen {
        std::string key;
        DType dtype;
    };
    Pickled out_;
    std::unordered_map<std::string, uint32_t> memo_;
    uint32_t next_memo_ = 0;
    std::unordered_map<const Storage*, Seen> storages_;
};

}  // namespace

Pickled write_pickle(const PyValue& value) {
    return Pickler().run(value);
}

struct PickleStream::Impl {
    std::ostream& out;
    Pickler pickler;
    // The opcodes so far go out (after each batch of items: a few hundred kB at most).
    void flush() {
        const std::string data = pickler.take_data();
        out.write(data.data(), std::streamsize(data.size()));
    }
};

PickleStream::PickleStream(std::ostream& out) : impl_(new Impl{out, {}}) {
    impl_->pickler.op('\x80');
    impl_->pickler.op('\x02');
}
PickleStream::~PickleStream() = default;
void PickleStream::new_object(const std::string& module, const std::string& name) {
    impl_->pickler.new_object(module, name);
}
void PickleStream::build() {
    impl_->pickler.op('b');
}
void PickleStream::empty_dict() {
    impl_->pickler.empty_dict();
}
void PickleStream::mark() {
    impl_->pickler.op('(');
}
void PickleStream::set_items() {
    impl_->pickler.op('u');
    impl_->flush();
}
void PickleStream::save(const PyValue& value) {
    impl_->pickler.save_part(value);
}
void PickleStream::finish() {
    impl_->pickler.op('.');
    impl_->flush();
    impl_->out.flush();
    MT_CHECK(impl_->out.good(), "PickleStream: writing the pickle failed");
}

}  // namespace mt::io
