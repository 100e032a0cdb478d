#include "mt/checkpoint/integrity_manifest.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "mt/error.h"
#include "mt/io/atomic_file.h"
#include "mt/io/json_writer.h"
#include "mt/io/sha256.h"

namespace mt {

namespace {

constexpr const char* kAlgorithm = "sha256";
// The manifest is a few lines per file; anything far larger is no manifest of ours or Megatron's.
constexpr uintmax_t kLargestManifest = uintmax_t(64) << 20;

}  // namespace

void write_integrity_manifest(const std::filesystem::path& iteration_dir) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(iteration_dir))
        if (entry.is_regular_file() && entry.path().filename() != kIntegrityManifestName)
            names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    // json.dump(payload, f, indent=2): no trailing newline.
    std::string text = "{\n  \"algorithm\": \"" + std::string(kAlgorithm) + "\",\n  \"files\": {";
    for (size_t i = 0; i < names.size(); ++i)
        text += std::string(i ? "," : "") + "\n    " + io::json_quote(names[i]) + ": \"" +
                io::sha256_of_file(iteration_dir / names[i]) + "\"";
    text += names.empty() ? "}\n}" : "\n  }\n}";
    io::AtomicFile manifest(iteration_dir / kIntegrityManifestName);
    manifest.stream() << text;
    manifest.commit();
}

void verify_integrity_manifest(const std::filesystem::path& iteration_dir) {
    const std::filesystem::path path = iteration_dir / kIntegrityManifestName;
    MT_CHECK(std::filesystem::is_regular_file(path), "Integrity manifest not found at ",
             path.string(),
             ". The checkpoint must be saved with integrity verification enabled "
             "(--verify-integrity) before it can be verified on load.");
    MT_CHECK(std::filesystem::file_size(path) <= kLargestManifest, path.string(),
             ": larger than any integrity manifest (", kLargestManifest >> 20, " MiB)");
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    auto error = parser.load(path.string()).get(root);
    MT_CHECK(!error, path.string(), ": not JSON (", simdjson::error_message(error), ")");
    simdjson::dom::object manifest;
    MT_CHECK(!root.get_object().get(manifest), path.string(), ": not a JSON object");
    std::string_view algorithm = kAlgorithm;
    simdjson::dom::element given;
    if (!manifest["algorithm"].get(given))
        MT_CHECK(!given.get_string().get(algorithm) && algorithm == kAlgorithm, path.string(),
                 ": unsupported hash algorithm in the integrity manifest (expected '", kAlgorithm,
                 "')");
    simdjson::dom::object files;
    MT_CHECK(!manifest["files"].get_object().get(files), path.string(),
             ": no \"files\" object in the integrity manifest");
    std::vector<std::string> mismatches;
    for (auto [name, digest] : files) {
        std::string_view expected;
        MT_CHECK(!digest.get_string().get(expected), path.string(), ": the digest of '",
                 std::string(name).substr(0, 200), "' is not a string");
        const std::filesystem::path file = iteration_dir / std::string(name);
        std::string actual;
        try {
            MT_CHECK(std::filesystem::path(std::string(name)).filename() == std::string(name),
                     "not a file name of the directory");
            actual = io::sha256_of_file(file);
        } catch (const std::exception& e) {
            mismatches.push_back("  " + std::string(name).substr(0, 200) +
                                 ": file missing or unreadable (" + e.what() + ")");
            continue;
        }
        if (actual != expected)
            mismatches.push_back(
                "  " + std::string(name).substr(0, 200) + ": hash mismatch (expected " +
                std::string(expected.substr(0, 16)) + "..., got " + actual.substr(0, 16) + "...)");
    }
    if (mismatches.empty()) return;
    std::string message = "Checkpoint integrity verification failed for " +
                          std::to_string(mismatches.size()) + " file(s) in " +
                          iteration_dir.string() + ":";
    for (const std::string& m : mismatches) message += "\n" + m;
    MT_FAIL(message);
}

}  // namespace mt
