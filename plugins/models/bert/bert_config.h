// BERT configuration from Megatron-LM's flags: the transformer flags GPT reads (--num-layers,
// --hidden-size, ...), --bert-no-binary-head, and the task head megatron-eval's finetuning asks
// for (Megatron's legacy Classification and MultipleChoice models).
#pragma once

#include <cstdint>
#include <vector>

#include "mt/model.h"
#include "mt/nn/transformer_args.h"

namespace mt::plugins::bert {

// What sits on the pooled [CLS] state: pretraining's lm_head + binary head, or one task head.
enum class TaskHead { none, classification, multichoice };

struct BertConfig {
    nn::TransformerArgs transformer;  // the shared transformer flags and their derived values
    bool binary_head = true;          // the sentence-order head (off: --bert-no-binary-head)
    int64_t num_tokentypes = 2;       // pretrain_bert.py: 2 with the binary head, else 0
    TaskHead task_head = TaskHead::none;
    int64_t num_classes = 0;  // the classification head's classes
};

// gpt_flags() plus --bert-no-binary-head, --bert-binary-head and --num-tokentypes.
std::vector<FlagInfo> bert_flags();

// The arguments as flag text (see gpt_config_from_args); "task-head" (classification,
// multichoice) and "num-classes" are megatron-eval's. Throws mt::Error naming the flag.
BertConfig bert_config_from_args(const ModelArgs& args);

}  // namespace mt::plugins::bert
