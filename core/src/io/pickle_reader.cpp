#include "mt/io/pickle_reader.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "mt/error.h"

namespace mt::io {
namespace {

// Two's-complement little-endian bytes (LONG1/LONG4) as decimal text.
std::string big_int_text(std::string_view bytes) {
    const bool negative = !bytes.empty() && (static_cast<uint8_t>(bytes.back()) & 0x80);
    std::vector<uint8_t> mag(bytes.begin(), bytes.end());
    if (negative) {  // magnitude = ~x + 1
        unsigned carry = 1;
        for (auto& b : mag) {
            unsigned v = static_cast<uint8_t>(~b) + carry;
            b = static_cast<uint8_t>(v);
            carry = v >> 8;
        }
    }
    std::string digits;
    while (std::any_of(mag.begin(), mag.end(), [](uint8_t b) { return b != 0; })) {
        unsigned rem = 0;
        for (size_t i = mag.size(); i-- > 0;) {
            unsigned cur = (rem << 8) | mag[i];
            mag[i] = static_cast<uint8_t>(cur / 10);
            rem = cur % 10;
        }
        digits.push_back(static_cast<char>('0' + rem));
    }
    if (digits.empty()) digits = "0";
    if (negative) digits.push_back('-');
    std::reverse(digits.begin(), digits.end());
    return digits;
}

PyValue long_value(std::string_view bytes) {
    // Fits int64 when every byte above the 8th only repeats the sign.
    const bool negative = !bytes.empty() && (static_cast<uint8_t>(bytes.back()) & 0x80);
    const char fill = negative ? '\xff' : '\0';
    bool fits = true;
    for (size_t i = 8; i < bytes.size(); ++i) fits = fits && bytes[i] == fill;
    if (bytes.size() > 8) fits = fits && ((static_cast<uint8_t>(bytes[7]) & 0x80) != 0) == negative;
    if (!fits) return PyValue::big_integer(big_int_text(bytes));
    uint64_t v = negative ? ~uint64_t{0} : 0;
    for (size_t i = 0; i < std::min<size_t>(bytes.size(), 8); ++i) {
        v &= ~(uint64_t{0xFF} << (8 * i));
        v |= uint64_t{static_cast<uint8_t>(bytes[i])} << (8 * i);
    }
    return PyValue::integer(static_cast<int64_t>(v));
}

// UTF-8 text whose code points are all < 256, as the bytes they stand for (latin-1).
std::string latin1_bytes(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<uint8_t>(s[i]);
        if (c < 0x80) {
            out.push_back(static_cast<char>(c));
        } else {
            MT_CHECK((c & 0xE0) == 0xC0 && i + 1 < s.size() && c <= 0xC3,
                     "_codecs.encode: character beyond latin-1 in its argument");
            out.push_back(
                static_cast<char>(((c & 0x03) << 6) | (static_cast<uint8_t>(s[++i]) & 0x3F)));
        }
    }
    return out;
}

bool is_builtins(const std::string& module) {
    return module == "builtins" || module == "__builtin__";
}

// Interprets callable(*args) for the globals torch files rely on; anything else stays generic.
PyValue reduce(const PyValue& callable, const PyValue& args) {
    MT_CHECK(args.kind() == PyKind::tuple, "REDUCE arguments must be a tuple, not a ",
             py_kind_name(args.kind()));
    if (callable.kind() == PyKind::global) {
        const PyObject& g = callable.object_ref();
        const auto& a = args.items();
        const std::string qual = g.module + "." + g.name;
        if (qual == "torch._utils._rebuild_tensor_v2" || qual == "torch._utils._rebuild_tensor") {
            MT_CHECK(a.size() >= 4, qual, " needs at least 4 arguments, got ", a.size());
            const PyStorage& s = a[0].storage_ref();
            PyTensor t;
            // Torch's layout as is: Tensor keeps any strides and checks their reach.
            t.tensor =
                Tensor::from_storage(s.storage, py_shape(a[2], "tensor size"),
                                     py_shape(a[3], "tensor stride"), s.dtype, a[1].as_int());
            t.requires_grad = a.size() > 4 && a[4].as_bool();
            t.location = s.location;
            return PyValue::tensor(std::move(t));
        }
        if (qual == "torch._utils._rebuild_tensor_v3") {  // dtypes without a legacy storage class
            MT_CHECK(a.size() >= 7, qual, " needs at least 7 arguments, got ", a.size());
            const std::optional<DType> dtype = torch_dtype_of(a[6]);
            MT_CHECK(dtype.has_value(), qual, ": unsupported dtype ", short_repr(a[6]));
            PyStorage s = a[0].storage_ref();
            s.dtype = *dtype;
            s.numel = s.storage->bytes / dtype_size(*dtype);
            PyTensor t;
            // Torch's layout as is: Tensor keeps any strides and checks their reach.
            t.tensor =
                Tensor::from_storage(s.storage, py_shape(a[2], "tensor size"),
                                     py_shape(a[3], "tensor stride"), s.dtype, a[1].as_int());
            t.requires_grad = a[4].as_bool();
            t.location = s.location;
            return PyValue::tensor(std::move(t));
        }
        if (qual == "torch._utils._rebuild_parameter" ||
            qual == "torch._utils._rebuild_parameter_with_state") {
            MT_CHECK(a.size() >= 2, qual, " needs at least 2 arguments, got ", a.size());
            if (a.size() > 3) {
                const PyValue& state = a[3];
                MT_CHECK(state.is_none() ||
                             (state.kind() == PyKind::dict && state.dict_ref().items.empty()),
                         qual, ": parameters with extra Python state are not supported");
            }
            PyTensor t = a[0].tensor_ref();
            t.requires_grad = a[1].as_bool();
            t.parameter = true;
            return PyValue::tensor(std::move(t));
        }
        if (qual == "collections.OrderedDict") {
            PyValue d = PyValue::dict(true);
            if (!a.empty()) {
                for (const PyValue& kv : a[0].items()) {
                    MT_CHECK((kv.kind() == PyKind::tuple || kv.kind() == PyKind::list) &&
                                 kv.items().size() == 2,
                             "collections.OrderedDict items must be (key, value) pairs, not ",
                             short_repr(kv));
                    d.dict_ref().set(kv.items()[0], kv.items()[1]);
                }
            }
            return d;
        }
        if (qual == "_codecs.encode") {
            MT_CHECK(a.size() == 2, "_codecs.encode needs 2 arguments, got ", a.size());
            const std::string& enc = a[1].as_string();
            if (enc == "latin1" || enc == "latin-1")
                return PyValue::bytes(latin1_bytes(a[0].as_string()));
            MT_CHECK(enc == "utf-8" || enc == "utf8", "_codecs.encode with unsupported encoding ",
                     enc);
            return PyValue::bytes(a[0].as_string());
        }
        if (is_builtins(g.module) && g.name == "bytes" && a.empty()) return PyValue::bytes("");
        if (is_builtins(g.module) && (g.name == "set" || g.name == "frozenset")) {
            return PyValue::set(a.empty() ? std::vector<PyValue>{} : a[0].items());
        }
    }
    PyObject o;
    const PyObject& c = callable.object_ref();
    o.module = c.module;
    o.name = c.name;
    o.make = PyObject::Make::reduce;
    o.args = args;
    return PyValue::object(std::move(o));
}

const char* opcode_name(uint8_t op) {
    switch (op) {
        case '(':
            return "MARK";
        case '.':
            return "STOP";
        case '0':
            return "POP";
        case '1':
            return "POP_MARK";
        case '2':
            return "DUP";
        case 'F':
            return "FLOAT";
        case 'I':
            return "INT";
        case 'J':
            return "BININT";
        case 'K':
            return "BININT1";
        case 'L':
            return "LONG";
        case 'M':
            return "BININT2";
        case 'N':
            return "NONE";
        case 'P':
            return "PERSID";
        case 'Q':
            return "BINPERSID";
        case 'R':
            return "REDUCE";
        case 'T':
            return "BINSTRING";
        case 'U':
            return "SHORT_BINSTRING";
        case 'X':
            return "BINUNICODE";
        case 'a':
            return "APPEND";
        case 'b':
            return "BUILD";
        case 'c':
            return "GLOBAL";
        case 'd':
            return "DICT";
        case '}':
            return "EMPTY_DICT";
        case 'e':
            return "APPENDS";
        case 'g':
            return "GET";
        case 'h':
            return "BINGET";
        case 'j':
            return "LONG_BINGET";
        case 'l':
            return "LIST";
        case ']':
            return "EMPTY_LIST";
        case 'p':
            return "PUT";
        case 'q':
            return "BINPUT";
        case 'r':
            return "LONG_BINPUT";
        case 's':
            return "SETITEM";
        case 't':
            return "TUPLE";
        case ')':
            return "EMPTY_TUPLE";
        case 'u':
            return "SETITEMS";
        case 'G':
            return "BINFLOAT";
        case 0x80:
            return "PROTO";
        case 0x81:
            return "NEWOBJ";
        case 0x85:
            return "TUPLE1";
        case 0x86:
            return "TUPLE2";
        case 0x87:
            return "TUPLE3";
        case 0x88:
            return "NEWTRUE";
        case 0x89:
            return "NEWFALSE";
        case 0x8a:
            return "LONG1";
        case 0x8b:
            return "LONG4";
        case 'B':
            return "BINBYTES";
        case 'C':
            return "SHORT_BINBYTES";
        case 0x8c:
            return "SHORT_BINUNICODE";
        case 0x8d:
            return "BINUNICODE8";
        case 0x8e:
            return "BINBYTES8";
        case 0x8f:
            return "EMPTY_SET";
        case 0x90:
            return "ADDITEMS";
        case 0x91:
            return "FROZENSET";
        case 0x92:
            return "NEWOBJ_EX";
        case 0x93:
            return "STACK_GLOBAL";
        case 0x94:
            return "MEMOIZE";
        case 0x95:
            return "FRAME";
        case 0x96:
            return "BYTEARRAY8";
        default:
            return nullptr;
    }
}

// How deep values may nest: far beyond any checkpoint (a state dict is a few levels), low enough
// that walking or destroying them recursively cannot overflow the stack.
constexpr int kMaxDepth = 1000;

// Calls f on each value `v` holds directly (none for scalars, storages and tensors).
template <class F>
void for_each_child(PyValue& v, F&& f) {
    switch (v.kind()) {
        case PyKind::list:
        case PyKind::tuple:
        case PyKind::set:
            for (PyValue& c : v.items()) f(c);
            break;
        case PyKind::dict:
            for (auto& [k, x] : v.dict_ref().items) {
                f(k);
                f(x);
            }
            break;
        case PyKind::object: {
            PyObject& o = v.object_ref();
            f(o.args);
            f(o.state);
            for (PyValue& c : o.list_items) f(c);
            for (auto& [k, x] : o.dict_items) {
                f(k);
                f(x);
            }
            break;
        }
        default:
            break;
    }
}

// Releases values without recursion: however deep or cyclic (shared_ptr cycles would leak),
// each container gives up its children to a work list before it goes.
void dismantle(std::vector<PyValue> work) {
    while (!work.empty()) {
        PyValue v = std::move(work.back());
        work.pop_back();
        for_each_child(v, [&](PyValue& c) {
            if (c.identity()) work.push_back(std::exchange(c, PyValue()));
        });
    }
}

// The value must nest at most kMaxDepth levels and contain no reference to itself (memo
// entries make both possible in a few bytes); shared values (a DAG) are walked once.
class StructureCheck {
  public:
    // Empty when the value is fine, else what is wrong.
    std::string operator()(PyValue& v, int depth = 0) {
        const void* id = v.identity();
        if (!id || done_.count(id)) return {};
        if (depth > kMaxDepth) return mt::str("values nested deeper than ", kMaxDepth, " levels");
        if (!open_.insert(id).second) return "a value that contains itself (a reference cycle)";
        std::string why;
        for_each_child(v, [&](PyValue& c) {
            if (why.empty()) why = (*this)(c, depth + 1);
        });
        open_.erase(id);
        done_.insert(id);
        return why;
    }
    // Whether a walk reached the value.
    bool reached(const void* id) const { return done_.count(id) != 0; }

