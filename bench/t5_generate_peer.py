"""PyTorch side of bench/t5_generate_bench.sh: transformers' T5ForConditionalGeneration shaped as
Megatron's T5-220M (12 + 12 layers, hidden 768, 12 heads of 64, FFN 3072 with GeLU, the padded
BERT vocabulary of 30720), randomly initialised, on the CPU: encoder-decoder greedy generation
through its self-attention KV cache and its cross-attention cache, one line per batch size:

  prefill batch=B tokens=P seconds=S tokens_per_s=R   (the encoder over B x P random tokens and the
                                                      decoder's first step)
  decode batch=B tokens=D seconds=S tokens_per_s=R    (D greedy steps after it)

the timing rules of mt_bench_inference (best of --repeat runs). transformers' T5 is the Hugging
Face architecture (RMSNorm without bias, relative position buckets, no learned positions), which
costs the same matrix products as Megatron's; megatron-core's own T5 inference wrapper needs CUDA.
"""

import argparse
import time

import torch


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ffn", type=int, default=3072)
    p.add_argument("--vocab", type=int, default=30720)
    p.add_argument("--prompt", type=int, default=256)
    p.add_argument("--decode", type=int, default=64)
    p.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--bf16", action="store_true")
    args = p.parse_args()

    from transformers import EncoderDecoderCache, DynamicCache, T5Config, T5ForConditionalGeneration

    from hf_inference import print_rates  # this script's folder, bench/, is on sys.path

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = T5Config(vocab_size=args.vocab, d_model=args.hidden, d_kv=args.hidden // args.heads,
                      d_ff=args.ffn, num_layers=args.layers, num_decoder_layers=args.layers,
                      num_heads=args.heads, feed_forward_proj="gelu", dropout_rate=0.0,
                      decoder_start_token_id=0, pad_token_id=0)
    model = T5ForConditionalGeneration(config).eval()
    if args.bf16:
        model = model.to(torch.bfloat16)
    gen = torch.Generator().manual_seed(0)
    for batch in args.batch:
        prompt = torch.randint(0, args.vocab, (batch, args.prompt), generator=gen)
        start = prompt[:, :1]
        best_prefill = best_decode = float("inf")
        for _ in range(args.repeat):
            with torch.inference_mode():
                cache = EncoderDecoderCache(DynamicCache(config=config), DynamicCache(config=config))
                t0 = time.perf_counter()
                encoded = model.get_encoder()(input_ids=prompt)
                out = model(encoder_outputs=encoded, decoder_input_ids=start,
                            past_key_values=cache, use_cache=True)
                t1 = time.perf_counter()
                token = out.logits[:, -1].argmax(-1, keepdim=True)
                for _ in range(args.decode):
                    out = model(encoder_outputs=encoded, decoder_input_ids=token,
                                past_key_values=out.past_key_values, use_cache=True)
                    token = out.logits[:, -1].argmax(-1, keepdim=True)
                t2 = time.perf_counter()
            best_prefill = min(best_prefill, t1 - t0)
            best_decode = min(best_decode, t2 - t1)
        print_rates(batch, args.prompt, args.decode, best_prefill, best_decode)


if __name__ == "__main__":
    main()
