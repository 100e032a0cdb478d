// Inference throughput of a model family (gpt unless --family says otherwise: mamba for a
// Mamba-2 folder, t5 for a Megatron T5 checkpoint) on a Hugging Face folder or a Megatron
// checkpoint: prefill and greedy decode tokens/s (over the KV cache / recurrent state) at each
// batch size (an encoder-decoder model's prefill is the encoder over the prompt and the decoder's
// first step from one start token; decode follows from there), with the process's resident memory
// after each decode (what prefill's buffers left held included), beside this machine's memory
// bandwidth measured in the same run, so decode can be read against its limit (weight bytes per
// step / bandwidth).
//   mt_bench_inference DIR [--prompt 128] [--decode 64] [--batch 1,8] [--repeat 2]
//                      [--family gpt] [--bf16]
//   mt_bench_inference --bandwidth-only
// --no-bandwidth skips the bandwidth loops (for profiling the model alone).
// Threads: OMP_NUM_THREADS (our OpenMP loops and OpenBLAS both read it).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "mt/cli/openmp_waiting.h"
#include "mt/error.h"
#include "mt/infer/model_loader.h"
#include "mt/infer/sampler.h"
#include "mt/nn/inference_state.h"
#include "mt/nn/parameter.h"
#include "mt/registry.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Bandwidth {
    double read_gbs = 0, triad_gbs = 0;  // 1e9 bytes per second
};

// Read-only streaming (what a GEMV over the weights does) and STREAM's triad a = b + s*c, on
// arrays far larger than the last-level cache, with the OpenMP threads the model uses; best of 5.
Bandwidth measure_bandwidth() {
    constexpr int64_t kFloats = int64_t(1) << 28;  // 1 GiB per array
    constexpr int kBlock = 64;                     // independent accumulators: no add latency
    std::unique_ptr<float[]> a(new float[kFloats]), b(new float[kFloats]), c(new float[kFloats]);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < kFloats; ++i) {  // first touch by the threads that stream them
        a[i] = 0.0f;
        b[i] = 1.0f;
        c[i] = 2.0f;
    }
    Bandwidth best;
    float sink = 0;
    for (int r = 0; r < 5; ++r) {
        auto start = Clock::now();
        float total = 0;
#pragma omp parallel reduction(+ : total)
        {
            float acc[kBlock] = {};
#pragma omp for schedule(static)
            for (int64_t i = 0; i < kFloats; i += kBlock)
                for (int j = 0; j < kBlock; ++j) acc[j] += b[i + j];
            for (float x : acc) total += x;
        }
        best.read_gbs = std::max(best.read_gbs, kFloats * 4.0 / seconds_since(start) / 1e9);
        sink += total;

        start = Clock::now();
        const float s = 3.0f;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < kFloats; ++i) a[i] = b[i] + s * c[i];
        best.triad_gbs = std::max(best.triad_gbs, kFloats * 12.0 / seconds_since(start) / 1e9);
        sink += a[kFloats / 2];
    }
    MT_CHECK(sink > 0, "bandwidth loops produced ", sink);  // keeps them from being optimised out
    return best;
}

// Bytes of weights one decode step of `batch` rows reads: every parameter except the embedding
// tables it only gathers rows from (positions, and the word embeddings unless the output layer is
// tied to them); of a MoE layer's experts, those the step's tokens are routed to: each row picks
// topk of the `experts`, so under uniform routing a fraction 1 - (1 - topk/experts)^batch of them.
int64_t weight_bytes_per_step(mt::Model& model, const mt::ModelArgs& args, int64_t batch) {
    bool untied = false;
    for (mt::nn::Parameter* p : model.parameters()) untied |= p->name == "output_layer.weight";
    double read = 1.0;
    if (auto e = args.find("num-experts"); e != args.end()) {
        const auto k = args.find("moe-router-topk");
        const double experts = std::stod(e->second);
        const double topk = k != args.end() ? std::stod(k->second) : 2.0;
        read = 1.0 - std::pow(1.0 - topk / experts, double(batch));
    }
    double bytes = 0;
    for (mt::nn::Parameter* p : model.parameters()) {
        if (p->name == "embedding.position_embeddings.weight") continue;
        if (untied && p->name == "embedding.word_embeddings.weight") continue;
        bytes += double(p->value.nbytes()) * (p->expert ? read : 1.0);
    }
    return int64_t(bytes);
}

// This process's resident and peak resident memory in MB (/proc/self/status VmRSS, VmHWM).
std::pair<double, double> resident_mb() {
    std::ifstream status("/proc/self/status");
    double rss = 0, peak = 0;
    for (std::string line; std::getline(status, line);) {
        if (line.starts_with("VmRSS:")) rss = std::stod(line.substr(6)) / 1024;
        if (line.starts_with("VmHWM:")) peak = std::stod(line.substr(6)) / 1024;
    }
    return {rss, peak};
}

int64_t parameter_count(mt::Model& model) {
    int64_t n = 0;
    for (mt::nn::Parameter* p : model.parameters()) n += p->value.numel();
    return n;
}

// The greedy pick of each row of logits [B, 1, V] as next tokens [B, 1].
mt::Tensor greedy_next(const mt::Tensor& logits, int64_t vocab_size) {
    const int64_t B = logits.size(0), V = logits.size(2);
    mt::Tensor next = mt::Tensor::empty({B, 1}, mt::DType::i64);
    mt::infer::SamplingParams greedy;
    greedy.top_k = 1;
    mt::infer::SamplingRng rng;
    const mt::Tensor rows = logits.contiguous();
    for (int64_t b = 0; b < B; ++b)
        next.data<int64_t>()[b] = mt::infer::sample_token(
            std::span<const float>(rows.data<float>() + b * V, size_t(V)), greedy, vocab_size, rng);
    return next;
}

