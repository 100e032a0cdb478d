// PyValue: the generic value tree a pickle holds (None, numbers, strings, containers, tensors, and
// uninterpreted class instances), read from and written to torch.save files.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "mt/api.h"
#include "mt/dtype.h"
#include "mt/tensor.h"

namespace mt::io {

enum class PyKind : uint8_t {
    none,
    boolean,
    integer,      // fits int64
    big_integer,  // beyond int64, kept as decimal text
    real,
    string,  // UTF-8
    bytes,
    list,
    tuple,
    set,
    dict,     // dict or collections.OrderedDict (PyDict::ordered)
    global,   // a bare GLOBAL reference: a class, a function, or a value like torch.bfloat16
    object,   // a class instance built by REDUCE or NEWOBJ (+ BUILD), not interpreted
    storage,  // a torch storage pickled on its own
    tensor,
};

MT_API std::string_view py_kind_name(PyKind kind);

class PyValue;
struct PyDict;
struct PyObject;
struct PyTensor;
struct PyStorage;

class MT_API PyValue {
  public:
    PyValue() = default;  // None
    static PyValue boolean(bool v);
    static PyValue integer(int64_t v);
    static PyValue big_integer(std::string decimal);
    static PyValue real(double v);
    static PyValue string(std::string utf8);
    static PyValue bytes(std::string data);
    static PyValue list(std::vector<PyValue> items = {});
    static PyValue tuple(std::vector<PyValue> items = {});
    static PyValue set(std::vector<PyValue> items = {});
    static PyValue dict(bool ordered = false);
    static PyValue global(std::string module, std::string name);
    static PyValue object(PyObject object);
    static PyValue storage(PyStorage storage);
    static PyValue tensor(PyTensor tensor);
    static PyValue tensor(Tensor tensor);  // plain CPU tensor, requires_grad false

    PyKind kind() const { return kind_; }
    bool is_none() const { return kind_ == PyKind::none; }

    // Typed access; each throws mt::Error naming the expected and the actual kind.
    bool as_bool() const;
    int64_t as_int() const;
    double as_double() const;  // a real, or an integer converted
    const std::string& as_string() const;
    const std::string& as_bytes() const;
    const std::string& as_big_integer() const;
    std::vector<PyValue>& items();  // list, tuple or set elements
    const std::vector<PyValue>& items() const;
    PyDict& dict_ref();
    const PyDict& dict_ref() const;
    PyObject& object_ref();  // global or object
    const PyObject& object_ref() const;
    const PyStorage& storage_ref() const;
    const PyTensor& tensor_ref() const;
    PyTensor& tensor_ref();
    const Tensor& as_tensor() const;

    // Dict lookup by string key, or an object's attribute (its BUILD state dict, as for
    // argparse.Namespace). operator[] throws naming the key; find returns null.
    const PyValue* find(std::string_view key) const;
    const PyValue& operator[](std::string_view key) const;

    // True when both refer to the same container/object (Python `is`); used for memo sharing.
    const void* identity() const;
    // How many values share this one's payload (identity()); 0 for a scalar or string.
    long use_count() const;

  private:
    using Payload = std::variant<std::monostate, bool, int64_t, double, std::string,
                                 std::shared_ptr<std::vector<PyValue>>, std::shared_ptr<PyDict>,
                                 std::shared_ptr<PyObject>, std::shared_ptr<PyStorage>,
                                 std::shared_ptr<PyTensor>>;
    PyValue(PyKind kind, Payload payload) : kind_(kind), payload_(std::move(payload)) {}
    void expect(PyKind kind) const;

    PyKind kind_ = PyKind::none;
    Payload payload_;
};

// Insertion-ordered mapping with Python's replace-on-equal-key semantics.
struct MT_API PyDict {
    std::vector<std::pair<PyValue, PyValue>> items;
    bool ordered = false;  // collections.OrderedDict rather than dict

    void set(PyValue key, PyValue value);
    void set(std::string_view key, PyValue value) {
        set(PyValue::string(std::string(key)), std::move(value));
    }
    const PyValue* find(std::string_view key) const;

  private:
    std::unordered_map<std::string, size_t> string_index_;
};

// How an object was made: REDUCE callable(*args) or NEWOBJ cls.__new__(cls, *args); BUILD
// then sets `state`; APPENDS/SETITEMS on it land in list_items/dict_items.
struct PyObject {
    enum class Make : uint8_t { global, reduce, newobj };
    std::string module, name;
    Make make = Make::global;
    PyValue args;   // a tuple for reduce/newobj
    PyValue state;  // None unless BUILD ran
    std::vector<PyValue> list_items;
    std::vector<std::pair<PyValue, PyValue>> dict_items;
};

// A storage record: its bytes (shared with every tensor viewing it) and element type.
struct PyStorage {
    std::shared_ptr<Storage> storage;
    DType dtype = DType::f32;
    int64_t numel = 0;
    std::string location = "cpu";  // torch's location tag, e.g. "cuda:0"
};

struct PyTensor {
    Tensor tensor;  // from a file: a view of the mapped file, read-only unless copied
    bool requires_grad = false;
    bool parameter = false;  // torch.nn.Parameter
    std::string location = "cpu";
};

// torch.<dtype> globals (torch.bfloat16, torch.float32, ...) and mt dtypes.
MT_API std::optional<DType> torch_dtype_of(const PyValue& value);
MT_API PyValue torch_dtype_global(DType dtype);

// A one-line rendering (Python-like, tensors with their values) used by tests and diagnostics.
MT_API std::string repr(const PyValue& value);
// repr cut to at most `max_chars` bytes (ending in "..." where cut, at a character boundary),
// for error messages: the walk stops once that much is written, so a hostile value (a memo DAG
// that expands exponentially) costs no more than its first `max_chars`.
MT_API std::string short_repr(const PyValue& value, size_t max_chars = 200);

// A tensor shape as torch pickles it: a tuple (or list) of ints, or a torch.Size, which arrives
// as an object whose first argument is that tuple. mt::Error naming `what` otherwise.
MT_API Shape py_shape(const PyValue& v, std::string_view what);

}  // namespace mt::io
