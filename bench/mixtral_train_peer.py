"""The PyTorch peer of bench/moe_bench.sh: transformers' MixtralForCausalLM of the benchmark's
shape (bench/hf_inference.py MIXTRAL_TINY: 4 layers, hidden 512, 8 experts of 1024, top-2, GQA)
trained with AdamW on random tokens, its load-balancing loss on (router_aux_loss_coef 1e-2, as
--moe-aux-loss-coeff), fp32, timed per iteration after warm-up.

  python bench/mixtral_train_peer.py --seq 256 --batch 4 --iters 4 --warmup 2 --threads 2

Prints one line: "tokens_per_s <value> ms_per_iter <value>".
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_inference import MIXTRAL_TINY  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--iters", type=int, default=4)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    from transformers import MixtralConfig, MixtralForCausalLM

    config = MixtralConfig(**MIXTRAL_TINY, output_router_logits=True, router_aux_loss_coef=1e-2,
                           attention_dropout=0.0)
    model = MixtralForCausalLM(config).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)
    # transformers shifts the labels itself.
    tokens = torch.randint(0, 4096, (args.batch, args.seq))
    times = []
    for it in range(args.warmup + args.iters):
        start = time.perf_counter()
        out = model(input_ids=tokens, labels=tokens)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if it >= args.warmup:
            times.append(time.perf_counter() - start)
    ms = 1000 * sum(times) / len(times)
    print(f"tokens_per_s {args.batch * args.seq / (ms / 1000):.1f} ms_per_iter {ms:.1f}")


if __name__ == "__main__":
    main()
