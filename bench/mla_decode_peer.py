"""PyTorch side of bench/mla_decode_bench.sh: transformers' DeepseekV3ForCausalLM with every layer
dense (first_k_dense_replace = the layer count), shaped as the benchmark's multi-latent attention
GPT, randomly initialised, on the CPU: greedy generation through its KV cache, one line per batch
size:

  prefill batch=B tokens=P seconds=S tokens_per_s=R   (B x P random tokens)
  decode batch=B tokens=D seconds=S tokens_per_s=R    (D greedy steps after them)
  cache batch=B bytes_per_token=N                     (the cache's bytes over B x (P + D) tokens)

the timing rules of mt_bench_inference (best of --repeat runs). transformers caches each
position's latent and rope key, as megatron.cpp does, and expands every cached position's keys
and values through kv_b_proj at each step; megatron.cpp attends over the latents directly (the
absorbed form).
"""

import argparse

import torch


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, required=True)
    for name, default in (("layers", 8), ("hidden", 1024), ("heads", 16), ("ffn", 2816),
                          ("vocab", 32000), ("q-lora-rank", 384), ("kv-lora-rank", 512),
                          ("qk-head-dim", 128), ("qk-pos-emb-head-dim", 64), ("v-head-dim", 128),
                          ("prompt", 512), ("decode", 64), ("repeat", 2)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    p.add_argument("--bf16", action="store_true")
    args = p.parse_args()

    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    # this script's folder, bench/, is on sys.path
    from hf_inference import print_rates, time_generation

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = DeepseekV3Config(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.ffn,
        num_hidden_layers=args.layers, first_k_dense_replace=args.layers,
        num_attention_heads=args.heads, num_key_value_heads=args.heads,
        q_lora_rank=args.q_lora_rank, kv_lora_rank=args.kv_lora_rank,
        qk_nope_head_dim=args.qk_head_dim, qk_rope_head_dim=args.qk_pos_emb_head_dim,
        v_head_dim=args.v_head_dim, max_position_embeddings=args.prompt + args.decode,
        tie_word_embeddings=False)
    model = DeepseekV3ForCausalLM(config).eval()
    if args.bf16:
        model = model.to(torch.bfloat16)
    gen = torch.Generator().manual_seed(0)
    for batch in args.batch:
        prompt = torch.randint(0, args.vocab, (batch, args.prompt), generator=gen)
        prefill, decode, cache = time_generation(model, prompt, args.decode, args.repeat)
        print_rates(batch, args.prompt, args.decode, prefill, decode)
        cached = sum(t.numel() * t.element_size() for layer in cache.layers
                     for t in (layer.keys, layer.values))
        print(f"cache batch={batch} bytes_per_token={cached // (batch * (args.prompt + args.decode))}",
              flush=True)


if __name__ == "__main__":
    main()
