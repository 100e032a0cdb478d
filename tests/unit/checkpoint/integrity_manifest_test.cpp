// Megatron's --verify-integrity manifest: SHA-256 against FIPS 180-4's and hashlib's digests, and
// integrity.json byte for byte as megatron-core core_v0.19 writes it over a torch_dist checkpoint
// (tests/fixtures/integrity_manifest/make_fixture.py), read back, and refused when a file changed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "mt/checkpoint/integrity_manifest.h"
#include "mt/error.h"
#include "mt/io/sha256.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace {

std::string sha256(const std::string& bytes, size_t piece) {
    mt::io::Sha256 hash;
    for (size_t at = 0; at < bytes.size(); at += piece)
        hash.update(bytes.data() + at, std::min(piece, bytes.size() - at));
    return hash.hex_digest();
}

TEST(Sha256, GivesTheStandardsDigestsFedInAnyPieces) {
    // FIPS 180-4's examples and hashlib.sha256 of 1,000,000 'a' and of 300 x bytes 0..255.
    std::string bytes;
    for (int i = 0; i < 300 * 256; ++i) bytes += char(i % 256);
    for (size_t piece : {1, 7, 63, 64, 65, 4096}) {
        EXPECT_EQ(sha256("", piece),
                  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        EXPECT_EQ(sha256("abc", piece),
                  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        EXPECT_EQ(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", piece),
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        EXPECT_EQ(sha256(std::string(1000000, 'a'), piece),
                  "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
        EXPECT_EQ(sha256(bytes, piece),
                  "f8b0585eb91f58c007a5634362c9f90d8543822c113f702523bc7b73408a9392");
    }
}

TEST(IntegrityManifest, WritesMegatronsBytesAndChecksEveryFile) {
    mt::test::TempDir dir;
    const fs::path iteration = dir.path() / "iter_0000007";
    fs::copy(mt::test::fixtures_dir() / "torch_dist" / "gpt2_tp1" / "iter_0000007", iteration);
    mt::write_integrity_manifest(iteration);
    EXPECT_EQ(mt::test::read_file(iteration / "integrity.json"),
              mt::test::read_file(mt::test::fixtures_dir() / "integrity_manifest" /
                                  "gpt2_tp1_integrity.json"));
    // Written again over its own manifest: the manifest leaves itself out.
    mt::write_integrity_manifest(iteration);
    EXPECT_EQ(mt::test::read_file(iteration / "integrity.json"),
              mt::test::read_file(mt::test::fixtures_dir() / "integrity_manifest" /
                                  "gpt2_tp1_integrity.json"));
    mt::verify_integrity_manifest(iteration);
    // A changed byte and a missing file are both named; a file the manifest does not list is
    // not checked (as Megatron).
    std::ofstream(iteration / "extra.txt") << "not listed";
    {
        std::fstream f(iteration / "common.pt", std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(100);
        f.put('\x7f');
    }
    fs::remove(iteration / "metadata.json");
    try {
        mt::verify_integrity_manifest(iteration);
        FAIL() << "a changed checkpoint passed";
    } catch (const mt::Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("Checkpoint integrity verification failed for 2 file(s)"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("  common.pt: hash mismatch (expected efa20fefe2edbd7c..., got "),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("  metadata.json: file missing or unreadable"), std::string::npos)
            << what;
        EXPECT_EQ(what.find("extra.txt"), std::string::npos) << what;
    }
    fs::remove(iteration / "integrity.json");
    EXPECT_THROW(mt::verify_integrity_manifest(iteration), mt::Error);
}

TEST(IntegrityManifest, RefusesWhatIsNoManifest) {
    mt::test::TempDir dir;
    const auto refused = [&](const std::string& text, const std::string& says) {
        std::ofstream(dir.path() / "integrity.json", std::ios::trunc) << text;
        try {
            mt::verify_integrity_manifest(dir.path());
            ADD_FAILURE() << "accepted: " << text;
        } catch (const mt::Error& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    };
    refused("{", "not JSON");
    refused("[]", "not a JSON object");
    refused(R"({"algorithm": "md5", "files": {}})", "unsupported hash algorithm");
    refused(R"({"algorithm": "sha256"})", "no \"files\" object");
    refused(R"({"files": {"a": 1}})", "the digest of 'a' is not a string");
    // A name that leaves the directory is reported as a file it cannot check.
    refused(R"({"files": {"../../etc/passwd": "00"}})", "../../etc/passwd: file missing");
}

}  // namespace
