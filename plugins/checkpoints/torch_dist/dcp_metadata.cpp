#include "dcp_metadata.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "mt/error.h"
#include "mt/io/pickle_reader.h"
#include "mt/io/pickle_writer.h"
#include "mt/io/py_value.h"

namespace mt::plugins::torch_dist {

namespace {

using io::PyKind;
using io::PyObject;
using io::PyValue;

constexpr const char* kMetadataModule = "torch.distributed.checkpoint.metadata";
constexpr const char* kFilesystemModule = "torch.distributed.checkpoint.filesystem";

// ---- reading ----

bool is_class(const PyValue& v, std::string_view name) {
    return v.kind() == PyKind::object && v.object_ref().name == name;
}

const PyValue& attr(const PyValue& obj, std::string_view name, std::string_view what) {
    const PyValue* v = obj.find(name);
    MT_CHECK(v != nullptr, what, " has no '", name, "'");
    return *v;
}

// TensorProperties keeps (dtype, layout, requires_grad, memory format, pin_memory[, strides])
// through __getstate__; a dataclass dict is accepted as well.
DType dtype_of(const PyValue& properties, const std::string& fqn) {
    MT_CHECK(properties.kind() == PyKind::object, "tensor ", fqn, ": properties are a Python ",
             io::py_kind_name(properties.kind()));
    const PyValue& state = properties.object_ref().state;
    const PyValue* dtype = nullptr;
    if (state.kind() == PyKind::tuple && !state.items().empty())
        dtype = &state.items()[0];
    else if (state.kind() == PyKind::dict)
        dtype = state.find("dtype");
    MT_CHECK(dtype != nullptr, "tensor ", fqn, ": TensorProperties has no dtype");
    auto d = io::torch_dtype_of(*dtype);
    MT_CHECK(d.has_value(), "tensor ", fqn, " has dtype ", io::short_repr(*dtype),
             ", which is not supported");
    return *d;
}

std::string location_key(const std::string& fqn, const Shape& offsets) {
    return fqn + '\0' + shape_str(offsets);
}

// A storage_data item: where the chunk of `index` (MetadataIndex) lies (_StorageInfo), under
// location_key.
std::pair<std::string, DcpLocation> storage_item(const PyValue& index, const PyValue& info) {
    MT_CHECK(is_class(index, "MetadataIndex") && is_class(info, "_StorageInfo"),
             "storage_data maps ", io::short_repr(index, 80), " to ", io::short_repr(info, 80),
             ", not MetadataIndex to _StorageInfo");
    const std::string& fqn = attr(index, "fqn", "MetadataIndex").as_string();
    const PyValue* offset = index.find("offset");
    Shape offsets;
    if (offset && !offset->is_none()) offsets = io::py_shape(*offset, "MetadataIndex.offset");
    if (const PyValue* t = info.find("transform_descriptors"))
        MT_CHECK(t->is_none() || (t->kind() == PyKind::list && t->items().empty()), "chunk of ",
                 fqn, " is stored through transforms ", io::short_repr(*t),
                 " (e.g. compression), which are not supported");
    DcpLocation loc;
    loc.relative_path = attr(info, "relative_path", "_StorageInfo").as_string();
    const int64_t off = attr(info, "offset", "_StorageInfo").as_int();
    const int64_t len = attr(info, "length", "_StorageInfo").as_int();
    MT_CHECK(off >= 0 && len >= 0, "chunk of ", fqn, " has offset ", off, " and length ", len);
    MT_CHECK(loc.relative_path.find('/') == std::string::npos && loc.relative_path != "..",
             "chunk of ", fqn, " lies outside the checkpoint: ", loc.relative_path);
    loc.offset = uint64_t(off);
    loc.length = uint64_t(len);
    return {location_key(fqn, offsets), std::move(loc)};
}

// A state_dict_metadata item: the entry `key` describes (TensorStorageMetadata or
// BytesStorageMetadata), its chunks not located yet.
DcpEntry storage_metadata_item(const PyValue& key, const PyValue& meta) {
    DcpEntry e;
    MT_CHECK(key.kind() == PyKind::string, "state_dict_metadata has the key ",
             io::short_repr(key, 80), ", not a string");
    e.fqn = key.as_string();
    if (is_class(meta, "BytesStorageMetadata")) {
        e.bytes = true;
        e.chunks.push_back({});
        return e;
    }
    MT_CHECK(is_class(meta, "TensorStorageMetadata"), e.fqn, " is described by ",
             io::short_repr(meta, 80));
    e.dtype = dtype_of(attr(meta, "properties", e.fqn), e.fqn);
    e.size = io::py_shape(attr(meta, "size", e.fqn), e.fqn + " size");
    const PyValue& chunks = attr(meta, "chunks", e.fqn);
    MT_CHECK(chunks.kind() == PyKind::list, e.fqn, ": chunks are not a list");
    for (const PyValue& c : chunks.items()) {
        DcpChunk chunk;
        chunk.offsets = io::py_shape(attr(c, "offsets", e.fqn + " chunk"), e.fqn + " offsets");
        chunk.sizes = io::py_shape(attr(c, "sizes", e.fqn + " chunk"), e.fqn + " sizes");
        MT_CHECK(chunk.offsets.size() == e.size.size() && chunk.sizes.size() == e.size.size(),
                 e.fqn, ": chunk at ", shape_str(chunk.offsets), " of shape ",
                 shape_str(chunk.sizes), " does not match the rank of ", shape_str(e.size));
        for (size_t d = 0; d < e.size.size(); ++d)
            MT_CHECK(chunk.offsets[d] >= 0 && chunk.sizes[d] >= 0 &&
                         chunk.offsets[d] + chunk.sizes[d] <= e.size[d],
                     e.fqn, ": chunk at ", shape_str(chunk.offsets), " of shape ",
                     shape_str(chunk.sizes), " lies outside ", shape_str(e.size));
        e.chunks.push_back(std::move(chunk));
    }
    return e;
}

// The index of a .metadata pickle, read item by item: state_dict_metadata's and storage_data's
// items are taken as the unpickler makes them (a model of tens of thousands of tensors would
// otherwise be held as one PyValue tree of hundreds of MB), the rest read from the tree.
DcpMetadata read_metadata(std::string_view pickle, const std::string& context) {
    DcpMetadata m;
    std::map<std::string, DcpLocation> where;
    const PyValue root =
        io::read_pickle(pickle, context, {}, [&](const PyValue& key, const PyValue& value) {
            if (is_class(value, "TensorStorageMetadata") ||
                is_class(value, "BytesStorageMetadata")) {
                m.entries.push_back(storage_metadata_item(key, value));
                return true;
            }
            if (!is_class(key, "MetadataIndex")) return false;
            auto [at, loc] = storage_item(key, value);
            where[std::move(at)] = std::move(loc);
            return true;
        });
    MT_CHECK(is_class(root, "Metadata"), "the pickle holds ", io::short_repr(root, 80),
             ", not a torch.distributed.checkpoint Metadata");
    const PyValue& sdm = attr(root, "state_dict_metadata", "Metadata");
    const PyValue& storage = attr(root, "storage_data", "Metadata");
    MT_CHECK(sdm.kind() == PyKind::dict && storage.kind() == PyKind::dict,
             "Metadata.state_dict_metadata or storage_data is not a dict");
    MT_CHECK(sdm.dict_ref().items.empty() && storage.dict_ref().items.empty(),
             "Metadata.state_dict_metadata or storage_data holds other than TensorStorageMetadata, "
             "BytesStorageMetadata and MetadataIndex items");
    std::map<std::string, size_t> by_fqn;
    for (DcpEntry& e : m.entries) {
        MT_CHECK(by_fqn.emplace(e.fqn, by_fqn.size()).second, "state_dict_metadata names ", e.fqn,
                 " twice");
        for (DcpChunk& c : e.chunks) {
            auto it = where.find(location_key(e.fqn, c.offsets));
            MT_CHECK(it != where.end(), "no storage_data entry for ", e.fqn, " at offset ",
                     shape_str(c.offsets));
            c.where = it->second;
        }
    }
    // megatron-core's per-tensor data: the original shape of tensors stored flattened.
    if (const PyValue* mcore = root.find("mcore_data"); mcore && mcore->kind() == PyKind::dict)
        for (const auto& [key, data] : mcore->dict_ref().items) {
            if (key.kind() != PyKind::string || data.kind() != PyKind::dict) continue;
            const PyValue* orig = data.find("nd_reformulated_orig_global_shape");
            auto at = by_fqn.find(key.as_string());
            if (!orig || at == by_fqn.end()) continue;
            DcpEntry& e = m.entries[at->second];
            e.flattened_from = io::py_shape(*orig, e.fqn + " nd_reformulated_orig_global_shape");
        }
    return m;
}

// ---- writing ----

PyValue make(const char* module, const char* name, PyObject::Make how, PyValue args,
             PyValue state) {
    PyObject o;
    o.module = module;
    o.name = name;
    o.make = how;
    o.args = std::move(args);
    o.state = std::move(state);
    return PyValue::object(std::move(o));
}

// A dataclass instance as pickle writes it: cls.__new__(cls) then BUILD with its __dict__.
PyValue dataclass(const char* module, const char* name, PyValue fields) {
    return make(module, name, PyObject::Make::newobj, PyValue::tuple(), std::move(fields));
}

PyValue torch_size(const Shape& s) {
    std::vector<PyValue> dims;
    for (int64_t d : s) dims.push_back(PyValue::integer(d));
    return make("torch", "Size", PyObject::Make::reduce,
                PyValue::tuple({PyValue::tuple(std::move(dims))}), PyValue());
}

// The five-field state every PyTorch 2.x TensorProperties.__setstate__ accepts: dtype, strided
// layout, no grad, contiguous memory format (encoding 0), not pinned.
PyValue tensor_properties(DType dtype) {
    PyValue encoding = make(kMetadataModule, "_MEM_FORMAT_ENCODING", PyObject::Make::reduce,
                            PyValue::tuple({PyValue::integer(0)}), PyValue());
    PyValue state =
        PyValue::tuple({io::torch_dtype_global(dtype), PyValue::global("torch", "strided"),
                        PyValue::boolean(false), std::move(encoding), PyValue::boolean(false)});
    return make(kMetadataModule, "TensorProperties", PyObject::Make::newobj, PyValue::tuple(),
                std::move(state));
}

PyValue storage_info(const DcpLocation& loc) {
    PyValue f = PyValue::dict();
    f.dict_ref().set("relative_path", PyValue::string(loc.relative_path));
    f.dict_ref().set("offset", PyValue::integer(int64_t(loc.offset)));
    f.dict_ref().set("length", PyValue::integer(int64_t(loc.length)));
    return dataclass(kFilesystemModule, "_StorageInfo", std::move(f));
}

PyValue metadata_index(const std::string& fqn, const Shape* offsets) {
    PyValue f = PyValue::dict();
    f.dict_ref().set("fqn", PyValue::string(fqn));
    if (offsets) f.dict_ref().set("offset", torch_size(*offsets));
    f.dict_ref().set("index", PyValue());
    return dataclass(kMetadataModule, "MetadataIndex", std::move(f));
}

// state_dict_metadata's value for `e`: TensorStorageMetadata (properties, size, chunks) or
// BytesStorageMetadata.
PyValue storage_metadata(const DcpEntry& e) {
    if (e.bytes) {
        MT_CHECK(e.chunks.size() == 1, "byte object ", e.fqn, " needs one location");
        return dataclass(kMetadataModule, "BytesStorageMetadata", PyValue::dict());
    }
    PyValue chunks = PyValue::list();
    for (const DcpChunk& c : e.chunks) {
        PyValue f = PyValue::dict();
        f.dict_ref().set("offsets", torch_size(c.offsets));
        f.dict_ref().set("sizes", torch_size(c.sizes));
        chunks.items().push_back(dataclass(kMetadataModule, "ChunkStorageMetadata", std::move(f)));
    }
    PyValue f = PyValue::dict();
    f.dict_ref().set("properties", tensor_properties(e.dtype));
    f.dict_ref().set("size", torch_size(e.size));
    f.dict_ref().set("chunks", std::move(chunks));
    return dataclass(kMetadataModule, "TensorStorageMetadata", std::move(f));
}

// mcore_data's value for a tensor: the original shape of one stored flattened, else {}.
PyValue mcore_data(const DcpEntry& e) {
    PyValue data = PyValue::dict();
    if (!e.flattened_from.empty()) {
        PyValue orig = PyValue::tuple();
        for (int64_t d : e.flattened_from) orig.items().push_back(PyValue::integer(d));
        data.dict_ref().set("nd_reformulated_orig_global_shape", std::move(orig));
    }
    return data;
}

// A dict's items as pickle batches them (SETITEMS of up to 1000), each pair made by
// `each(k, emit)` calling emit(key, value) for the k-th source (zero or more pairs each).
template <class Each>
void stream_dict(io::PickleStream& p, size_t count, Each each) {
    constexpr size_t kBatch = 1000;
    p.empty_dict();
    size_t in_batch = 0;
    auto emit = [&](const PyValue& key, const PyValue& value) {
        if (in_batch == 0) p.mark();
        p.save(key);
        p.save(value);
        if (++in_batch == kBatch) {
            p.set_items();
            in_batch = 0;
        }
    };
    for (size_t k = 0; k < count; ++k) each(k, emit);
    if (in_batch > 0) p.set_items();
}

// The Metadata dataclass written entry by entry (the whole index is never one PyValue: a model
// of tens of thousands of tensors would hold hundreds of MB in it).
void write_metadata(std::ostream& out, const DcpMetadata& m) {
    io::PickleStream p(out);
    p.new_object(kMetadataModule, "Metadata");
    p.empty_dict();  // its __dict__
    p.mark();
    const size_t n = m.entries.size();
    p.save(PyValue::string("state_dict_metadata"));
    stream_dict(p, n, [&](size_t k, auto& emit) {
        emit(PyValue::string(m.entries[k].fqn), storage_metadata(m.entries[k]));
    });
    p.save(PyValue::string("planner_data"));
    p.save(PyValue());
    p.save(PyValue::string("storage_data"));
    stream_dict(p, n, [&](size_t k, auto& emit) {
        const DcpEntry& e = m.entries[k];
        for (const DcpChunk& c : e.chunks)
            emit(metadata_index(e.fqn, e.bytes ? nullptr : &c.offsets), storage_info(c.where));
    });
    p.save(PyValue::string("storage_meta"));
    p.save(PyValue());
    p.save(PyValue::string("version"));
    p.save(PyValue::string("1.0.0"));
    p.save(PyValue::string("mcore_data"));
    stream_dict(p, n, [&](size_t k, auto& emit) {
        if (!m.entries[k].bytes) emit(PyValue::string(m.entries[k].fqn), mcore_data(m.entries[k]));
    });
    p.set_items();
    p.build();
    p.finish();
}

}  // namespace

const DcpEntry* DcpMetadata::find(std::string_view fqn) const {
    for (const DcpEntry& e : entries)
        if (e.fqn == fqn) return &e;
    return nullptr;
}

DcpMetadata read_dcp_metadata(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    MT_CHECK(in, "cannot read ", file.string(), ": the checkpoint has no .metadata");
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        return read_metadata(ss.str(), file.filename().string());
    } catch (const Error& e) {
        MT_FAIL("cannot read ", file.string(), ": ", e.what());
    }
}