struct Options {
    std::string dir, family = "gpt";
    mt::DType params_dtype = mt::DType::f32;
    int64_t prompt = 128, decode = 64;
    std::vector<int64_t> batches = {1, 8};
    int repeat = 2;
    bool bandwidth_only = false, no_bandwidth = false;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            MT_CHECK(i + 1 < argc, a, " needs a value");
            return argv[++i];
        };
        if (a == "--prompt")
            o.prompt = std::stoll(value());
        else if (a == "--decode")
            o.decode = std::stoll(value());
        else if (a == "--family")
            o.family = value();
        else if (a == "--repeat")
            o.repeat = std::stoi(value());
        else if (a == "--bf16")
            o.params_dtype = mt::DType::bf16;
        else if (a == "--bandwidth-only")
            o.bandwidth_only = true;
        else if (a == "--no-bandwidth")
            o.no_bandwidth = true;
        else if (a == "--batch") {
            o.batches.clear();
            std::stringstream list(value());
            for (std::string item; std::getline(list, item, ',');)
                o.batches.push_back(std::stoll(item));
        } else if (o.dir.empty() && !a.starts_with("--"))
            o.dir = a;
        else
            MT_FAIL("unknown argument ", a);
    }
    MT_CHECK(o.bandwidth_only || !o.dir.empty(),
             "usage: mt_bench_inference DIR [--prompt N] [--decode N] [--batch 1,8] "
             "[--repeat N] [--family NAME] [--bf16] [--no-bandwidth] | --bandwidth-only");
    MT_CHECK(o.prompt > 0 && o.decode > 0 && o.repeat > 0 && !o.batches.empty(),
             "--prompt, --decode, --repeat and --batch must be positive");
    return o;
}

void run(const Options& o) {
    std::printf("threads=%d\n", omp_get_max_threads());
    const Bandwidth bw = o.no_bandwidth ? Bandwidth{} : measure_bandwidth();
    if (!o.no_bandwidth)
        std::printf("bandwidth read_gbs=%.2f triad_gbs=%.2f\n", bw.read_gbs, bw.triad_gbs);
    std::fflush(stdout);
    if (o.bandwidth_only) return;

    mt::Registry& registry = mt::Registry::global();
    auto family = registry.create_model(o.family);
    auto start = Clock::now();
    mt::infer::LoadedModel loaded =
        mt::infer::load_for_inference(registry, *family, o.dir, {}, "", o.params_dtype);
    mt::Model& model = *loaded.model;
    const int64_t vocab_size = std::stoll(loaded.args.at("padded-vocab-size"));
    std::printf("model parameters=%lld step_weight_bytes=%lld load_seconds=%.2f\n",
                static_cast<long long>(parameter_count(model)),
                static_cast<long long>(weight_bytes_per_step(model, loaded.args, 1)),
                seconds_since(start));
    std::fflush(stdout);

    std::mt19937_64 gen(0);
    std::uniform_int_distribution<int64_t> token(0, vocab_size - 1);
    for (int64_t B : o.batches) {
        mt::Tensor prompt = mt::Tensor::empty({B, o.prompt}, mt::DType::i64);
        for (int64_t i = 0; i < B * o.prompt; ++i) prompt.data<int64_t>()[i] = token(gen);
        // An encoder-decoder model: the prompt is the encoder's input, and the decoder starts
        // from one token (any: the weights are random), as megatron-generate starts from [BOS].
        const bool encoder = model.has_encoder();
        mt::Tensor lengths = mt::Tensor::empty({B}, mt::DType::i32), start_token;
        std::fill_n(lengths.data<int32_t>(), B, int32_t(o.prompt));
        if (encoder) start_token = prompt.slice(1, 0, 1).contiguous();
        const int64_t positions = encoder ? 1 + o.decode : o.prompt + o.decode;
        auto cache = model.make_inference_state(B, positions);
        double prefill = 1e30, decode = 1e30;
        for (int r = 0; r < o.repeat; ++r) {
            cache->clear();
            start = Clock::now();
            if (encoder) model.encode(prompt, lengths, *cache);
            mt::Tensor logits = model.logits(encoder ? start_token : prompt, cache.get(), 1);
            prefill = std::min(prefill, seconds_since(start));
            start = Clock::now();
            for (int64_t t = 0; t < o.decode; ++t)
                logits = model.logits(greedy_next(logits, vocab_size), cache.get(), 1);
            greedy_next(logits, vocab_size);
            decode = std::min(decode, seconds_since(start));
        }
        std::printf("prefill batch=%lld tokens=%lld seconds=%.4f tokens_per_s=%.2f\n",
                    static_cast<long long>(B), static_cast<long long>(o.prompt), prefill,
                    double(B * o.prompt) / prefill);
        const auto [rss, peak] = resident_mb();
        std::printf(
            "decode batch=%lld tokens=%lld seconds=%.4f tokens_per_s=%.2f "
            "bandwidth_limit_tokens_per_s=%.2f rss_mb=%.0f peak_rss_mb=%.0f\n",
            static_cast<long long>(B), static_cast<long long>(o.decode), decode,
            double(B * o.decode) / decode,
            double(B) * bw.read_gbs * 1e9 / double(weight_bytes_per_step(model, loaded.args, B)),
            rss, peak);
        std::fflush(stdout);
    }
}

}  // namespace

int main(int argc, char** argv) {
    mt::cli::spin_briefly_unless_chosen(argv);  // as megatron-generate's threads wait
    try {
        run(parse(argc, argv));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
