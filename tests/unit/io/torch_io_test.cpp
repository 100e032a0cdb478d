// torch.save files: reading fixtures made by torch (every value checked against the rendering
// make_fixtures.py took from torch.load), writing byte-identical files, and malformed input.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "mt/error.h"
#include "mt/io/crc32.h"
#include "mt/io/pickle_reader.h"
#include "mt/io/pickle_writer.h"
#include "mt/io/torch_file.h"
#include "mt/io/zip_reader.h"
#include "mt/io/zip_writer.h"
#include "test_support.h"

namespace mt::io {
namespace {

std::filesystem::path fixture(const std::string& name) {
    return test::fixtures_dir() / "torch_io" / name;
}

// module.name.__new__(module.name) with `state` built in (a Namespace, a dataclass instance).
PyValue new_object(const char* module, const char* name, PyValue state) {
    PyObject o;
    o.module = module;
    o.name = name;
    o.make = PyObject::Make::newobj;
    o.args = PyValue::tuple();
    o.state = std::move(state);
    return PyValue::object(std::move(o));
}

// expected.json: file name -> repr of what torch.load returns for it.
const std::map<std::string, std::string>& expected() {
    static const std::map<std::string, std::string> values = [] {
        std::map<std::string, std::string> out;
        simdjson::dom::parser parser;
        simdjson::dom::element doc = parser.load(fixture("expected.json").string());
        for (auto [key, value] : doc.get_object())
            out[std::string(key)] = std::string(value.get_string().value());
        return out;
    }();
    return values;
}

template <class T>
Tensor make_tensor(const Shape& shape, DType dtype, const std::vector<T>& values) {
    Tensor t = Tensor::empty(shape, dtype);
    EXPECT_EQ(static_cast<int64_t>(values.size() * sizeof(T)), t.nbytes());
    if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
    return t;
}

// The value make_fixtures.py's golden_content() builds; keep the two in step.
PyValue golden_value() {
    PyValue root = PyValue::dict();
    PyDict& d = root.dict_ref();
    d.set("iteration", PyValue::integer(7));
    d.set("checkpoint_version", PyValue::real(3.0));
    d.set("title", PyValue::string("gpt \xe2\x9c\x93"));
    d.set("blob", PyValue::bytes(std::string("\x00\x01\xff", 3)));
    d.set("empty_blob", PyValue::bytes(""));
    d.set("flags", PyValue::list({PyValue::boolean(true), PyValue::boolean(false), PyValue()}));
    d.set("big", PyValue::big_integer("1180591620717411303424"));
    d.set("neg", PyValue::integer(-5));
    d.set("mid", PyValue::integer(70000));
    d.set("large", PyValue::integer(int64_t{1} << 40));
    d.set("pair", PyValue::tuple({PyValue::integer(1), PyValue::real(2.5)}));

    PyValue ns = PyValue::dict();
    ns.dict_ref().set("params_dtype", torch_dtype_global(DType::bf16));
    ns.dict_ref().set("hidden_size", PyValue::integer(8));
    ns.dict_ref().set("lr", PyValue::real(0.001));
    d.set("args", new_object("argparse", "Namespace", std::move(ns)));

    const Tensor fc1 =
        make_tensor<float>({2, 3}, DType::f32, {0.5f, -1.0f, 2.0f, 3.25f, 0.0f, -0.125f});
    PyValue model = PyValue::dict(/*ordered=*/true);
    model.dict_ref().set("embedding.word_embeddings.weight",
                         PyValue::tensor(make_tensor<uint16_t>(
                             {4, 2}, DType::bf16,
                             {0x3F80, 0x4000, 0xC040, 0x3F00, 0x3E80, 0x4100, 0x8000, 0x3FC0})));
    model.dict_ref().set("decoder.layers.0.mlp.linear_fc1.weight", PyValue::tensor(fc1));
    model.dict_ref().set("decoder.final_layernorm.weight",
                         PyValue::tensor(make_tensor<uint16_t>({2}, DType::f16, {0x3C00, 0x3C00})));
    model.dict_ref().set("output_layer.weight", PyValue::tensor(fc1.transpose(0, 1)));
    d.set("model", model);

    PyTensor param;
    param.tensor = make_tensor<float>({3}, DType::f32, {1.0f, 2.0f, 3.0f});
    param.requires_grad = true;
    param.parameter = true;
    d.set("param", PyValue::tensor(std::move(param)));
    d.set("step", PyValue::tensor(make_tensor<int64_t>({}, DType::i64, {5})));
    d.set("mask", PyValue::tensor(make_tensor<uint8_t>({3}, DType::boolean, {1, 0, 1})));
    d.set("bytes_list",
          PyValue::tensor(make_tensor<int8_t>({4}, DType::i8, {0, 1, 2, 3}).slice(0, 1, 4)));
    return root;
}

TEST(TorchIo, ReadsEveryFixtureAsTorchLoadDoes) {
    for (const auto& [name, want] : expected()) {
        SCOPED_TRACE(name);
        EXPECT_EQ(repr(load_torch_file(fixture(name))), want);
    }
    EXPECT_GE(expected().size(), 6u);
}

TEST(TorchIo, MegatronShapedStateDict) {
    const PyValue sd = load_torch_file(fixture("gpt_state.pt"));
    EXPECT_EQ(torch_dtype_of(sd["args"]["params_dtype"]), DType::bf16);
    EXPECT_EQ(sd["args"]["consumed_train_samples"].as_int(), 80);
    EXPECT_EQ(sd["checkpoint_version"].as_double(), 3.0);
    const PyValue& model = sd["model"];
    EXPECT_TRUE(model.dict_ref().ordered);
    const Tensor& qkv = model["decoder.layers.1.self_attention.linear_qkv.weight"].as_tensor();
    EXPECT_EQ(qkv.dtype(), DType::bf16);
    EXPECT_EQ(qkv.shape(), (Shape{12, 4}));
    EXPECT_TRUE(model["decoder.layers.0.self_attention.linear_proj._extra_state"].is_none());
    // Tied weights are one tensor in Python, so both keys see one storage.
    EXPECT_EQ(model["output_layer.weight"].as_tensor().storage(),
              model["embedding.word_embeddings.weight"].as_tensor().storage());
    EXPECT_EQ(sd["rng_state"].items().at(0)["torch_rng_state"].as_tensor().dtype(), DType::u8);
}

// The pickle alone: the same values, tensors shaped and shared as they are but without data, and
// a corrupted tensor record not even looked at.
TEST(TorchIo, StructureReadsThePickleWithoutTheTensors) {
    const PyValue sd = load_torch_structure(fixture("gpt_state.pt"));
    EXPECT_EQ(sd["args"]["consumed_train_samples"].as_int(), 80);
    const PyValue& model = sd["model"];
    const Tensor& qkv = model["decoder.layers.1.self_attention.linear_qkv.weight"].as_tensor();
    EXPECT_EQ(qkv.shape(), (Shape{12, 4}));
    EXPECT_EQ(qkv.storage()->data, nullptr);
    EXPECT_EQ(model["output_layer.weight"].as_tensor().storage(),
              model["embedding.word_embeddings.weight"].as_tensor().storage());
    // A bit flipped in a tensor record: load_torch_file's CRC check refuses the file, the
    // structure does not read the record.
    test::TempDir dir;
    std::string bytes = test::read_file(fixture("gpt_state.pt"));
    {
        const ZipReader zip(std::make_shared<const MappedFile>(fixture("gpt_state.pt")));
        bytes[size_t(zip.at("gpt_state/data/0").offset)] ^= 1;
    }
    std::ofstream(dir / "flipped.pt", std::ios::binary) << bytes;
    EXPECT_THROW(load_torch_file(dir / "flipped.pt"), Error);
    const PyValue flipped = load_torch_structure(dir / "flipped.pt");
    EXPECT_EQ(flipped["args"]["consumed_train_samples"].as_int(), 80);
    EXPECT_EQ(flipped["model"].dict_ref().items.size(), model.dict_ref().items.size());
}

TEST(TorchIo, ViewsShareTheMappedStorage) {
    const PyValue v = load_torch_file(fixture("views.pt"));
    const Tensor& base = v["base"].as_tensor();
    for (const char* key : {"transposed", "block", "corner", "rows_step", "cols_step", "element"}) {
        SCOPED_TRACE(key);
        EXPECT_EQ(v[key].as_tensor().storage(), base.storage());
    }
    EXPECT_EQ(v["corner"].as_tensor().offset(), 9);
    EXPECT_EQ(v["corner"].as_tensor().strides(), (Shape{4, 1}));
    EXPECT_EQ(v["transposed"].as_tensor().strides(), (Shape{1, 4}));
    EXPECT_EQ(v["element"].as_tensor().dim(), 0);
    EXPECT_EQ(v["element"].as_tensor().data<float>()[0], 6.0f);
    EXPECT_TRUE(v["param"].tensor_ref().parameter);
    EXPECT_TRUE(v["param"].tensor_ref().requires_grad);
    EXPECT_FALSE(v["frozen_param"].tensor_ref().requires_grad);
}

TEST(TorchIo, OverlappingAndBroadcastLayoutsAreViews) {
    PyStorage s;
    s.storage = Tensor::empty({6}, DType::i32).storage();
    s.dtype = DType::i32;
    s.numel = 6;
    for (int i = 0; i < 6; ++i) static_cast<int32_t*>(s.storage->data)[i] = i;
    // Overlapping rows (stride 1 over rows of 2).
    const Tensor t = Tensor::from_storage(s.storage, {3, 2}, {1, 1}, s.dtype, 0);
    EXPECT_EQ(t.storage(), s.storage);
    const Tensor c = t.contiguous();
    EXPECT_EQ(std::vector<int32_t>(c.data<int32_t>(), c.data<int32_t>() + 6),
              (std::vector<int32_t>{0, 1, 1, 2, 2, 3}));
    // Broadcast rows (stride 0), as torch's expand() saves them.
    const Tensor b = Tensor::from_storage(s.storage, {4, 6}, {0, 1}, s.dtype, 0).contiguous();
    EXPECT_EQ(b.data<int32_t>()[3 * 6 + 5], 5);
    EXPECT_NE(test::error_of([&] {
                  Tensor::from_storage(s.storage, {2, 3}, {3, 1}, s.dtype, 1);
              }).find("reaches element 6"),
              std::string::npos);
}

TEST(TorchIo, WriterReproducesTorchSaveByteForByte) {
    test::TempDir dir;
    const PyValue golden = golden_value();
    save_torch_file(dir / "written_by_torch.pt", golden);
    EXPECT_TRUE(test::read_file(dir / "written_by_torch.pt") ==
                test::read_file(fixture("written_by_torch.pt")))
        << "our writer no longer matches torch.save of golden_content()";
    EXPECT_EQ(repr(load_torch_file(dir / "written_by_torch.pt")),
              expected().at("written_by_torch.pt"));
}

TEST(TorchIo, WriterMatchesGoldenFile) {
    test::TempDir dir;
    const std::filesystem::path out =
        std::getenv("MT_WRITE_GOLDEN") ? fixture("written_by_mt.pt") : dir / "written_by_mt.pt";
    save_torch_file(out, golden_value());
    ASSERT_TRUE(std::filesystem::exists(fixture("written_by_mt.pt")));
    EXPECT_TRUE(test::read_file(out) == test::read_file(fixture("written_by_mt.pt")));
    if (expected().count("written_by_mt.pt")) {
        EXPECT_EQ(repr(load_torch_file(out)), expected().at("written_by_mt.pt"));
    }
}

TEST(TorchIo, RoundTripsEveryFixture) {
    test::TempDir dir;
    for (const auto& [name, want] : expected()) {
        SCOPED_TRACE(name);
        save_torch_file(dir / name, load_torch_file(fixture(name)));
        EXPECT_EQ(repr(load_torch_file(dir / name)), want);
    }
}

// Byte-exact against CPython's pickle.dumps(value, 2) (hex and CRC-32s taken from Python 3.11).
TEST(TorchIo, PickleWriterMatchesCPython) {
    PyValue v = PyValue::dict();
    v.dict_ref().set("k", PyValue::list({PyValue::integer(1), PyValue::integer(-2),
                                         PyValue::real(3.5), PyValue::string("\xc3\xa9")}));
    v.dict_ref().set("t", PyValue::tuple({PyValue(), PyValue::boolean(true)}));
    v.dict_ref().set("s", PyValue::set({PyValue::integer(7)}));
    PyValue od = PyValue::dict(/*ordered=*/true);
    od.dict_ref().set("z", PyValue::bytes("\x01"));
    v.dict_ref().set("o", od);
    std::string hex;
    for (unsigned char c : write_pickle(v).data) {
        hex += "0123456789abcdef"[c >> 4];
        hex += "0123456789abcdef"[c & 15];
    }
    EXPECT_EQ(hex,
              "80027d71002858010000006b71015d7102284b014afeffffff47400c0000000000005802000000c3a971"
              "036558010000007471044e888671055801000000737106635f5f6275696c74696e5f5f0a7365740a7107"
              "5d71084b076185710952710a58010000006f710b63636f6c6c656374696f6e730a4f7264657265644469"
              "63740a710c2952710d58010000007a710e635f636f646563730a656e636f64650a710f58010000000171"
              "1058060000006c6174696e31711186711252711373752e");

    // Batching of 1000 items: exact lists/dicts versus OrderedDict's item iterator.
    const auto fingerprint = [](const PyValue& value) {
        const std::string data = write_pickle(value).data;
        return std::make_pair(data.size(), crc32_update(0, data.data(), data.size()));
    };
    const auto ints = [](int n) {
        std::vector<PyValue> out;
        for (int i = 0; i < n; ++i) out.push_back(PyValue::integer(i));
        return out;
    };
    PyValue dict = PyValue::dict(), odict = PyValue::dict(true), odict1 = PyValue::dict(true);
    for (int i = 0; i < 1001; ++i) {
        dict.dict_ref().set(PyValue::integer(i), PyValue::integer(i));
        odict.dict_ref().set(PyValue::integer(i), PyValue::integer(i));
    }
    odict1.dict_ref().set(PyValue::integer(1), PyValue::integer(2));
    EXPECT_EQ(fingerprint(PyValue::list(ints(1001))), std::make_pair(size_t{2757}, 0x356ad1e8u));
    EXPECT_EQ(fingerprint(PyValue::list(ints(2000))), std::make_pair(size_t{5754}, 0x075b65cfu));
    EXPECT_EQ(fingerprint(PyValue::list({PyValue::integer(5)})),
              std::make_pair(size_t{9}, 0xaaeb0f71u));
    EXPECT_EQ(fingerprint(dict), std::make_pair(size_t{5504}, 0x28bdecfeu));
    EXPECT_EQ(fingerprint(odict), std::make_pair(size_t{5531}, 0x1a7a5605u));
    EXPECT_EQ(fingerprint(odict1), std::make_pair(size_t{39}, 0xbe4a8831u));
}

// What a few bytes of pickle can make: 200,000 nested lists (a recursive destructor or walk
// overflows the stack), a list that contains itself (endless recursion, a shared_ptr cycle), a
// 1.6 KB memo DAG L[k+1] = [L[k], L[k]] (its printed form doubles per level).
TEST(TorchIo, HostilePicklesAreBoundedErrors) {
    const std::string ctx = "common.pt: data.pkl";
    std::string deep = "\x80\x02";
    constexpr int kLevels = 200000;
    for (int i = 0; i < kLevels; ++i) deep += ']';  // EMPTY_LIST
    for (int i = 1; i < kLevels; ++i) deep += 'a';  // APPEND each into the one before
    EXPECT_NE(test::error_of([&] {
                  read_pickle(deep + ".", ctx);
              }).find("common.pt: data.pkl: values nested deeper than 1000 levels"),
              std::string::npos);
    // The same, cut short: the partial value goes without recursion too.
    EXPECT_NE(test::error_of([&] { read_pickle(deep, ctx); }).find("no STOP opcode"),
              std::string::npos);

    // EMPTY_LIST, BINPUT 0, BINGET 0, APPEND: [[...]].
    EXPECT_NE(test::error_of([&] {
                  read_pickle(std::string("\x80\x02]q\x00h\x00"
                                          "a.",
                                          9),
                              ctx);
              }).find("a value that contains itself (a reference cycle)"),
              std::string::npos);
    // The same list popped, an empty tuple the result: loads, and the dropped cycle is freed
    // (found by fuzz_pickle as a leak; the ASan builds see it, tests/fuzz/regressions/pickle).
    EXPECT_EQ(repr(read_pickle(std::string("\x80\x02]q\x00h\x00"
                                           "a0).",
                                           11),
                               ctx)),
              "()");

    // OrderedDict([(1,)]): an item that is not a (key, value) pair (found by fuzz_pickle as a
    // std::out_of_range escaping the reader).
    EXPECT_NE(test::error_of([&] {
                  read_pickle(
                      "\x80\x02"
                      "ccollections\nOrderedDict\n]K\x01\x85"
                      "a\x85R.",
                      ctx);
              }).find("collections.OrderedDict items must be (key, value) pairs, not (1)"),
              std::string::npos);

    // L0 = [], then L[k+1] = [L[k], L[k]] through the memo, 60 levels: loads (no cycle, 60
    // levels), and printing it stops at its budget instead of 2^60 lists.
    std::string dag("\x80\x02]q\x00", 5);
    for (int k = 0; k < 60; ++k) {
        dag += "(h";
        dag += char(k);
        dag += 'h';
        dag += char(k);
        dag += "lq";
        dag += char(k + 1);
    }
    const PyValue v = read_pickle(dag + ".", ctx);
    const std::string printed = repr(v);
    EXPECT_LT(printed.size(), size_t(256) << 20);
    EXPECT_NE(printed.find("<...>"), std::string::npos);
    // What error messages print of it: its first 200 bytes, the walk stopped there.
    const std::string quoted = short_repr(v);
    EXPECT_EQ(quoted.size(), 200u);
    EXPECT_EQ(quoted, printed.substr(0, 197) + "...");
    // A long string is cut at a character boundary: 'aaa...é... has é's second byte at 197.
    const std::string text = std::string(195, 'a') + "\xC3\xA9" + std::string(10, 'a');
    const std::string cut =
        short_repr(read_pickle("\x80\x02X" + std::string("\xCF\x00\x00\x00", 4) + text + ".", ctx));
    EXPECT_EQ(cut, "'" + std::string(195, 'a') + "...");
    // A torch file whose persistent id is that DAG (1.4 KB): the error quotes 200 bytes of it.
    test::TempDir dir;
    {
        ZipWriter w(dir / "hostile.pt");
        w.add("archive/data.pkl", dag + "Q.");  // BINPERSID
        w.add("archive/version", "3\n");
        w.close();
    }
    const std::string message = test::error_of([&] { load_torch_file(dir / "hostile.pt"); });
    EXPECT_NE(message.find("persistent id is not a ('storage', class, key, location, numel) "
                           "tuple: [[[["),
              std::string::npos)
        << message.substr(0, 600);
    EXPECT_LT(message.size(), 600u) << message.substr(0, 600);
}

TEST(TorchIo, PickleErrorsNameFileOffsetAndOpcode) {
    const std::string ctx = "model_optim_rng.pt: data.pkl";
    EXPECT_NE(test::error_of([&] {
                  read_pickle(std::string("\x80\x02X\x05\x00\x00\x00"
                                          "ab",
                                          10),
                              ctx);
              }).find("model_optim_rng.pt: data.pkl: truncated at byte 10 inside BINUNICODE"),
              std::string::npos);
    EXPECT_NE(test::error_of([&] {
                  read_pickle("\x80\x02\xff", ctx);
              }).find("byte 2 (?): unsupported or invalid opcode 0xff"),
              std::string::npos);
    EXPECT_NE(test::error_of([&] {
                  read_pickle("\x80\x02h\x07.", ctx);
              }).find("memo index 7 was never stored"),
              std::string::npos);
    EXPECT_NE(test::error_of([&] { read_pickle("\x80\x02N", ctx); }).find("no STOP opcode"),
              std::string::npos);
    EXPECT_NE(test::error_of([&] {
                  read_pickle(
                      "\x80\x02"
                      "a.",
                      ctx);
              }).find("(APPEND): stack underflow"),
              std::string::npos);
    EXPECT_NE(
        test::error_of([&] { read_pickle("\x80\x02(K\x01Q.", ctx); }).find("persistent id without"),
        std::string::npos);
}

TEST(TorchIo, PickleValuesBeyondTorchFiles) {
    // Protocol 4 opcodes: FRAME, SHORT_BINUNICODE, MEMOIZE, EMPTY_SET/ADDITEMS, STACK_GLOBAL,
    // SHORT_BINBYTES, LONG4, BINUNICODE8.
    const std::string p4 =
        std::string("\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00", 11) +
        "]\x94(\x8c\x01x\x94\x8f\x94(K\x01K\x02\x90"
        "C\x02hi" +
        std::string("\x8b\x09\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01", 14) +
        "\x8c\x08"
        "argparse\x8c\x09Namespace\x93)\x81}b" +
        std::string("\x8d\x02\x00\x00\x00\x00\x00\x00\x00ok", 11) +
        "h\x01"
        "e.";
    EXPECT_EQ(repr(read_pickle(p4, "p4")),
              "['x', set(1, 2), bytes(6869), 18446744073709551616, "
              "argparse.Namespace<newobj>().state({}), "
              "'ok', 'x']");
}

// PickleStream: an object whose state is a dict of 2500 items (three SETITEMS batches) laid out
// by hand reads back as the same value write_pickle writes whole.
TEST(TorchIo, PickleStreamWritesWhatWritePickleWrites) {
    constexpr const char* kModule = "torch.distributed.checkpoint.metadata";
    auto item = [&](int k) {
        PyValue state = PyValue::dict();
        state.dict_ref().set("offsets", PyValue::tuple({PyValue::integer(k), PyValue()}));
        return new_object(kModule, "ChunkStorageMetadata", std::move(state));
    };
    PyValue items = PyValue::dict();
    for (int k = 0; k < 2500; ++k) items.dict_ref().set("key" + std::to_string(k), item(k));
    PyValue state = PyValue::dict();
    state.dict_ref().set("version", PyValue::string("1.0.0"));
    state.dict_ref().set("items", items);
    const PyValue want = new_object(kModule, "Metadata", std::move(state));

    std::ostringstream out;
    PickleStream p(out);
    p.new_object(kModule, "Metadata");
    p.empty_dict();
    p.mark();
    p.save(PyValue::string("version"));
    p.save(PyValue::string("1.0.0"));
    p.save(PyValue::string("items"));
    p.empty_dict();
    for (int k = 0; k < 2500; ++k) {
        if (k % 1000 == 0) p.mark();
        p.save(PyValue::string("key" + std::to_string(k)));
        p.save(item(k));
        if (k % 1000 == 999 || k == 2499) p.set_items();
    }
    p.set_items();
    p.build();
    p.finish();
    EXPECT_EQ(repr(read_pickle(out.str(), "streamed")), repr(want));
    EXPECT_EQ(repr(read_pickle(write_pickle(want).data, "whole")), repr(want));
}

// read_pickle's item filter: the pairs it takes are offered whole (checked first) and left out
// of their dicts; an error it throws fails the read naming the pickle.
TEST(TorchIo, ItemFilterTakesDictItemsAsTheyAreRead) {
    PyValue inner = PyValue::dict();
    inner.dict_ref().set("take", PyValue::integer(3));
    PyValue root = PyValue::dict();
    root.dict_ref().set("keep", PyValue::integer(1));
    root.dict_ref().set("take", PyValue::list({PyValue::integer(1), PyValue::integer(2)}));
    root.dict_ref().set("nested", inner);
    const std::string bytes = write_pickle(root).data;
    std::vector<std::string> taken;
    const PyValue read =
        read_pickle(bytes, "filtered", {}, [&](const PyValue& k, const PyValue& v) {
            if (k.kind() != PyKind::string || k.as_string() != "take") return false;
            taken.push_back(repr(v));
            return true;
        });
    EXPECT_EQ(repr(read), "{'keep': 1, 'nested': {}}");
    EXPECT_EQ(taken, (std::vector<std::string>{"3", "[1, 2]"}));
    EXPECT_NE(test::error_of([&] {
                  read_pickle(bytes, "filtered", {}, [](const PyValue&, const PyValue&) -> bool {
                      MT_FAIL("no such item here");
                  });
              }).find("filtered: byte "),
              std::string::npos);
    // A value nested too deep is refused before the filter sees it.
    std::string deep("\x80\x02}(X\x01\x00\x00\x00k", 10);  // {'k': [[[...]]]}
    for (int i = 0; i < 3000; ++i) deep += ']';
    for (int i = 1; i < 3000; ++i) deep += 'a';
    deep += "u.";
    bool offered = false;
    EXPECT_NE(test::error_of([&] {
                  read_pickle(deep, "deep", {}, [&](const PyValue&, const PyValue&) {
                      offered = true;
                      return true;
                  });
              }).find("values nested deeper than 1000 levels"),
              std::string::npos);
    EXPECT_FALSE(offered);
}

TEST(TorchIo, ZipErrors) {
    test::TempDir dir;
    test::write_file(dir / "junk.pt", "this is not a zip file at all");
    EXPECT_NE(
        test::error_of([&] { load_torch_file(dir / "junk.pt"); }).find("junk.pt: not a zip file"),
        std::string::npos);
    std::string bytes = test::read_file(fixture("scalars.pt"));
    const size_t central = bytes.find("PK\x01\x02");
    ASSERT_NE(central, std::string::npos);
    bytes[central + 10] = 8;  // deflate
    test::write_file(dir / "deflated.pt", bytes);
    EXPECT_NE(test::error_of([&] {
                  load_torch_file(dir / "deflated.pt");
              }).find("is compressed (method 8)"),
              std::string::npos);
}

// Random truncations and bit flips must end in mt::Error (or a value), never in a crash.
// Every record's CRC-32 is checked: a bit flipped in a tensor's bytes (or in data.pkl) is an
// error naming the record, not a silently changed weight.
TEST(TorchIo, FlippedBitsInRecordsAreCaughtByTheirCrc) {
    test::TempDir dir;
    const std::string original = test::read_file(fixture("gpt_state.pt"));
    const ZipReader zip(std::make_shared<const MappedFile>(fixture("gpt_state.pt")));
    for (const ZipEntry& e : zip.entries()) {
        const bool data = e.name.find("/data/") != std::string::npos;
        if (!(data || e.name.ends_with("/data.pkl")) || e.size == 0) continue;
        std::string bytes = original;
        const size_t at = size_t(e.offset + e.size / 2);
        bytes[at] = static_cast<char>(bytes[at] ^ 0x10);
        test::write_file(dir / "flipped.pt", bytes);
        const std::string err = test::error_of([&] { load_torch_file(dir / "flipped.pt"); });
        EXPECT_NE(err.find("record " + e.name + " has CRC-32"), std::string::npos) << err;
    }
}

TEST(TorchIo, FuzzedFilesFailCleanly) {
    test::TempDir dir;
    std::mt19937 rng(1234);
    int errors = 0, loads = 0;
    for (const char* name : {"views.pt", "gpt_state.pt", "scalars.pt"}) {
        const std::string original = test::read_file(fixture(name));
        for (int i = 0; i < 60; ++i) {
            std::string bytes = original;
            if (i % 3 == 0) {
                bytes.resize(std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng));
            } else {
                // Most flips land in data.pkl, which starts at byte 64 in torch files.
                const size_t hi = i % 3 == 1 ? std::min<size_t>(bytes.size(), 2048) : bytes.size();
                for (int k = 0; k < 1 + i % 4; ++k) {
                    const size_t at = std::uniform_int_distribution<size_t>(0, hi - 1)(rng);
                    bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
                }
            }
            const auto path = dir / "fuzz.pt";
            test::write_file(path, bytes);
            try {
                load_torch_file(path);
                ++loads;
            } catch (const Error& e) {
                ++errors;
                EXPECT_EQ(std::string(e.what()).rfind("fuzz.pt", 0), 0u) << e.what();
            }
        }
    }
    EXPECT_GT(errors, 60);
    EXPECT_EQ(errors + loads, 180);
}

TEST(TorchIo, FuzzedPicklesFailCleanly) {
    ZipReader zip(fixture("gpt_state.pt"));
    const std::string pkl(zip.payload(zip.at("gpt_state/data.pkl")));
    std::mt19937 rng(99);
    const PersistentLoad no_storage = [](const PyValue&) -> PyValue {
        MT_FAIL("no storages here");
    };
    for (int i = 0; i < 2000; ++i) {
        std::string bytes = pkl;
        if (i % 2) bytes.resize(rng() % bytes.size());
        for (int k = 0; k < i % 3; ++k)
            bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
        try {
            read_pickle(bytes, "fuzz", no_storage);
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()).rfind("fuzz", 0), 0u) << e.what();
        }
    }
}

}  // namespace
}  // namespace mt::io
