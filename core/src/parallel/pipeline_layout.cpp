#include "mt/parallel/pipeline_layout.h"

#include <algorithm>
#include <regex>

#include "mt/error.h"

namespace mt::parallel {

namespace {

// Python's re.sub(pattern, lambda m: m.group(1) * int(m.group(2)), text).
std::string unroll(const std::string& text, const std::regex& pattern) {
    std::string out;
    auto begin = text.cbegin();
    std::smatch m;
    while (std::regex_search(begin, text.cend(), m, pattern)) {
        out.append(begin, m[0].first);
        const long long times = std::stoll(m[2].str());
        MT_CHECK(times <= 100000 && m[1].length() * times <= 10000000,
                 "--pipeline-model-parallel-layout: a repetition of ", times, " is too long");
        for (long long i = 0; i < times; ++i) out += m[1].str();
        begin = m[0].second;
    }
    out.append(begin, text.cend());
    return out;
}

// The layout with its commas dropped and its repetitions written out (Megatron's
// parse_str_to_list before it splits).
std::string unrolled(const std::string& layout) {
    std::string text;
    for (char c : layout)
        if (c != ',') text += c;  // purely cosmetic commas
    return unroll(unroll(text, std::regex(R"(\(([^)]+)\)\*(\d+))")), std::regex(R"((.)\*(\d+))"));
}

std::string quoted(const std::string& layout) {
    return "'" + layout.substr(0, 200) + (layout.size() > 200 ? "...'" : "'");
}

}  // namespace

PipelineLayout parse_pipeline_layout(const std::string& layout) {
    const std::string text = unrolled(layout);
    PipelineLayout out;
    for (char c : text)
        if (c != '|') out.layers += c;
    size_t begin = 0;
    for (;;) {
        const size_t end = std::min(text.find('|', begin), text.size());
        const std::string stage = text.substr(begin, end - begin);
        int64_t decoders = 0, mtps = 0;
        for (char c : stage) {
            MT_CHECK(c == 'E' || c == 'L' || c == 't' || c == 'm',
                     "Invalid layer character: ", std::string(1, c), " (stage=", quoted(stage),
                     ", layout_str=", quoted(text),
                     "), known layer characters: ['E', 'L', 't', 'm']");
            decoders += c == 't';
            mtps += c == 'm';
        }
        out.decoder_layers.push_back(decoders);
        out.mtp_layers.push_back(mtps);
        if (end == text.size()) break;
        begin = end + 1;
    }
    return out;
}

PipelineLayout check_pipeline_layout(const std::string& layout, int stages, int64_t num_layers,
                                     int64_t mtp_num_layers) {
    PipelineLayout parsed = parse_pipeline_layout(layout);
    const int64_t segments = int64_t(parsed.decoder_layers.size());
    MT_CHECK(stages > 0 && segments % stages == 0,
             "The length of pipeline_model_parallel_layout must be divisible by "
             "pipeline_model_parallel_size (num_stages=",
             segments, ", args.pipeline_model_parallel_size=", stages, ")");
    const std::string& all = parsed.layers;
    MT_CHECK(!all.empty() && all.front() == 'E', "The first layer must be embedding, but got ",
             all.empty() ? std::string("nothing") : std::string(1, all.front()), " in ",
             quoted(layout));
    MT_CHECK(all.back() == 'L', "The last layer must be loss, but got ", std::string(1, all.back()),
             " in ", quoted(layout));
    MT_CHECK(std::count(all.begin(), all.end(), 'E') == 1,
             "Embedding must be specified exactly once");
    MT_CHECK(std::count(all.begin(), all.end(), 'L') == 1, "Loss must be specified exactly once");
    const int64_t decoders = std::count(all.begin(), all.end(), 't');
    MT_CHECK(decoders == num_layers, "Number of decoder layers ", decoders,
             " must match num_layers ", num_layers, " (--pipeline-model-parallel-layout ",
             quoted(layout), ")");
    const int64_t mtps = std::count(all.begin(), all.end(), 'm');
    MT_CHECK(mtps == mtp_num_layers, "Number of mtp layers in layout must match mtp_num_layers (",
             mtps, " in ", quoted(layout), ", --mtp-num-layers ", mtp_num_layers, ")");
    const size_t first_mtp = all.find('m');
    MT_CHECK(first_mtp == std::string::npos || all.find('t', first_mtp) == std::string::npos,
             "decoder layers must be placed before MTP layers");
    // Megatron allows the MTP layers a stage of their own before the last; ours run with the
    // loss, on the last stage's last model chunk.
    MT_CHECK(mtps == 0 || parsed.mtp_layers.back() == mtps, "--pipeline-model-parallel-layout ",
             quoted(layout),
             ": not supported yet: MTP layers outside the loss's pipeline segment (Megatron's "
             "standalone MTP stage)");
    return parsed;
}

}  // namespace mt::parallel