  private:
    std::unordered_set<const void*> open_, done_;
};

// The memo stores a pickle's opcodes read back (GET, BINGET, LONG_BINGET): by store, in order
// (PUT, BINPUT, LONG_BINPUT, MEMOIZE), the memo index of each one some opcode fetches. A store
// never fetched needs no memo entry, and holding every value the memo names would keep all of a
// read's values alive to the end. nullopt when the opcodes cannot be walked (the read reports
// why, keeping every store).
std::optional<std::unordered_map<uint64_t, uint64_t>> fetched_stores(std::string_view data) {
    std::unordered_map<uint64_t, uint64_t> fetched;     // store -> memo index
    std::vector<uint64_t> latest;                       // memo index -> its latest store
    std::unordered_map<uint64_t, uint64_t> latest_far;  // the same past a gap in the indices
    uint64_t stores = 0, memo_size = 0;  // memo_size: len(memo), where MEMOIZE stores
    size_t pos = 0;
    auto take = [&](uint64_t n) -> bool {
        if (n > data.size() - pos) return false;
        pos += size_t(n);
        return true;
    };
    auto number = [&](int bytes, uint64_t& v) -> bool {
        if (uint64_t(bytes) > data.size() - pos) return false;
        v = 0;
        for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | uint8_t(data[pos + size_t(i)]);
        pos += size_t(bytes);
        return true;
    };
    auto line = [&](std::string_view& text) -> bool {
        const size_t end = data.find('\n', pos);
        if (end == std::string_view::npos) return false;
        text = data.substr(pos, end - pos);
        pos = end + 1;
        return true;
    };
    auto decimal = [&](uint64_t& v) -> bool {
        std::string_view text;
        if (!line(text) || text.empty() || text.size() > 18) return false;
        v = 0;
        for (char c : text) {
            if (c < '0' || c > '9') return false;
            v = v * 10 + uint64_t(c - '0');
        }
        return true;
    };
    auto store = [&](uint64_t index) {
        const uint64_t seq = stores++;
        bool fresh;
        if (index < latest.size()) {
            fresh = false;
            latest[index] = seq;
        } else if (index == latest.size() && index < (uint64_t(1) << 32)) {
            fresh = !latest_far.count(index);
            latest.push_back(seq);
        } else {
            fresh = !latest_far.count(index);
            latest_far[index] = seq;
        }
        if (fresh) ++memo_size;
    };
    auto fetch = [&](uint64_t index) {
        uint64_t seq = UINT64_MAX;
        if (index < latest.size()) seq = latest[index];
        if (auto it = latest_far.find(index); it != latest_far.end())
            seq = seq == UINT64_MAX ? it->second : std::max(seq, it->second);
        if (seq != UINT64_MAX) fetched[seq] = index;
    };
    while (pos < data.size()) {
        const uint8_t op = uint8_t(data[pos++]);
        uint64_t n = 0;
        std::string_view text;
        bool ok = true;
        switch (op) {
            case '.':
                return fetched;
            case '(':
            case '0':
            case '1':
            case '2':
            case 'N':
            case 0x88:
            case 0x89:
            case ']':
            case 'l':
            case ')':
            case 't':
            case 0x85:
            case 0x86:
            case 0x87:
            case '}':
            case 'd':
            case 0x8f:
            case 0x91:
            case 'a':
            case 'e':
            case 0x90:
            case 's':
            case 'u':
            case 0x93:
            case 'R':
            case 0x81:
            case 0x92:
            case 'b':
            case 'Q':
                break;
            case 0x80:
            case 'K':
                ok = take(1);
                break;
            case 'M':
                ok = take(2);
                break;
            case 'J':
                ok = take(4);
                break;
            case 'G':
            case 0x95:
                ok = take(8);
                break;
            case 'I':
            case 'L':
            case 'F':
            case 'P':
                ok = line(text);
                break;
            case 'c':
                ok = line(text) && line(text);
                break;
            case 0x8a:
            case 0x8c:
            case 'U':
            case 'C':
                ok = number(1, n) && take(n);
                break;
            case 0x8b:
            case 'X':
            case 'T':
            case 'B':
                ok = number(4, n) && n < (uint64_t(1) << 31) && take(n);
                break;
            case 0x8d:
            case 0x8e:
            case 0x96:
                ok = number(8, n) && take(n);
                break;
            case 'p':
            case 'g':
                ok = decimal(n);
                break;
            case 'q':
            case 'h':
                ok = number(1, n);
                break;
            case 'r':
            case 'j':
                ok = number(4, n);
                break;
            case 0x94:
                n = memo_size;
                break;
            default:
                ok = false;
        }
        if (!ok) return std::nullopt;
        if (op == 'p' || op == 'q' || op == 'r' || op == 0x94) store(n);
        if (op == 'g' || op == 'h' || op == 'j') fetch(n);
    }
    return std::nullopt;  // no STOP
}

class Unpickler {
  public:
    Unpickler(std::string_view data, const std::string& context, const PersistentLoad& load,
              const ItemFilter& take_item)
        : data_(data),
          context_(context),
          load_(load),
          take_item_(take_item),
          fetched_(fetched_stores(data)) {}

