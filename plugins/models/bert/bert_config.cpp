#include "bert_config.h"

#include "mt/error.h"
#include "mt/model_args_reader.h"

namespace mt::plugins::bert {

std::vector<FlagInfo> bert_flags() {
    std::vector<FlagInfo> flags = nn::transformer_flags();
    FlagInfo no_binary =
        switch_flag("bert-no-binary-head", "no sentence-order (binary) head and no token types");
    no_binary.store_false_dest = "bert_binary_head";
    flags.push_back(no_binary);
    flags.push_back(
        switch_flag("bert-binary-head", "the sentence-order (binary) head (the default)"));
    flags.push_back(
        value_flag("num-tokentypes", "token types (default 2 with the binary head, else 0)"));
    return flags;
}

BertConfig bert_config_from_args(const ModelArgs& args) {
    const ModelArgsReader f(args);
    BertConfig c;
    c.transformer = nn::read_transformer_args(args);
    MT_CHECK(!c.transformer.windows.enabled(),
             "not supported yet: --window-size in BERT (sliding windows are causal)");
    MT_CHECK(!c.transformer.scale_embeddings,
             "not supported yet: --scale-embeddings in BERT (Gemma's embedding scale is built "
             "for GPT models)");
    MT_CHECK(!c.transformer.moe.enabled(),
             "not supported yet: --num-experts for BERT (mixture-of-experts layers are built for "
             "GPT models)");
    MT_CHECK(!c.transformer.fp8.config.enabled,
             "--fp8-format: not supported yet: FP8 for BERT (it is built for GPT models)");
    MT_CHECK(!c.transformer.mla.enabled,
             "not supported yet: --multi-latent-attention for BERT (it is built for GPT models)");
    MT_CHECK(c.transformer.mtp_num_layers == 0,
             "not supported yet: --mtp-num-layers for BERT (multi-token prediction is built for "
             "GPT models)");
    MT_CHECK(!(f.flag("bert-no-binary-head") && f.flag("bert-binary-head")),
             "--bert-binary-head and --bert-no-binary-head contradict each other");
    c.binary_head = !f.flag("bert-no-binary-head");
    c.num_tokentypes = f.integer("num-tokentypes", c.binary_head ? 2 : 0);
    MT_CHECK(c.num_tokentypes >= 0, "--num-tokentypes ", c.num_tokentypes, ": negative");
    if (auto it = args.find("task-head"); it != args.end()) {
        if (it->second == "classification") {
            c.task_head = TaskHead::classification;
            c.num_classes = f.integer("num-classes");
            MT_CHECK(c.num_classes > 1, "a classification head needs 2 or more classes, got ",
                     c.num_classes);
        } else {
            MT_CHECK(it->second == "multichoice", "unknown BERT task head \"", it->second,
                     "\" (classification, multichoice)");
            c.task_head = TaskHead::multichoice;
        }
        // Megatron's task models (legacy Classification, MultipleChoice) always embed two
        // token types and pool the [CLS] state.
        c.num_tokentypes = 2;
    }
    return c;
}

}  // namespace mt::plugins::bert