void write_dcp_metadata(const fs::path& file, const DcpMetadata& metadata) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    MT_CHECK(out, "cannot write ", file.string());
    write_metadata(out, metadata);
    out.close();
    MT_CHECK(out, "cannot write ", file.string());
}

namespace {

PyValue int_list(const Shape& values) {
    PyValue out = PyValue::list();
    for (int64_t v : values) out.items().push_back(PyValue::integer(v));
    return out;
}

Shape shape_of(const PyValue& list) {
    Shape out;
    for (const PyValue& v : list.items()) out.push_back(v.as_int());
    return out;
}

}  // namespace

// [fqn, bytes, dtype, size, [[offsets, sizes, path, offset, length], ...], flattened_from] per
// entry.
std::string encode_entries(const std::vector<DcpEntry>& entries) {
    PyValue out = PyValue::list();
    for (const DcpEntry& e : entries) {
        PyValue chunks = PyValue::list();
        for (const DcpChunk& c : e.chunks)
            chunks.items().push_back(PyValue::list({int_list(c.offsets), int_list(c.sizes),
                                                    PyValue::string(c.where.relative_path),
                                                    PyValue::integer(int64_t(c.where.offset)),
                                                    PyValue::integer(int64_t(c.where.length))}));
        out.items().push_back(PyValue::list({PyValue::string(e.fqn), PyValue::boolean(e.bytes),
                                             PyValue::integer(int64_t(e.dtype)), int_list(e.size),
                                             std::move(chunks), int_list(e.flattened_from)}));
    }
    return io::write_pickle(out).data;
}

