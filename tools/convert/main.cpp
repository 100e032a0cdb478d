// megatron-convert: Megatron-LM's tools/checkpoint/convert.py in C++ (same flags): loads a
// checkpoint of any format and tensor/pipeline layout and saves it in another format and layout.
#include <simdjson.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "mt/checkpoint.h"
#include "mt/checkpoint/convert.h"
#include "mt/cli/tool.h"
#include "mt/error.h"
#include "mt/model.h"
#include "mt/registry.h"

namespace {

namespace po = boost::program_options;

struct ConvertFlags {
    std::string model_type, loader, saver, load_dir, save_dir;
    int64_t target_tp = 0, target_pp = 0, target_ep = 1;
    std::optional<int64_t> true_vocab_size, make_vocab_size_divisible_by;
    std::string vocab_file, checkpoint_type, model_size, loader_impl, saver_impl, megatron_path;
    std::string tokenizer_model, position_embedding_type;
    int64_t max_queue_size = 50;
    bool no_checking = false, bf16 = false, fp16 = false;
};

po::options_description convert_flags(ConvertFlags& f) {
    po::options_description d("Conversion (Megatron's tools/checkpoint/convert.py flags)", 100);
    d.add_options()("model-type", po::value(&f.model_type)->required(),
                    "GPT, BERT, or Mamba (ours: Megatron's hybrid models)")(
        "loader", po::value(&f.loader)->default_value("megatron"),
        "core | legacy | torch_dist | llama_mistral | mixtral_hf | hf (megatron = legacy, mcore = "
        "core; or by module name, as convert.py: loader_core, ...)")(
        "saver", po::value(&f.saver)->default_value("megatron"),
        "core | legacy | torch_dist | hf (megatron = legacy, mcore = core; hf: a Hugging Face "
        "GPT-2, Llama, Mistral or BERT folder; or by module name: saver_core, ...)")(
        "load-dir", po::value(&f.load_dir)->required(), "checkpoint (or Hugging Face) directory")(
        "save-dir", po::value(&f.save_dir)->required(), "directory to write the checkpoint to")(
        "target-tensor-parallel-size", po::value(&f.target_tp),
        "tensor parallelism of the saved checkpoint (default: the source's)")(
        "target-pipeline-parallel-size", po::value(&f.target_pp),
        "pipeline parallelism of the saved checkpoint (default: the source's)")(
        "target-expert-parallel-size", po::value(&f.target_ep)->default_value(1),
        "expert-parallel ranks of the saved checkpoint (the torch format's files per expert rank)")(
        "true-vocab-size", po::value<int64_t>(),
        "the tokenizer's vocabulary: pad the saved table for the target parallelism")(
        "vocab-file", po::value(&f.vocab_file),
        "a JSON vocabulary whose number of entries is the true vocabulary size")(
        "make-vocab-size-divisible-by", po::value<int64_t>(),
        "vocabulary padding multiple (default: the source args', or 128)")(
        "checkpoint-type", po::value(&f.checkpoint_type),
        "llama_mistral: hf (a Hugging Face folder) or meta (params.json, consolidated.NN.pth)")(
        "model-size", po::value(&f.model_size),
        "llama_mistral: llama2-7B, llama3, mistral, ... (the folder's config.json decides)")(
        "tokenizer-model", po::value(&f.tokenizer_model), "accepted; the tokenizer is not read")(
        "loader-transformer-impl", po::value(&f.loader_impl),
        "accepted; the checkpoint's own names are read")(
        "saver-transformer-impl", po::value(&f.saver_impl),
        "parameter names of the saved model: local or transformer_engine (default: the "
        "source's; legacy: local)")("position-embedding-type",
                                    po::value(&f.position_embedding_type),
                                    "accepted; the checkpoint's args decide")(
        "bf16", po::bool_switch(&f.bf16), "save the weights as bfloat16, as convert.py does")(
        "fp16", po::bool_switch(&f.fp16), "save the weights as float16, as convert.py does")(
        "megatron-path", po::value(&f.megatron_path), "accepted and ignored")(
        "max-queue-size", po::value(&f.max_queue_size)->default_value(50),
        "accepted and ignored (no loader/saver queue here)")(
        "no-checking", po::bool_switch(&f.no_checking),
        "accepted; names and shapes are always checked");
    return d;
}

// convert.py's --model-type -> our model family.
std::string model_family(const std::string& model_type) {
    if (model_type == "GPT") return "gpt";
    if (model_type == "BERT") return "bert";
    if (model_type == "T5") return "t5";
    // Ours: Megatron converts hybrid checkpoints with tools/checkpoint/hybrid_conversion.py.
    if (model_type == "Mamba") return "mamba";
    MT_FAIL("--model-type ", model_type, ": supported are GPT, BERT, T5 and Mamba");
}

// convert.py's load_plugin imports "<type>_<name>", then "<name>" itself: a module name
// (--loader loader_mixtral_hf) names the same plugin.
std::string plugin_name(const std::string& type, const std::string& name) {
    const std::string prefix = type + "_";
    return name.starts_with(prefix) && name.size() > prefix.size() ? name.substr(prefix.size())
                                                                   : name;
}

// convert.py's plugin names -> our checkpoint formats.
std::string loader_format(const ConvertFlags& f) {
    if (f.loader == "core" || f.loader == "mcore" || f.loader == "legacy" || f.loader == "megatron")
        return "torch";
    if (f.loader == "torch_dist") return "torch_dist";
    // Megatron-DeepSpeed's global_stepN folders (its deepspeed_to_megatron.py's input).
    if (f.loader == "deepspeed") return "deepspeed";
    // Megatron's loader_mixtral_hf reads a Hugging Face Mixtral folder, as "hf" does.
    if (f.loader == "hf" || f.loader == "mixtral_hf") return "hf";
    if (f.loader == "llama_mistral") {
        MT_CHECK(!f.checkpoint_type.empty(),
                 "--loader llama_mistral needs --checkpoint-type hf|meta");
        MT_CHECK(f.checkpoint_type == "hf" || f.checkpoint_type == "meta", "--checkpoint-type ",
                 f.checkpoint_type, ": supported are hf and meta");
        return f.checkpoint_type == "meta" ? "llama_meta" : "hf";
    }
    MT_CHECK(f.loader != "llava", "not supported yet: --loader ", f.loader);
    MT_FAIL("unknown --loader ", f.loader,
            ": supported are core, legacy, torch_dist, deepspeed, llama_mistral, mixtral_hf "
            "and hf");
}

std::string saver_format(const ConvertFlags& f) {
    if (f.saver == "core" || f.saver == "mcore" || f.saver == "legacy" || f.saver == "megatron")
        return "torch";
    if (f.saver == "torch_dist") return "torch_dist";
    if (f.saver == "hf") return "hf";
    MT_CHECK(f.saver != "llava" && f.saver != "hf_llava", "not supported yet: --saver ", f.saver);
    MT_FAIL("unknown --saver ", f.saver, ": supported are core, legacy, torch_dist and hf");
}

// Megatron's loaders: len(json.load(vocab_file)).
int64_t vocab_file_size(const std::string& path) {
    simdjson::padded_string text;
    MT_CHECK(!simdjson::padded_string::load(path).get(text), "cannot read --vocab-file ", path);
    simdjson::ondemand::parser parser;
    simdjson::ondemand::document doc;
    MT_CHECK(!parser.iterate(text).get(doc), path, ": not JSON");
    simdjson::ondemand::json_type type;
    MT_CHECK(!doc.type().get(type), path, ": not JSON");
    size_t n = 0;
    if (type == simdjson::ondemand::json_type::object)
        MT_CHECK(!doc.count_fields().get(n), path, ": malformed JSON object");
    else if (type == simdjson::ondemand::json_type::array)
        MT_CHECK(!doc.count_elements().get(n), path, ": malformed JSON list");
    else
        MT_FAIL(path, ": not a JSON object or list");
    return int64_t(n);
}

int run(const ConvertFlags& f) {
    MT_CHECK(f.target_tp >= 0 && f.target_pp >= 0 && f.target_ep > 0,
             "--target-tensor-parallel-size, --target-pipeline-parallel-size and "
             "--target-expert-parallel-size must be positive");
    auto& registry = mt::Registry::global();
    auto loader = registry.create_checkpoint(loader_format(f));
    auto saver = registry.create_checkpoint(saver_format(f));
    auto family = registry.create_model(model_family(f.model_type));
    MT_CHECK(std::filesystem::is_directory(f.load_dir), "--load-dir ", f.load_dir,
             " is not a directory");
    MT_CHECK(loader->detect(f.load_dir), "--load-dir ", f.load_dir, " holds no ", loader->name(),
             " checkpoint (--loader ", f.loader, ")");

    mt::ConvertOptions o;
    o.target_tensor_parallel = f.target_tp;
    o.target_pipeline_parallel = f.target_pp;
    o.target_expert_parallel = f.target_ep;
    if (f.saver == "hf") {
        // A Hugging Face folder holds whole tensors: one rank.
        MT_CHECK(f.target_tp <= 1 && f.target_pp <= 1,
                 "--saver hf writes whole tensors: --target-tensor-parallel-size and "
                 "--target-pipeline-parallel-size must be 1");
        o.target_tensor_parallel = o.target_pipeline_parallel = 1;
        MT_CHECK(f.target_ep == 1,
                 "--saver hf writes whole tensors: --target-expert-parallel-size must be 1");
        o.target_expert_parallel = 1;
    }
    o.true_vocab_size = f.true_vocab_size;
    if (!o.true_vocab_size && !f.vocab_file.empty())
        o.true_vocab_size = vocab_file_size(f.vocab_file);
    o.make_vocab_size_divisible_by = f.make_vocab_size_divisible_by;
    if (!f.saver_impl.empty()) o.transformer_impl = f.saver_impl;
    o.legacy = f.saver == "legacy" || f.saver == "megatron";
    // Megatron's Hugging Face loaders save their checkpoints as iteration 1.
    if (f.loader == "hf" || f.loader == "llama_mistral" || f.loader == "mixtral_hf")
        o.iteration = 1;
    MT_CHECK(!(f.bf16 && f.fp16), "--bf16 and --fp16 cannot be used together");
    if (f.bf16) o.dtype = mt::DType::bf16;
    if (f.fp16) o.dtype = mt::DType::f16;
    // Megatron's Hugging Face loaders build a float32 model unless told --bf16 / --fp16 (the
    // hf loader gives the folder's own dtype).
    if (!o.dtype && loader_format(f) == "hf") o.dtype = mt::DType::f32;
    o.log = [](const std::string& line) {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
    };
    mt::convert_checkpoint(*loader, f.load_dir, *saver, f.save_dir, *family, o);
    std::printf("done\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    mt::cli::ToolSpec spec;
    spec.name = "megatron-convert";
    spec.description =
        "Converts a checkpoint between formats and tensor/pipeline-parallel layouts, as\n"
        "Megatron-LM's tools/checkpoint/convert.py does (same flags): Megatron `torch`\n"
        "checkpoints (core or legacy key names, any mp_rank_TT[_PPP] layout), `torch_dist`,\n"
        "Hugging Face GPT-2/Llama/Mistral/Mixtral/Qwen2/Qwen3(-MoE)/DeepSeek-V2/DeepSeek-V3/\n"
        "Mamba-2/Nemotron-H/Megatron-BERT/BERT folders and Meta Llama checkpoints\n"
        "in; `torch` (core or legacy), `torch_dist` or a Hugging Face folder out (--saver hf:\n"
        "GPT-2 for learned positions + LayerNorm + GeLU + biases, Llama/Mistral/Qwen for rope +\n"
        "RMSNorm + SwiGLU, Mixtral/Qwen3-MoE for MoE layers, DeepSeek-V3 (V2 when softmax-\n"
        "routed) for multi-latent attention, Mamba-2/Nemotron-H for Mamba models,\n"
        "MegatronBertForPreTraining (BertForPreTraining when post-LayerNorm) for --model-type\n"
        "BERT; config.json, generation_config.json (not for BERT), model.safetensors, sharded\n"
        "above 5GB with model.safetensors.index.json, and the tokenizer's files when the args\n"
        "name them).\n"
        "--model-type picks the model family (GPT: gpt, BERT: bert). Model weights, iteration\n"
        "and args travel; optimizer and RNG state do not. Every tensor is read, converted and\n"
        "written one at a time (memory: a few of the largest tensors), with a progress bar of\n"
        "tensors and bytes on a terminal.";
    ConvertFlags flags;
    spec.options.add(convert_flags(flags));
    spec.run = [&](const po::variables_map& vm) {
        if (vm.count("true-vocab-size"))
            flags.true_vocab_size = vm["true-vocab-size"].as<int64_t>();
        if (vm.count("make-vocab-size-divisible-by"))
            flags.make_vocab_size_divisible_by = vm["make-vocab-size-divisible-by"].as<int64_t>();
        flags.loader = plugin_name("loader", flags.loader);
        flags.saver = plugin_name("saver", flags.saver);
        return run(flags);
    };
    return mt::cli::run_tool(argc, argv, spec);
}
