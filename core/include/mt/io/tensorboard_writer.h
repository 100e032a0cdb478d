// TensorBoard event files (--tensorboard-dir): TFRecord-framed Event protocol buffers holding
// scalar summaries, the files torch.utils.tensorboard.SummaryWriter writes for Megatron and
// that TensorBoard reads. Written with our own tiny protobuf encoder: no TensorFlow needed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "mt/api.h"

namespace mt::io {

// CRC-32C (Castagnoli), the checksum TFRecord frames use, and its "masked" form.
MT_API uint32_t crc32c(const void* data, size_t size);
MT_API uint32_t masked_crc32c(const void* data, size_t size);

class MT_API TensorBoardWriter {
  public:
    // Creates <dir>/events.out.tfevents.<seconds>.<host>.<pid>.0 (and <dir>), and writes the
    // "brain.Event:2" version record.
    explicit TensorBoardWriter(const std::filesystem::path& dir);
    ~TensorBoardWriter();
    TensorBoardWriter(const TensorBoardWriter&) = delete;
    TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

    // One scalar at a step, as SummaryWriter.add_scalar(tag, value, step, wall_time) writes it.
    void add_scalar(std::string_view tag, float value, int64_t step, double wall_time);
    void add_scalar(std::string_view tag, float value, int64_t step);  // wall time = now
    void flush();

    const std::filesystem::path& path() const { return path_; }

    // The serialized Event message of one scalar (exposed for tests).
    static std::string scalar_event(std::string_view tag, float value, int64_t step,
                                    double wall_time);
    // One TFRecord frame around `payload`.
    static std::string frame(std::string_view payload);

  private:
    void write_record(std::string_view payload);

    std::filesystem::path path_;
    std::FILE* file_ = nullptr;
};

}  // namespace mt::io
