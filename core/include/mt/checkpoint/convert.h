// Checkpoint conversion (megatron-convert, Megatron's tools/checkpoint/convert.py): any format and
// tensor/pipeline layout in, any format and layout out, through the whole (canonical) tensors of
// the model that the checkpoint's own args describe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mt/api.h"
#include "mt/checkpoint.h"
#include "mt/model.h"

namespace mt {

// A checkpoint of any format and layout, read rank by rank with its tensors viewing the files
// (memory-mapped), as each parameter's pieces: whole(i) joins params[i]'s when it is needed, so a
// streaming conversion holds one whole tensor at a time. A whole-tensor format read through
// CheckpointFormat::load_streamed (hf, llama_meta, torch_dist) gives placeholders as pieces,
// made (converted from the files) only by piece() / whole().
struct SourceCheckpoint {
    CheckpointLayout layout;            // how the source was split into rank files
    CheckpointState head;               // rank (0, 0)'s state without tensors: args, iteration
    ModelArgs args;                     // the model flags the args describe (tensor parallel 1)
    std::vector<ParameterInfo> params;  // family.parameters(args)
    // params[i]'s piece on each source tensor rank: its values, or a placeholder (shape and
    // dtype only) that make_piece makes.
    std::vector<std::vector<Tensor>> pieces;
    // A piece's values: a placeholder's made by the loader, any other piece itself.
    std::function<Tensor(const Tensor& piece)> make_piece = [](const Tensor& t) { return t; };

    // pieces[i][rank] with its values (made now when it is a placeholder).
    MT_API Tensor piece(size_t i, size_t rank) const;
    // params[i]'s whole tensor: a view of the file for a tensor kept whole, else joined (a copy).
    MT_API Tensor whole(size_t i) const;
};

// Reads every rank of the latest checkpoint in `dir` and finds each parameter's pieces by its
// shard spec (a progress bar on a terminal when `progress`); a whole-tensor format is read with
// load_streamed, its tensors made when asked for. Errors name the file, rank and key.
MT_API SourceCheckpoint load_source_checkpoint(CheckpointFormat& loader,
                                               const std::filesystem::path& dir,
                                               const ModelFamily& family, bool progress);

struct ConvertOptions {
    // The target layout; 0 keeps the source's (as its args give it, else as its files are split).
    int64_t target_tensor_parallel = 0, target_pipeline_parallel = 0;
    // The expert-parallel ranks a MoE model's experts are spread over (the torch format's files
    // per expert rank; the other formats record it in the args); 0 keeps the source's.
    int64_t target_expert_parallel = 0;
    // The tokenizer's vocabulary: the target's table is padded to it as Megatron pads for the
    // target tensor parallelism (rows cut, or the last row repeated). Absent: kept as is.
    std::optional<int64_t> true_vocab_size;
    std::optional<int64_t> make_vocab_size_divisible_by;  // absent: the source args' (or 128)
    // The target's parameter names: "local" or "transformer_engine"; absent: the source's.
    std::optional<std::string> transformer_impl;
    bool legacy = false;  // save as a legacy model (use_legacy_models: legacy key names)
    std::optional<int64_t> iteration;  // the saved iteration; absent: the source's
    // The saved weights' dtype (convert.py's --bf16 / --fp16 cast them, and the args say so);
    // absent: the source's.
    std::optional<DType> dtype;
    // Messages for the user (what was found, what is written).
    std::function<void(const std::string&)> log = [](const std::string&) {};
    bool progress = true;  // a progress bar on a terminal
};

// Loads the latest checkpoint of `load_dir` rank by rank (tensors view its files), reshards it
// to the target layout and saves it with `saver`, streaming: each target tensor is joined from
// its source pieces, re-padded and cast only when the saver writes it (CheckpointFormat::
// save_streamed; a per-rank format writes every target rank's file at once), and the source's
// pages are let go once written. A source read with load_streamed (hf, llama_meta, torch_dist)
// makes each tensor only when the target tensor that needs it is written; the next tensor is
// made on a second thread while one is written. Memory: a few of the largest tensors (whole and in
// pieces: the one written, the next, and a wrongly guessed one) and the index of the tensors'
// names and places; every format here loads (torch_dist: box by box) and saves (hf: tensor by
// tensor) streamed. A progress bar on a terminal counts tensors and bytes.
// The model tensors, iteration and args travel; optimizer, scheduler and RNG state do not (as
// with convert.py). Errors name the file, rank and key.
MT_API void convert_checkpoint(CheckpointFormat& loader, const std::filesystem::path& load_dir,
                               CheckpointFormat& saver, const std::filesystem::path& save_dir,
                               const ModelFamily& family, const ConvertOptions& options);

}  // namespace mt
