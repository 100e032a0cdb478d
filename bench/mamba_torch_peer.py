"""The PyTorch peer of bench/mamba_train_bench.sh: transformers' Mamba2ForCausalLM (its torch
path: the chunked SSD scan written in torch ops, no mamba_ssm kernels on a CPU) of the same shape
(24 Mamba-2 layers of hidden 768, 24 heads of 64, one group, state 128: Mamba-2 130M), trained
with AdamW on random tokens, timed per iteration after warm-up.

  python bench/mamba_torch_peer.py --seq 512 --batch 1 --iters 4 --warmup 2 [--bf16] [--threads 2]

--bf16 runs the forward under torch.autocast("cpu", torch.bfloat16). Prints one line:
"tokens_per_s <value> ms_per_iter <value>".
"""
import argparse
import time
import warnings

import torch
from transformers import Mamba2Config, Mamba2ForCausalLM
from transformers.utils import logging


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--iters", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    logging.set_verbosity_error()
    config = Mamba2Config(hidden_size=768, num_hidden_layers=24, state_size=128, head_dim=64,
                          n_groups=1, num_heads=24, expand=2, conv_kernel=4, vocab_size=50257,
                          chunk_size=128, tie_word_embeddings=True, use_conv_bias=True,
                          use_bias=False, rms_norm=True)
    model = Mamba2ForCausalLM(config).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, 50257, (args.batch, args.seq))
    times = []
    for i in range(args.warmup + args.iters):
        start = time.perf_counter()
        with torch.autocast("cpu", torch.bfloat16, enabled=args.bf16):
            loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
    ms = 1000 * sum(times) / len(times)
    print("tokens_per_s %.1f ms_per_iter %.1f" % (args.batch * args.seq / (ms / 1000), ms))


if __name__ == "__main__":
    main()
