// A tokenizer against a fixture's per-document digests of the shared corpora ("corpora":
// [{"file", "docs", "total_ids", "fnv1a64"}], as the tokenizer fixture scripts write them).
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <functional>
#include <string>
#include <vector>

#include "corpus_digests.h"
#include "test_support.h"

namespace mt::test {

// Every document of every corpus (from $MEGATRON_TEST_DATA) must give the digested ids;
// `reference` names the library that made them in failure messages.
inline void expect_corpus_digests(
    simdjson::dom::array corpora,
    const std::function<std::vector<int32_t>(const std::string&)>& encode,
    const std::string& reference) {
    for (auto f : corpora) {
        const std::string rel{std::string_view(f["file"])};
        auto path = test_data(rel);
        ASSERT_TRUE(path) << "missing test data file " << rel;
        const std::vector<std::string> docs = corpus_documents(*path);
        ASSERT_EQ(docs.size(), size_t(int64_t(f["docs"]))) << rel;
        size_t index = 0, total = 0, mismatches = 0;
        for (auto h : f["fnv1a64"].get_array()) {
            const std::vector<int32_t> ids = encode(docs[index]);
            total += ids.size();
            if (fnv1a64_hex(ids) != std::string_view(h) && mismatches++ == 0)
                ADD_FAILURE() << rel << ": document " << index << " gives other ids than "
                              << reference;
            ++index;
        }
        EXPECT_EQ(mismatches, 0u) << rel << ": documents that differ from " << reference;
        EXPECT_EQ(total, size_t(int64_t(f["total_ids"]))) << rel;
    }
}

}  // namespace mt::test
