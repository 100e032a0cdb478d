// What a decoder layer's cross-attention reads (T5): the encoder's output and its padding, and
// in training where the gradient with respect to that output accumulates.
#pragma once

#include "mt/tensor.h"

namespace mt::nn {

struct EncoderContext {
    Tensor states;      // (B, Tk, H); sequence parallel: this rank's shard of Tk
    Tensor key_length;  // (B) i32: row b's encoder tokens, padding after; undefined: none
    // Training: each cross-attention's backward adds its d states here (set by the first,
    // undefined before); null when no backward follows.
    Tensor* grad = nullptr;
};

}  // namespace mt::nn