    // What any failure leaves (the stack, the memo, the value) goes without recursion. On
    // success the values the result does not hold (popped, or replaced in the memo) lose their
    // children first: a cycle among them (a list appended into itself, then dropped) would
    // otherwise never be freed.
    PyValue run() {
        PyValue root;
        try {
            root = run_opcodes();
            StructureCheck check;
            const std::string why = check(root);
            MT_CHECK(why.empty(), context_, ": ", why);
            for (PyValue& v : created_)
                if (!check.reached(v.identity()))
                    for_each_child(v, [](PyValue& c) { c = PyValue(); });
            return root;
        } catch (...) {
            std::vector<PyValue> rest = std::move(stack_);
            for (auto& [index, v] : memo_) rest.push_back(std::move(v));
            memo_.clear();
            for (PyValue& v : created_) rest.push_back(std::move(v));
            created_.clear();
            rest.push_back(std::move(root));
            dismantle(std::move(rest));
            throw;
        }
    }

  private:
    PyValue run_opcodes() {
        for (;;) {
            MT_CHECK(pos_ < data_.size(), context_, ": truncated at byte ", pos_,
                     ": no STOP opcode");
            op_pos_ = pos_;
            op_ = static_cast<uint8_t>(data_[pos_++]);
            if (op_ == '.') {
                MT_CHECK(stack_.size() > base(), context_, ": byte ", op_pos_,
                         ": STOP on an empty stack");
                return stack_.back();
            }
            try {
                step();
                keep_created();
            } catch (const Error& e) {
                const std::string what = e.what();
                if (what.rfind(context_, 0) == 0) throw;
                fail(what);
            }
        }
    }

