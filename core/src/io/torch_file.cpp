#include "mt/io/torch_file.h"

#include <cstring>
#include <functional>
#include <iomanip>
#include <map>
#include <sstream>
#include <unordered_set>

#include "mt/error.h"
#include "mt/io/pickle_reader.h"
#include "mt/io/pickle_writer.h"
#include "mt/io/zip_reader.h"
#include "mt/io/zip_writer.h"

namespace mt::io {
namespace {

std::optional<DType> storage_dtype(const std::string& cls) {
    static const std::map<std::string, DType> kClasses = {
        {"FloatStorage", DType::f32}, {"DoubleStorage", DType::f64},
        {"HalfStorage", DType::f16},  {"BFloat16Storage", DType::bf16},
        {"CharStorage", DType::i8},   {"ShortStorage", DType::i16},
        {"IntStorage", DType::i32},   {"LongStorage", DType::i64},
        {"ByteStorage", DType::u8},   {"BoolStorage", DType::boolean}};
    auto it = kClasses.find(cls);
    if (it == kClasses.end()) return std::nullopt;
    return it->second;
}

// Resolves ('storage', <class>, key, location, numel) to the zip record, once per key.
class StorageLoader {
  public:
    // read_data false: each storage a placeholder (no data; its record neither read nor checked).
    StorageLoader(const ZipReader& zip, std::string prefix, bool read_data)
        : zip_(zip), prefix_(std::move(prefix)), read_data_(read_data) {}

    PyValue operator()(const PyValue& pid) {
        MT_CHECK(pid.kind() == PyKind::tuple && pid.items().size() == 5 &&
                     pid.items()[0].kind() == PyKind::string &&
                     pid.items()[0].as_string() == "storage",
                 "persistent id is not a ('storage', class, key, location, numel) tuple: ",
                 short_repr(pid));
        const auto& f = pid.items();
        const PyObject& cls = f[1].object_ref();
        // UntypedStorage (bytes) backs dtypes without a legacy class, via _rebuild_tensor_v3.
        const std::optional<DType> dtype =
            cls.module == "torch.storage" && cls.name == "UntypedStorage"
                ? std::optional<DType>(DType::u8)
            : cls.module == "torch" ? storage_dtype(cls.name)
                                    : std::nullopt;
        MT_CHECK(dtype.has_value(), "unsupported storage class ", cls.module, ".", cls.name);
        const std::string& key = f[2].as_string();
        PyStorage s;
        s.dtype = *dtype;
        s.numel = f[4].as_int();
        s.location = f[3].as_string();
        auto it = loaded_.find(key);
        if (it != loaded_.end()) {
            MT_CHECK(it->second.dtype == s.dtype, "storage ", key, " used as both ",
                     dtype_name(it->second.dtype), " and ", dtype_name(s.dtype));
            s.storage = it->second.storage;
            s.numel = it->second.numel;
            return PyValue::storage(std::move(s));
        }
        const ZipEntry& e = zip_.at(prefix_ + "data/" + key);
        const int64_t esize = dtype_size(s.dtype);
        MT_CHECK(s.numel >= 0 && static_cast<uint64_t>(s.numel) * esize <= e.size, "storage ", key,
                 " of ", s.numel, " ", dtype_name(s.dtype), " elements needs ", s.numel * esize,
                 " bytes but its record has ", e.size);
        auto storage = std::make_shared<Storage>();
        storage->bytes = s.numel * esize;
        if (!read_data_) {
            s.storage = storage;
            loaded_.emplace(key, s);
            return PyValue::storage(std::move(s));
        }
        zip_.verify_crc(e);  // a flipped bit in tensor data is an error, not a changed weight
        const char* data = zip_.payload(e).data();
        if (reinterpret_cast<uintptr_t>(data) % esize == 0) {
            // Zero copy: the storage borrows the mapped bytes and keeps the map alive.
            storage->data = const_cast<char*>(data);
            auto file = zip_.file();
            storage->deleter = [file](void*) {};
        } else {
            storage->data = std::aligned_alloc(64, (storage->bytes + 63) / 64 * 64 + 64);
            MT_CHECK(storage->data, "out of memory copying storage ", key);
            std::memcpy(storage->data, data, storage->bytes);
            storage->deleter = [](void* p) { std::free(p); };
        }
        s.storage = storage;
        loaded_.emplace(key, s);
        return PyValue::storage(std::move(s));
    }

