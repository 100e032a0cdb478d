// Registers the "bert" model family (Megatron-core's BertModel and the finetuning task heads).
#pragma once

#include "mt/registry.h"

namespace mt::plugins::bert {
void register_bert(Registry& registry);
}
