// Megatron's MMIDIDX indexed dataset: a prefix P names P.bin (token ids back to back) and
// P.idx (header + sequence lengths, byte pointers and document indices). The reader maps both
// files (zero-copy); the builder writes them the way megatron/core/datasets/indexed_dataset.py
// does, byte for byte, under temporary names renamed into place by finalize().
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mt/api.h"
#include "mt/data/token_sequences.h"
#include "mt/io/mapped_file.h"

namespace mt::data {

// The dtype codes stored in the .idx header (Megatron's DType enum).
enum class IndexDType : uint8_t {
    u8 = 1,
    i8 = 2,
    i16 = 3,
    i32 = 4,
    i64 = 5,
    f64 = 6,
    f32 = 7,
    u16 = 8
};

MT_API int64_t index_dtype_size(IndexDType dtype);
MT_API const char* index_dtype_name(IndexDType dtype);
// Megatron's DType.optimal_dtype: uint16 when the vocabulary has fewer than 65500 ids, else int32.
MT_API IndexDType optimal_index_dtype(int64_t vocab_size);

MT_API std::filesystem::path bin_path(const std::string& prefix);  // prefix + ".bin"
MT_API std::filesystem::path idx_path(const std::string& prefix);  // prefix + ".idx"

class MT_API IndexedDataset : public TokenSequences {
  public:
    // Opens P.bin and P.idx; `multimodal` reads the trailing sequence-mode array (it is not
    // recorded in the file). Throws mt::Error naming the file and what is wrong with it.
    static IndexedDataset open(const std::string& prefix, bool multimodal = false);

    IndexDType dtype() const { return dtype_; }
    int64_t num_sequences() const override { return num_sequences_; }
    int64_t num_documents() const { return num_doc_entries_ - 1; }
    int64_t num_tokens() const { return num_tokens_; }

    int32_t sequence_length(int64_t i) const override;
    int64_t sequence_pointer(int64_t i) const;  // byte offset in .bin
    int64_t document_index(int64_t k) const;    // k in [0, num_documents()]; entry k starts doc k
    int8_t sequence_mode(int64_t i) const;      // multimodal only

    // Raw bytes of sequence i in the .bin (length * itemsize bytes, dtype()).
    const uint8_t* sequence_bytes(int64_t i) const;
    // Tokens [offset, offset + length) of sequence i widened to int64 (length -1: to the end).
    std::vector<int64_t> get(int64_t i, int64_t offset = 0, int64_t length = -1) const override;

    const io::MappedFile& idx_file() const { return idx_; }
    const io::MappedFile& bin_file() const { return bin_; }

  private:
    io::MappedFile idx_, bin_;
    IndexDType dtype_ = IndexDType::u16;
    int64_t num_sequences_ = 0, num_doc_entries_ = 0, num_tokens_ = 0;
    size_t lengths_off_ = 0, pointers_off_ = 0, docs_off_ = 0, modes_off_ = 0;
    bool multimodal_ = false;
};

class MT_API IndexedDatasetBuilder {
  public:
    // Starts P.bin for tokens of `dtype`. Data goes to temporary files next to the outputs;
    // they become P.bin / P.idx only in finalize(), and are removed if the builder dies first.
    IndexedDatasetBuilder(const std::string& prefix, IndexDType dtype, bool multimodal = false);
    ~IndexedDatasetBuilder();
    IndexedDatasetBuilder(const IndexedDatasetBuilder&) = delete;
    IndexedDatasetBuilder& operator=(const IndexedDatasetBuilder&) = delete;

    // One sequence, no document boundary (Megatron's add_item).
    void add_item(std::span<const int32_t> tokens, int8_t mode = 0);
    // All sequences of one document: `lengths` partitions `tokens`; then a document boundary.
    void add_document(std::span<const int32_t> tokens, std::span<const int32_t> lengths,
                      std::span<const int8_t> modes = {});
    // A document boundary after the sequences added so far (Megatron's end_document).
    void end_document();
    // Appends a whole existing dataset (Megatron's add_index); dtypes must match.
    void add_index(const std::string& prefix);
    // Writes P.idx and renames both files into place.
    void finalize();

    int64_t num_sequences() const { return static_cast<int64_t>(lengths_.size()); }
    int64_t num_documents() const { return static_cast<int64_t>(doc_indices_.size()) - 1; }

  private:
    void write_tokens(std::span<const int32_t> tokens);
    void write_raw(const void* data, size_t bytes);
    void flush();

    std::string prefix_;
    IndexDType dtype_;
    bool multimodal_;
    // Where the files go (a symlink's target: the link is written through) and their
    // temporaries, renamed onto them by finalize().
    std::filesystem::path bin_out_, idx_out_, bin_tmp_, idx_tmp_;
    std::FILE* bin_ = nullptr;
    std::vector<uint8_t> buffer_;
    std::vector<int32_t> lengths_;
    std::vector<int64_t> doc_indices_{0};
    std::vector<int8_t> modes_;
    bool finalized_ = false;
};

}  // namespace mt::data
