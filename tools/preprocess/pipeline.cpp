#include "pipeline.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <future>
#include <memory>
#include <thread>

#include "bounded_queue.h"
#include "input_lines.h"
#include "mt/error.h"
#include "mt/log.h"
#include "mt/progress.h"

namespace mt::preprocess {

namespace {

constexpr size_t kBatchLines = 64;
constexpr size_t kBatchBytes = 1 << 20;
constexpr int kMaxReportedBadLines = 20;

// A run of input lines, stored back to back with simdjson's padding after the last one.
struct Batch {
    struct Line {
        size_t offset, size;
        const std::filesystem::path* file;  // owned by the InputLines, alive for the batch
        int64_t line_number;
        // "FILE:LINE", built only for the lines that need an error message.
        std::string location() const { return str(file->string(), ":", line_number); }
    };
    std::string text;
    std::vector<Line> lines;
    int64_t bytes = 0;  // input bytes these lines took, terminators included
};

struct Document {
    std::vector<KeyTokens> keys;
    std::string error;  // non-empty: the line could not be encoded
};

struct Job {
    Batch batch;
    std::vector<Document> documents;
    std::exception_ptr failure;  // an unexpected error in a worker
    std::promise<void> done;
};
using JobPtr = std::shared_ptr<Job>;

struct PartitionStats {
    int64_t documents = 0, bad_lines = 0, bytes = 0;
};

// Closes the queues and joins the threads however the writer leaves.
struct PipelineThreads {
    BoundedQueue<JobPtr>& ordered;
    BoundedQueue<JobPtr>& work;
    std::vector<std::thread> threads;
    ~PipelineThreads() {
        ordered.close();
        work.close();
        for (auto& t : threads) t.join();
    }
};

void read_batches(InputLines& lines, BoundedQueue<JobPtr>& ordered, BoundedQueue<JobPtr>& work) {
    std::string_view line;
    JobPtr job = std::make_shared<Job>();
    auto flush = [&] {
        if (job->batch.lines.empty()) return true;
        job->batch.text.append(simdjson::SIMDJSON_PADDING, '\0');
        if (!ordered.push(job) || !work.push(job)) return false;
        job = std::make_shared<Job>();
        return true;
    };
    while (lines.next(line)) {
        Batch& b = job->batch;
        b.lines.push_back(
            {b.text.size(), line.size(), &lines.current_file(), lines.current_line()});
        b.text.append(line);
        b.text.push_back('\n');
        b.bytes += static_cast<int64_t>(line.size()) + 1;
        if ((b.lines.size() >= kBatchLines || b.text.size() >= kBatchBytes) && !flush()) return;
    }
    flush();
}

void encode_batches(const Tokenizer& tokenizer, const EncoderOptions& options,
                    BoundedQueue<JobPtr>& work) {
    DocumentEncoder encoder(tokenizer, options);
    JobPtr job;
    while (work.pop(job)) {
        try {
            const Batch& b = job->batch;
            job->documents.resize(b.lines.size());
            for (size_t i = 0; i < b.lines.size(); ++i) {
                try {
                    std::string_view line(b.text.data() + b.lines[i].offset, b.lines[i].size);
                    encoder.encode(line, job->documents[i].keys);
                } catch (const BadLine& bad) {
                    job->documents[i].error = bad.message;
                }
            }
        } catch (...) {
            job->failure = std::current_exception();
        }
        job->done.set_value();
    }
}

// A failed multi-partition run leaves no partition datasets behind.
void remove_partition_outputs(const PreprocessConfig& config) {
    for (int p = 0; p < config.partitions; ++p)
        for (const auto& key : config.encoder.json_keys) {
            std::string prefix = output_name(config.output_prefix + "_" + std::to_string(p), key,
                                             config.encoder.split_sentences);
            std::error_code ec;
            std::filesystem::remove(data::bin_path(prefix), ec);
            std::filesystem::remove(data::idx_path(prefix), ec);
        }
}

// Megatron's progress line (preprocess_data.py print_processing_stats).
std::string progress_line(int64_t count, int64_t bytes,
                          std::chrono::steady_clock::time_point start) {
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char line[160];
    std::snprintf(line, sizeof line, "Processed %lld documents (%.2f docs/s, %.2f MB/s).",
                  static_cast<long long>(count), count / elapsed, bytes / elapsed / 1048576.0);
    return line;
}

// Total input bytes when every file's size is its text size (no compression), else -1.
int64_t plain_input_bytes(const std::vector<std::filesystem::path>& files) {
    int64_t total = 0;
    for (const auto& f : files) {
        if (f.extension() == ".zst") return -1;
        total += static_cast<int64_t>(std::filesystem::file_size(f));
    }
    return total;
}

// Encodes the lines of one partition into <prefix>_<key>_<level> datasets.
PartitionStats encode_partition(const PreprocessConfig& config, const Tokenizer& tokenizer,
                                InputLines& lines, const std::string& prefix, int workers,
                                Progress& progress) {
    const auto dtype = data::optimal_index_dtype(tokenizer.vocab_size());
    std::vector<std::unique_ptr<data::IndexedDatasetBuilder>> builders;
    for (const auto& key : config.encoder.json_keys)
        builders.push_back(std::make_unique<data::IndexedDatasetBuilder>(
            output_name(prefix, key, config.encoder.split_sentences), dtype));

    // Bounded so that at most a few batches per worker are in memory at once.
    BoundedQueue<JobPtr> ordered(4 * workers + 4), work(4 * workers + 4);
    std::exception_ptr reader_failure;
    PartitionStats stats;
    {
        PipelineThreads threads{ordered, work, {}};
        threads.threads.emplace_back([&] {
            try {
                read_batches(lines, ordered, work);
            } catch (...) {
                reader_failure = std::current_exception();
            }
            ordered.close();
            work.close();
        });
        for (int w = 0; w < workers; ++w)
            threads.threads.emplace_back([&] { encode_batches(tokenizer, config.encoder, work); });

        const auto start = std::chrono::steady_clock::now();
        JobPtr job;
        while (ordered.pop(job)) {
            job->done.get_future().wait();
            if (job->failure) std::rethrow_exception(job->failure);
            const Batch& b = job->batch;
            for (size_t i = 0; i < b.lines.size(); ++i) {
                Document& doc = job->documents[i];
                if (!doc.error.empty()) {
                    MT_CHECK(config.skip_bad_lines, b.lines[i].location(), ": ", doc.error);
                    if (++stats.bad_lines <= kMaxReportedBadLines)
                        progress.print_line(str("warning: ", b.lines[i].location(), ": ", doc.error,
                                                " (line skipped)"));
                    continue;
                }
                for (size_t k = 0; k < builders.size(); ++k)
                    builders[k]->add_document(doc.keys[k].ids, doc.keys[k].lengths);
                ++stats.documents;
                if (config.log_interval > 0 && stats.documents % config.log_interval == 0)
                    progress.print_line(
                        progress_line(stats.documents, stats.bytes + b.bytes, start));
            }
            stats.bytes += b.bytes;
            progress.add(static_cast<int64_t>(b.lines.size()), b.bytes);
        }
    }
    if (reader_failure) std::rethrow_exception(reader_failure);
    for (auto& b : builders) b->finalize();
    return stats;
}

}  // namespace

std::string output_name(const std::string& prefix, const std::string& key, bool split_sentences) {
    return prefix + "_" + key + "_" + (split_sentences ? "sentence" : "document");
}

PreprocessResult run_preprocess(const PreprocessConfig& config, const Tokenizer& tokenizer) {
    MT_CHECK(!config.encoder.json_keys.empty(), "--json-keys: at least one key is needed");
    MT_CHECK(config.workers >= 1, "--workers must be at least 1, got ", config.workers);
    MT_CHECK(config.partitions >= 1, "--partitions must be at least 1, got ", config.partitions);
    MT_CHECK(config.workers % config.partitions == 0, "--workers (", config.workers,
             ") must be divisible by --partitions (", config.partitions, ")");
    const auto start = std::chrono::steady_clock::now();
    const auto files = resolve_inputs(config.input, config.partitions);
    for (const auto& f : files) log::info("Opening ", f.string());
    // An output that is an input (the same file under any name) would be overwritten.
    for (const std::string& key : config.encoder.json_keys)
        for (const char* ext : {".bin", ".idx"}) {
            const std::filesystem::path out =
                output_name(config.output_prefix, key, config.encoder.split_sentences) + ext;
            std::error_code ec;
            for (const auto& f : files)
                MT_CHECK(!std::filesystem::equivalent(out, f, ec), "--output-prefix ",
                         config.output_prefix, ": its output ", out.string(), " is the input ",
                         f.string());
        }

    PartitionPlan plan{0, config.partitions, 0};
    if (config.partitions > 1 && config.keep_sequential_samples)
        plan.block =
            std::max<int64_t>(1, (count_lines(files) + config.partitions - 1) / config.partitions);

    PreprocessResult result;
    std::vector<PartitionStats> stats(config.partitions);
    Progress progress("megatron-preprocess", -1, "docs", plain_input_bytes(files));
    if (config.partitions == 1) {
        InputLines lines(files, plan);
        stats[0] = encode_partition(config, tokenizer, lines, config.output_prefix, config.workers,
                                    progress);
    } else {
        // Partitions run side by side, each with workers / partitions threads, into
        // <prefix>_<i>_..., then merge in partition order as preprocess_data.py does.
        std::vector<std::future<PartitionStats>> running;
        for (int p = 0; p < config.partitions; ++p) {
            PartitionPlan mine = plan;
            mine.index = p;
            running.push_back(std::async(std::launch::async, [&, mine, p] {
                InputLines lines(files, mine);
                return encode_partition(config, tokenizer, lines,
                                        config.output_prefix + "_" + std::to_string(p),
                                        config.workers / config.partitions, progress);
            }));
        }
        std::exception_ptr failure;
        for (int p = 0; p < config.partitions; ++p) {
            try {
                stats[p] = running[p].get();
            } catch (...) {
                if (!failure) failure = std::current_exception();
            }
        }
        if (failure) {
            remove_partition_outputs(config);
            std::rethrow_exception(failure);
        }
        const auto dtype = data::optimal_index_dtype(tokenizer.vocab_size());
        for (const auto& key : config.encoder.json_keys) {
            data::IndexedDatasetBuilder merged(
                output_name(config.output_prefix, key, config.encoder.split_sentences), dtype);
            for (int p = 0; p < config.partitions; ++p)
                merged.add_index(output_name(config.output_prefix + "_" + std::to_string(p), key,
                                             config.encoder.split_sentences));
            merged.finalize();
        }
    }
    progress.finish();
    for (const auto& s : stats) {
        result.documents += s.documents;
        result.bad_lines += s.bad_lines;
        result.bytes += s.bytes;
    }
    for (const auto& key : config.encoder.json_keys) {
        std::string prefix = output_name(config.output_prefix, key, config.encoder.split_sentences);
        auto ds = data::IndexedDataset::open(prefix);
        result.outputs.push_back(
            {prefix, ds.dtype(), ds.num_documents(), ds.num_sequences(), ds.num_tokens()});
    }
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

}  // namespace mt::preprocess
