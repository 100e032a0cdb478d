// T5 configuration from Megatron-LM's flags as pretrain_t5.py reads them: the transformer flags
// every family reads, with --encoder-num-layers / --decoder-num-layers and --encoder-seq-length /
// --decoder-seq-length, and validate_args' derivations (--num-layers is the encoder's depth,
// --seq-length its length).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "mt/model.h"
#include "mt/nn/relative_position_bias.h"
#include "mt/nn/transformer_args.h"

namespace mt::plugins::t5 {

struct T5Config {
    // The shared transformer flags; num_layers is the encoder's, seq_length the encoder's.
    nn::TransformerArgs transformer;
    int64_t encoder_layers = 0;
    // --decoder-num-layers, or --num-layers without it. Megatron's pretrain_t5.py builds its
    // decoder with --num-layers (the encoder's depth) whatever --decoder-num-layers says, while
    // megatron-core's T5Model builds what it is given: we build what the flag says.
    int64_t decoder_layers = 0;
    int64_t encoder_seq_length = 0, decoder_seq_length = 0;
    // --position-embedding-type relative (transformer.position_embedding is none then): each
    // stack's own table of --relative-attention-num-buckets over
    // --relative-attention-max-distance.
    std::optional<nn::RelativePositionBuckets> relative;
};

// transformer_flags() plus --encoder-num-layers, --decoder-num-layers, --encoder-seq-length,
// --decoder-seq-length, --relative-attention-num-buckets and --relative-attention-max-distance.
std::vector<FlagInfo> t5_flags();

// The arguments as flag text. Throws mt::Error naming the flag for what is missing,
// contradictory or not supported (mixtures of experts; relative position embeddings with
// --transformer-impl local, which Megatron refuses).
T5Config t5_config_from_args(const ModelArgs& args);

// `args` with the values Megatron derives (validate_args: num-layers, seq-length and the
// encoder's flags from each other; the FFN size, head dimension and padded vocabulary).
ModelArgs t5_resolved_args(const ModelArgs& args);

}  // namespace mt::plugins::t5