    // Holds every value with children the opcodes make (each opcode pushes at most one), so
    // that run() can reach the ones the result drops; their children, held here too, then go
    // without recursive destruction.
    void keep_created() {
        if (stack_.empty()) return;
        const void* id = stack_.back().identity();
        if (id && created_ids_.insert(id).second) created_.push_back(stack_.back());
        if (created_.size() >= prune_at_) prune_created();
    }
    // Lets go of the values nothing holds any more but created_ (popped, or taken by the item
    // filter): each gives up its children (values created_ holds too, let go by a later pass)
    // before it goes, so that none is destroyed recursively.
    void prune_created() {
        size_t kept = 0;
        for (PyValue& v : created_) {
            if (v.use_count() == 1) {
                created_ids_.erase(v.identity());
                for_each_child(v, [](PyValue& c) { c = PyValue(); });
                v = PyValue();
                continue;
            }
            if (&created_[kept] != &v) created_[kept] = std::move(v);
            ++kept;
        }
        created_.resize(kept);
        prune_at_ = std::max<size_t>(2 * kept, kPruneFirst);
    }

    [[noreturn]] void fail(const std::string& what) const {
        const char* name = opcode_name(op_);
        MT_FAIL(context_, ": byte ", op_pos_, " (", name ? name : "?", "): ", what);
    }
    std::string_view take(uint64_t n) {
        if (n > data_.size() - pos_) {
            const char* name = opcode_name(op_);
            MT_FAIL(context_, ": truncated at byte ", data_.size(), " inside ", name ? name : "?",
                    " (needs ", n, " bytes at byte ", pos_, ")");
        }
        std::string_view s = data_.substr(pos_, n);
        pos_ += n;
        return s;
    }
    template <class T>
    T le() {
        T v;
        std::memcpy(&v, take(sizeof(T)).data(), sizeof(T));
        return v;
    }
    std::string line() {
        const size_t end = data_.find('\n', pos_);
        if (end == std::string_view::npos) take(data_.size() - pos_ + 1);  // throws "truncated"
        std::string s(data_.substr(pos_, end - pos_));
        pos_ = end + 1;
        return s;
    }
    size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
    PyValue pop() {
        if (stack_.size() <= base()) fail("stack underflow");
        PyValue v = std::move(stack_.back());
        stack_.pop_back();
        return v;
    }
    PyValue& top() {
        if (stack_.size() <= base()) fail("stack underflow");
        return stack_.back();
    }
    std::vector<PyValue> pop_mark() {
        if (marks_.empty()) fail("no MARK on the stack");
        const size_t m = marks_.back();
        marks_.pop_back();
        std::vector<PyValue> items(std::make_move_iterator(stack_.begin() + m),
                                   std::make_move_iterator(stack_.end()));
        stack_.resize(m);
        return items;
    }
    void put(uint64_t index) {
        const PyValue& value = top();
        const uint64_t store = stores_++;
        if (fetched_) {  // only what is fetched later
            auto it = fetched_->find(store);
            if (it == fetched_->end()) return;
            index = it->second;
        }
        memo_[index] = value;
    }
    void get(uint64_t index) {
        auto it = memo_.find(index);
        if (it == memo_.end()) fail(mt::str("memo index ", index, " was never stored"));
        stack_.push_back(it->second);
    }
    void push_int_text(const std::string& text) {
        std::string t = text;
        if (!t.empty() && t.back() == 'L') t.pop_back();
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(t.c_str(), &end, 10);
        if (t.empty() || *end != '\0' || errno == ERANGE) fail("bad integer text '" + text + "'");
        stack_.push_back(PyValue::integer(v));
    }
    void append(PyValue& target, std::vector<PyValue> items) {
        if (target.kind() == PyKind::list || target.kind() == PyKind::set) {
            auto& v = target.items();
            v.insert(v.end(), std::make_move_iterator(items.begin()),
                     std::make_move_iterator(items.end()));
        } else if (target.kind() == PyKind::object) {
            auto& v = target.object_ref().list_items;
            v.insert(v.end(), std::make_move_iterator(items.begin()),
                     std::make_move_iterator(items.end()));
        } else {
            fail(mt::str("cannot append to a ", py_kind_name(target.kind())));
        }
    }
    // The item filter's answer for a pair a dict receives, the pair checked first.
    bool taken(PyValue& key, PyValue& value) {
        if (!take_item_) return false;
        StructureCheck check;
        std::string why = check(key);
        if (why.empty()) why = check(value);
        if (!why.empty()) fail(why);
        return take_item_(key, value);
    }
    void set_items(PyValue& target, std::vector<PyValue> kv) {
        if (kv.size() % 2) fail("odd number of values for SETITEMS");
        for (size_t i = 0; i < kv.size(); i += 2) {
            if (target.kind() == PyKind::dict && taken(kv[i], kv[i + 1])) continue;
            if (target.kind() == PyKind::dict) {
                target.dict_ref().set(std::move(kv[i]), std::move(kv[i + 1]));
            } else if (target.kind() == PyKind::object) {
                target.object_ref().dict_items.emplace_back(std::move(kv[i]), std::move(kv[i + 1]));
            } else {
                fail(mt::str("cannot set items on a ", py_kind_name(target.kind())));
            }
        }
    }
    void push_global(std::string module, std::string name) {
        stack_.push_back(PyValue::global(std::move(module), std::move(name)));
    }

