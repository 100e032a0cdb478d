"""A synthetic DeepSeek-V3-shaped Hugging Face folder for bench/deepseek_convert_bench.sh: the
published model's structure (61 decoder layers, the first 3 dense, 256 routed experts and one
shared expert per MoE layer, each expert's gate/up/down a tensor of its own as the published
checkpoint has them, one multi-token prediction layer as model.layers.61, q-lora and kv-lora
attention, the full 129280-token vocabulary, bfloat16, several safetensors shards with
model.safetensors.index.json) at a reduced width, so that the folder is far larger than its
largest tensor (the embedding).

    python bench/make_deepseek_v3_synthetic.py OUT_DIR [--hidden 256]

Sizes (DeepSeek-V3's / these at --hidden H): hidden 7168 / H, heads 128 / 4, q_lora_rank 1536 /
H, kv_lora_rank 512 / H/2, qk_nope_head_dim 128 / H/8, qk_rope_head_dim 64 / H/16, v_head_dim
128 / H/8, intermediate_size 18432 / 3H, moe_intermediate_size 2048 / H/2. The values are small
pseudo-random numbers (a repeated random block: drawing every element would dominate the time);
needs numpy only (the shards are written here in the safetensors layout).
"""
import argparse
import json
import pathlib

import numpy as np

LAYERS, DENSE, EXPERTS, VOCAB = 61, 3, 256, 129280
SHARD_BYTES = 256 << 20


def bf16(shape, rng_block, offset):
    """A bfloat16 tensor (as uint16 bits, the safetensors dtype set below) of `shape`."""
    n = int(np.prod(shape))
    reps = -(-n // rng_block.size)
    bits = np.tile(np.roll(rng_block, offset % rng_block.size), reps)[:n]
    return bits.reshape(shape)


def write_safetensors(path, tensors):
    """The safetensors layout: a little-endian u64 header size, the JSON header (BF16 entries in
    the names' order, padded with spaces to 8 bytes), then the data."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, t in tensors.items():
        header[name] = {"dtype": "BF16", "shape": list(t.shape),
                        "data_offsets": [offset, offset + t.nbytes]}
        offset += t.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for t in tensors.values():
            f.write(np.ascontiguousarray(t).tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--hidden", type=int, default=256)
    a = ap.parse_args()
    h = a.hidden
    heads, q_rank, kv_rank = 4, h, h // 2
    nope, rope, v = h // 8, h // 16, h // 8
    ffn, moe_ffn = 3 * h, h // 2
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    # Small normal values as bfloat16 bits: the upper half of float32's.
    rng = np.random.default_rng(0)
    block = (rng.standard_normal(1 << 16).astype(np.float32) * 0.02).view(np.uint32)
    block = (block >> 16).astype(np.uint16)
    ones = np.full(1, 0x3F80, dtype=np.uint16)  # bfloat16 1.0

    shapes = {"model.embed_tokens.weight": (VOCAB, h)}

    def layer(p, moe):
        s = p + "self_attn."
        shapes.update({
            s + "q_a_proj.weight": (q_rank, h), s + "q_a_layernorm.weight": (q_rank,),
            s + "q_b_proj.weight": (heads * (nope + rope), q_rank),
            s + "kv_a_proj_with_mqa.weight": (kv_rank + rope, h),
            s + "kv_a_layernorm.weight": (kv_rank,),
            s + "kv_b_proj.weight": (heads * (nope + v), kv_rank),
            s + "o_proj.weight": (h, heads * v),
            p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,)})
        m = p + "mlp."
        if not moe:
            shapes.update({m + "gate_proj.weight": (ffn, h), m + "up_proj.weight": (ffn, h),
                           m + "down_proj.weight": (h, ffn)})
            return
        for e in range(EXPERTS):
            x = f"{m}experts.{e}."
            shapes.update({x + "gate_proj.weight": (moe_ffn, h), x + "up_proj.weight": (moe_ffn, h),
                           x + "down_proj.weight": (h, moe_ffn)})
        shapes.update({m + "gate.weight": (EXPERTS, h), m + "gate.e_score_correction_bias": (EXPERTS,),
                       m + "shared_experts.gate_proj.weight": (moe_ffn, h),
                       m + "shared_experts.up_proj.weight": (moe_ffn, h),
                       m + "shared_experts.down_proj.weight": (h, moe_ffn)})

    for i in range(LAYERS):
        layer(f"model.layers.{i}.", i >= DENSE)
    shapes.update({"model.norm.weight": (h,), "lm_head.weight": (VOCAB, h)})
    mtp = f"model.layers.{LAYERS}."
    layer(mtp, True)
    shapes.update({mtp + "embed_tokens.weight": (VOCAB, h), mtp + "enorm.weight": (h,),
                   mtp + "hnorm.weight": (h,), mtp + "eh_proj.weight": (h, 2 * h),
                   mtp + "shared_head.norm.weight": (h,), mtp + "shared_head.head.weight": (VOCAB, h)})

    # Shards of about SHARD_BYTES, in the names' order; the index maps each name to its file.
    weight_map, shard, size, files, total = {}, {}, 0, [], 0
    def flush():
        nonlocal shard, size
        if shard:
            files.append(shard)
            shard, size = {}, 0
    for k, (name, shape) in enumerate(shapes.items()):
        norm = name.endswith("norm.weight")
        t = np.tile(ones, int(np.prod(shape))).reshape(shape) if norm else bf16(shape, block, k)
        shard[name] = t
        size += t.nbytes
        total += t.nbytes
        if size >= SHARD_BYTES:
            flush()
    flush()
    for n, tensors in enumerate(files):
        fname = f"model-{n + 1:05d}-of-{len(files):05d}.safetensors"
        write_safetensors(out / fname, tensors)
        for name in tensors:
            weight_map[name] = fname
    (out / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2) + "\n")
    config = {
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
        "vocab_size": VOCAB, "hidden_size": h, "intermediate_size": ffn,
        "moe_intermediate_size": moe_ffn, "num_hidden_layers": LAYERS,
        "num_nextn_predict_layers": 1, "num_attention_heads": heads, "num_key_value_heads": heads,
        "n_shared_experts": 1, "n_routed_experts": EXPERTS, "routed_scaling_factor": 2.5,
        "kv_lora_rank": kv_rank, "q_lora_rank": q_rank, "qk_rope_head_dim": rope,
        "v_head_dim": v, "qk_nope_head_dim": nope, "topk_method": "noaux_tc", "n_group": 8,
        "topk_group": 4, "num_experts_per_tok": 8, "first_k_dense_replace": DENSE,
        "norm_topk_prob": True, "hidden_act": "silu", "max_position_embeddings": 163840,
        "rms_norm_eps": 1e-6, "rope_theta": 10000, "tie_word_embeddings": False,
        "attention_bias": False, "torch_dtype": "bfloat16",
        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                         "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                         "type": "yarn"}}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    print(f"{out}: {len(shapes)} tensors, {total / 2**30:.2f} GiB in {len(files)} shards; "
          f"largest {VOCAB * h * 2 / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
