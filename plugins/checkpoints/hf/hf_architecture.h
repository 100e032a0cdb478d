// One Hugging Face model family described once (architectures/<family>.cpp): the config.json
// model_types it reads and how, with what it refuses named by key; the Megatron flags of that
// model; the folder's tensors as Megatron-core's and back; its config.json; and which Megatron
// args it is the export of. The format code (read_hf_config, hf_model_args, HfCheckpoint's load
// and save, hf_config_json, hf_config_from_args) asks the descriptions and branches on no
// family: a new architecture is a new description and its line in hf_architectures().
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hf_config.h"
#include "hf_json.h"
#include "mt/model.h"

namespace mt::plugins::hf {

class ConfigJson;
class HfImport;
class HfExport;
class SaverArgs;

class HfArchitecture {
  public:
    virtual ~HfArchitecture() = default;

    // The config.json model_type values this family reads.
    virtual std::vector<std::string> model_types() const = 0;
    // config.json into `c` (its model_type and arch already set); `dir` is the folder, for what
    // only the weights tell. mt::Error naming the file and key for anything refused.
    virtual void read_config(const ConfigJson& j, const std::filesystem::path& dir,
                             HfConfig& c) const = 0;

    // Megatron's flags for the model beyond the sizes every family has (hf_model_args).
    virtual void add_model_args(const HfConfig& c, ModelArgs& a) const;
    // The Megatron-core tensors of the folder, each from the folder's tensors, in Megatron's
    // state-dict order.
    virtual void import_tensors(HfImport& in) const;
    // The folder's tensors from Megatron-core's, in transformers' state-dict order (which
    // decides where shards split).
    virtual void export_tensors(HfExport& out) const;
    // config.json's members but the ones every family writes (hf_config_json: the bos/eos ids,
    // dtype, use_cache, vocab_size).
    virtual json::Members config_members(const HfConfig& c) const;

    // --saver hf: whether this family is the export of a checkpoint with args `a` (and, for a
    // BERT, `bert`: its parts, from its tensors); the first family in hf_architectures() that
    // says so writes it.
    virtual bool exports(const SaverArgs& a, const std::optional<BertParts>& bert) const;
    // The model that `a` describe (arch left for the caller), or mt::Error "not supported yet:
    // <field>=<value> in --saver hf (...)" for any setting the family does not have.
    virtual HfConfig config_from_args(const SaverArgs& a,
                                      const std::optional<BertParts>& bert) const;
    // transformers writes generation_config.json and bos/eos ids for models that generate text.
    virtual bool generates_text() const { return true; }
    // False for a family whose folders are only read to be refused by name (T5's).
    virtual bool supported() const { return true; }

  protected:
    // What a description leaves out: "not supported yet" naming the family and `what`.
    [[noreturn]] void unsupported(const char* what) const;
};

// Every description, in the order --saver hf asks them.
const std::vector<const HfArchitecture*>& hf_architectures();

// The description reading config.json's model_type `type`, or nullptr.
const HfArchitecture* hf_architecture_of(const std::string& type);

// A number as Megatron's flags and Python's args print it (17 significant digits).
std::string number_text(double v);

// The descriptions (architectures/*.cpp).
const HfArchitecture& gpt2_architecture();
const HfArchitecture& llama_architecture();
const HfArchitecture& bert_architecture();
const HfArchitecture& hybrid_architecture();
const HfArchitecture& deepseek_architecture();
const HfArchitecture& t5_architecture();
const HfArchitecture& gpt_oss_architecture();
const HfArchitecture& gemma3_architecture();

}  // namespace mt::plugins::hf