    void step() {
        switch (op_) {
            case 0x80:
                take(1);
                break;  // PROTO: any version is read the same way
            case 0x95:
                take(8);
                break;  // FRAME: framing only groups opcodes
            case '(':
                marks_.push_back(stack_.size());
                break;
            case '0':
                pop();
                break;
            case '1':
                pop_mark();
                break;
            case '2':
                stack_.push_back(top());
                break;
            case 'N':
                stack_.push_back(PyValue());
                break;
            case 0x88:
                stack_.push_back(PyValue::boolean(true));
                break;
            case 0x89:
                stack_.push_back(PyValue::boolean(false));
                break;
            case 'I': {
                const std::string t = line();
                if (t == "01" || t == "00")
                    stack_.push_back(PyValue::boolean(t == "01"));
                else
                    push_int_text(t);
                break;
            }
            case 'L':
                push_int_text(line());
                break;
            case 'J':
                stack_.push_back(PyValue::integer(le<int32_t>()));
                break;
            case 'K':
                stack_.push_back(PyValue::integer(le<uint8_t>()));
                break;
            case 'M':
                stack_.push_back(PyValue::integer(le<uint16_t>()));
                break;
            case 0x8a:
                stack_.push_back(long_value(take(le<uint8_t>())));
                break;
            case 0x8b: {
                const int32_t n = le<int32_t>();
                if (n < 0) fail("negative LONG4 length");
                stack_.push_back(long_value(take(static_cast<uint64_t>(n))));
                break;
            }
            case 'F': {
                const std::string t = line();
                char* end = nullptr;
                const double v = std::strtod(t.c_str(), &end);
                if (t.empty() || *end != '\0') fail("bad float text '" + t + "'");
                stack_.push_back(PyValue::real(v));
                break;
            }
            case 'G': {  // big-endian IEEE double
                std::string_view b = take(8);
                uint64_t bits = 0;
                for (char ch : b) bits = (bits << 8) | static_cast<uint8_t>(ch);
                double v;
                std::memcpy(&v, &bits, 8);
                stack_.push_back(PyValue::real(v));
                break;
            }
            case 'X':
                stack_.push_back(PyValue::string(std::string(take(le<uint32_t>()))));
                break;
            case 0x8c:
                stack_.push_back(PyValue::string(std::string(take(le<uint8_t>()))));
                break;
            case 0x8d:
                stack_.push_back(PyValue::string(std::string(take(le<uint64_t>()))));
                break;
            // Python 2 str: torch.load decodes it as UTF-8 text.
            case 'T': {
                const int32_t n = le<int32_t>();
                if (n < 0) fail("negative BINSTRING length");
                stack_.push_back(PyValue::string(std::string(take(static_cast<uint64_t>(n)))));
                break;
            }
            case 'U':
                stack_.push_back(PyValue::string(std::string(take(le<uint8_t>()))));
                break;
            case 'B':
                stack_.push_back(PyValue::bytes(std::string(take(le<uint32_t>()))));
                break;
            case 'C':
                stack_.push_back(PyValue::bytes(std::string(take(le<uint8_t>()))));
                break;
            case 0x8e:
            case 0x96:
                stack_.push_back(PyValue::bytes(std::string(take(le<uint64_t>()))));
                break;
            case ']':
                stack_.push_back(PyValue::list());
                break;
            case 'l':
                stack_.push_back(PyValue::list(pop_mark()));
                break;
            case ')':
                stack_.push_back(PyValue::tuple());
                break;
            case 't':
                stack_.push_back(PyValue::tuple(pop_mark()));
                break;
            case 0x85:
            case 0x86:
            case 0x87: {
                const size_t n = op_ - 0x84u;
                if (stack_.size() < base() + n) fail("stack underflow");
                std::vector<PyValue> items(std::make_move_iterator(stack_.end() - n),
                                           std::make_move_iterator(stack_.end()));
                stack_.resize(stack_.size() - n);
                stack_.push_back(PyValue::tuple(std::move(items)));
                break;
            }
            case '}':
                stack_.push_back(PyValue::dict());
                break;
            case 'd': {
                PyValue d = PyValue::dict();
                set_items(d, pop_mark());
                stack_.push_back(std::move(d));
                break;
            }
            case 0x8f:
                stack_.push_back(PyValue::set());
                break;
            case 0x91:
                stack_.push_back(PyValue::set(pop_mark()));
                break;
            case 'a': {
                PyValue v = pop();
                append(top(), {std::move(v)});
                break;
            }
            case 'e':
            case 0x90: {
                std::vector<PyValue> items = pop_mark();
                append(top(), std::move(items));
                break;
            }
            case 's': {
                PyValue v = pop();
                PyValue k = pop();
                set_items(top(), {std::move(k), std::move(v)});
                break;
            }
            case 'u': {
                std::vector<PyValue> kv = pop_mark();
                set_items(top(), std::move(kv));
                break;
            }
            case 'c': {
                std::string module = line();
                std::string name = line();
                push_global(std::move(module), std::move(name));
                break;
            }
            case 0x93: {
                PyValue name = pop();
                PyValue module = pop();
                push_global(module.as_string(), name.as_string());
                break;
            }
            case 'R': {
                PyValue args = pop();
                PyValue callable = pop();
                if (callable.kind() != PyKind::global)
                    fail("REDUCE on a " + std::string(py_kind_name(callable.kind())));
                stack_.push_back(reduce(callable, args));
                break;
            }
            case 0x81:
            case 0x92: {
                PyValue kwargs;
                if (op_ == 0x92) kwargs = pop();
                PyValue args = pop();
                PyValue cls = pop();
                if (cls.kind() != PyKind::global)
                    fail("NEWOBJ on a " + std::string(py_kind_name(cls.kind())));
                if (args.kind() != PyKind::tuple) fail("NEWOBJ arguments must be a tuple");
                if (!kwargs.is_none() &&
                    !(kwargs.kind() == PyKind::dict && kwargs.dict_ref().items.empty()))
                    fail("NEWOBJ_EX with keyword arguments is not supported");
                PyObject o;
                o.module = cls.object_ref().module;
                o.name = cls.object_ref().name;
                o.make = PyObject::Make::newobj;
                o.args = std::move(args);
                stack_.push_back(PyValue::object(std::move(o)));
                break;
            }
            case 'b': {
                PyValue state = pop();
                PyValue& target = top();
                // A state_dict (OrderedDict) carries torch's module versions as an instance
                // attribute, `_metadata`; the mapping itself is complete without it.
                if (target.kind() == PyKind::dict && state.kind() == PyKind::dict) break;
                if (target.kind() != PyKind::object)
                    fail(mt::str("BUILD on a ", py_kind_name(target.kind()), " is not supported"));
                target.object_ref().state = std::move(state);
                break;
            }
            case 'p':
                put(static_cast<uint64_t>(std::strtoull(line().c_str(), nullptr, 10)));
                break;
            case 'q':
                put(le<uint8_t>());
                break;
            case 'r':
                put(le<uint32_t>());
                break;
            case 0x94:
                put(memo_.size());
                break;
            case 'g':
                get(static_cast<uint64_t>(std::strtoull(line().c_str(), nullptr, 10)));
                break;
            case 'h':
                get(le<uint8_t>());
                break;
            case 'j':
                get(le<uint32_t>());
                break;
            case 'P':
            case 'Q': {
                PyValue pid = op_ == 'P' ? PyValue::string(line()) : pop();
                if (!load_) fail("persistent id without a persistent loader");
                stack_.push_back(load_(pid));
                break;
            }
            default:
                fail(mt::str("unsupported or invalid opcode 0x", "0123456789abcdef"[op_ >> 4],
                             "0123456789abcdef"[op_ & 15]));
        }
    }

    // created_'s size at which prune_created runs first (then at twice what it keeps).
    static constexpr size_t kPruneFirst = size_t(1) << 16;

    std::string_view data_;
    const std::string& context_;
    const PersistentLoad& load_;
    const ItemFilter& take_item_;
    const std::optional<std::unordered_map<uint64_t, uint64_t>> fetched_;
    uint64_t stores_ = 0;  // memo stores so far
    size_t prune_at_ = kPruneFirst;
    size_t pos_ = 0, op_pos_ = 0;
    uint8_t op_ = 0;
    std::vector<PyValue> stack_;
    std::vector<size_t> marks_;
    std::unordered_map<uint64_t, PyValue> memo_;
    std::vector<PyValue> created_;
    std::unordered_set<const void*> created_ids_;
};

}  // namespace

PyValue read_pickle(std::string_view data, const std::string& context,
                    const PersistentLoad& persistent_load, const ItemFilter& take_item) {
    return Unpickler(data, context, persistent_load, take_item).run();
}

}  // namespace mt::io
