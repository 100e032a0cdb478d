// Sliding-window attention as the families that have it (Mistral, Qwen, GPT-OSS) state it in
// config.json (sliding_window, and which layers: layer_types or Qwen's max_window_layers) and as
// Megatron's flags and args do (--window-size (sliding_window - 1, 0), --window-attn-skip-freq).
#pragma once

#include <cstdint>

#include "hf_config.h"
#include "hf_config_reader.h"
#include "hf_saver_args.h"
#include "mt/model.h"
#include "mt/nn/attention_window.h"

namespace mt::plugins::hf {

// The layers c.sliding_window applies to (c.num_layers read): layer_types (transformers 5), else
// Qwen's max_window_layers (the layers before it see every key), else all. No layer windowed
// clears the window; all clears the list.
void read_windowed_layers(const ConfigJson& j, HfConfig& c);

// --window-size and --window-attn-skip-freq (a 0/1 list per layer) of c's window, if any.
void put_window_args(const HfConfig& c, ModelArgs& a);

// --window-size and --window-attn-skip-freq as the args hold them (a tuple or list, a string, an
// integer), read as the tools read the flags.
nn::AttentionWindows windows_of(const SaverArgs& a, int64_t layers);

// c's sliding_window and windowed_layers (every layer's flag) from the args' windows, c.num_layers
// read; false (c untouched) without a window.
bool read_windows_of_args(const SaverArgs& a, HfConfig& c);

}  // namespace mt::plugins::hf