  private:
    const ZipReader& zip_;
    std::string prefix_;
    bool read_data_;
    std::map<std::string, PyStorage> loaded_;
};

uint64_t hash_combine(uint64_t seed, uint64_t value) {
    return seed ^ (value + 0x9e3779b9 + (seed << 6) + (seed >> 2));
}

// torch's id: c10::hash_combine over std::hash of the record names (visited in the order of the
// writer's std::unordered_set) and over the CRC-32s, each printed as 20 zero-padded digits.
std::string serialization_id(const std::vector<ZipWriter::Written>& written, size_t prefix_size) {
    std::unordered_set<std::string> names;
    uint64_t crc_hash = 0;
    for (const auto& w : written) {
        names.insert(w.name.substr(prefix_size));
        crc_hash = hash_combine(crc_hash, w.crc32);
    }
    uint64_t name_hash = 0;
    for (const std::string& n : names)
        name_hash = hash_combine(name_hash, std::hash<std::string>{}(n));
    std::ostringstream os;
    os << std::setfill('0') << std::setw(20) << name_hash << std::setfill('0') << std::setw(20)
       << crc_hash;
    return os.str();
}

// A torch.save archive: its pickle, each storage read (and checked) or a placeholder.
PyValue load_archive(std::shared_ptr<const MappedFile> file, bool read_data) {
    ZipReader zip(std::move(file));
    const std::string name = zip.display_name();
    MT_CHECK(!zip.entries().empty(), name, ": archive has no records");
    const std::string& first = zip.entries().front().name;
    const size_t slash = first.find('/');
    MT_CHECK(slash != std::string::npos, name, ": first record ", first,
             " is not inside an archive folder (not a torch.save file)");
    const std::string prefix = first.substr(0, slash + 1);
    if (const ZipEntry* order = zip.find(prefix + "byteorder")) {
        const std::string_view v = zip.payload(*order);
        MT_CHECK(v == "little", name, ": byteorder record says '", v,
                 "'; only little-endian files are supported");
    }
    const ZipEntry* pkl = zip.find(prefix + "data.pkl");
    MT_CHECK(pkl != nullptr, name, ": no data.pkl record (a legacy pre-zip torch file?)");
    zip.verify_crc(*pkl);
    StorageLoader loader(zip, prefix, read_data);
    try {
        return read_pickle(zip.payload(*pkl), name + ": data.pkl", std::ref(loader));
    } catch (const Error& e) {
        const std::string what = e.what();
        if (what.rfind(name, 0) == 0) throw;
        MT_FAIL(name, ": ", what);
    }
}

}  // namespace

PyValue load_torch_file(const std::filesystem::path& path) {
    return load_torch_file(std::make_shared<const MappedFile>(path));
}

PyValue load_torch_file(std::shared_ptr<const MappedFile> file) {
    return load_archive(std::move(file), true);
}

PyValue load_torch_structure(const std::filesystem::path& path) {
    return load_archive(std::make_shared<const MappedFile>(path), false);
}

void save_torch_file(const std::filesystem::path& path, const PyValue& value) {
    TorchArchiveWriter archive(path, value);
    for (const PickledStorage& s : archive.storages())
        archive.write_storage(s.storage->data, static_cast<size_t>(s.bytes));
    archive.finish();
}

TorchArchiveWriter::TorchArchiveWriter(const std::filesystem::path& path, const PyValue& value) {
    const std::string archive = path.stem().string();
    MT_CHECK(!archive.empty(), "cannot derive an archive name from ", path.string());
    prefix_ = archive + "/";
    zip_ = std::make_unique<ZipWriter>(path);
    begin(value);
}

TorchArchiveWriter::TorchArchiveWriter(std::FILE* file, const std::string& name,
                                       const PyValue& value)
    : zip_(std::make_unique<ZipWriter>(file, name)), prefix_("archive/") {
    begin(value);
}

TorchArchiveWriter::~TorchArchiveWriter() = default;

void TorchArchiveWriter::begin(const PyValue& value) {
    Pickled pickled = write_pickle(value);
    storages_ = std::move(pickled.storages);
    zip_->add(prefix_ + "data.pkl", pickled.data);
    zip_->add(prefix_ + ".format_version", "1");
    zip_->add(prefix_ + ".storage_alignment", "64");
    zip_->add(prefix_ + "byteorder", "little");
}

void TorchArchiveWriter::write_storage(const void* data, size_t bytes) {
    MT_CHECK(next_ < storages_.size(), "torch.save writer: more storages written than the ",
             storages_.size(), " the pickle holds");
    const PickledStorage& s = storages_[next_];
    if (bytes == 0 && s.bytes != 0) return;
    if (written_ == 0) zip_->begin_entry(prefix_ + "data/" + s.key, static_cast<uint64_t>(s.bytes));
    zip_->write(data, bytes);  // checks the record's size
    written_ += bytes;
    if (written_ == static_cast<uint64_t>(s.bytes)) {
        zip_->end_entry();
        written_ = 0;
        ++next_;
    }
}

uint64_t TorchArchiveWriter::finish() {
    // A storage of no bytes has nothing to wait for.
    while (next_ < storages_.size() && storages_[next_].bytes == 0 && written_ == 0) {
        zip_->begin_entry(prefix_ + "data/" + storages_[next_].key, 0);
        zip_->end_entry();
        ++next_;
    }
    MT_CHECK(next_ == storages_.size() && written_ == 0,
             "torch.save writer: ", storages_.size() - next_, " of ", storages_.size(),
             " storages not written at finish()");
    zip_->add(prefix_ + "version", "3\n");
    zip_->add(prefix_ + ".data/serialization_id",
              serialization_id(zip_->written(), prefix_.size()));
    zip_->close();
    return zip_->size();
}

}  // namespace mt::io