std::vector<DcpEntry> decode_entries(std::string_view bytes) {
    std::vector<DcpEntry> out;
    const PyValue list = io::read_pickle(bytes, "a rank's checkpoint index");
    for (const PyValue& v : list.items()) {
        const auto& f = v.items();
        DcpEntry e;
        e.fqn = f.at(0).as_string();
        e.bytes = f.at(1).as_bool();
        e.dtype = DType(f.at(2).as_int());
        e.size = shape_of(f.at(3));
        for (const PyValue& c : f.at(4).items()) {
            const auto& g = c.items();
            e.chunks.push_back({shape_of(g.at(0)), shape_of(g.at(1)),
                                DcpLocation{g.at(2).as_string(), uint64_t(g.at(3).as_int()),
                                            uint64_t(g.at(4).as_int())}});
        }
        e.flattened_from = shape_of(f.at(5));
        out.push_back(std::move(e));
    }
    return out;
}

void merge_entries(DcpMetadata& into, std::vector<DcpEntry> entries) {
    for (DcpEntry& e : entries) {
        auto it = std::find_if(into.entries.begin(), into.entries.end(),
                               [&](const DcpEntry& have) { return have.fqn == e.fqn; });
        if (it == into.entries.end()) {
            into.entries.push_back(std::move(e));
            continue;
        }
        auto what = [](const DcpEntry& x) {
            return x.bytes ? std::string("bytes")
                           : shape_str(x.size) + " " + std::string(dtype_name(x.dtype));
        };
        MT_CHECK(it->bytes == e.bytes && (e.bytes || (it->dtype == e.dtype && it->size == e.size &&
                                                      it->flattened_from == e.flattened_from)),
                 "torch_dist: ranks disagree on ", e.fqn, ": ", what(e), " and ", what(*it));
        for (DcpChunk& c : e.chunks) it->chunks.push_back(std::move(c));
    }
}

}  // namespace mt::plugins::torch_dist
