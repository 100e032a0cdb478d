"""The PyTorch peer of bench/race_finetune_bench.sh: Hugging Face transformers'
BertForMultipleChoice of the same shapes (BERT-base, four choices per question, SDPA attention,
dropout 0.1) finetuned with AdamW on random questions, timed per iteration after warm-up.

  python bench/race_torch_peer.py --seq 128 --batch 2 --iters 4 --warmup 2 [--threads 2]

Prints one line: "questions_per_s <value> ms_per_iter <value>".
"""
import argparse
import time

import torch
from transformers import BertConfig, BertForMultipleChoice


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--iters", type=int, default=4)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30592, hidden_size=768, num_hidden_layers=12,
                        num_attention_heads=12, intermediate_size=3072,
                        max_position_embeddings=512, type_vocab_size=2,
                        attn_implementation="sdpa")
    model = BertForMultipleChoice(config).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.01)
    ids = torch.randint(1000, 30000, (a.batch, 4, a.seq))
    types = (torch.arange(a.seq) >= a.seq // 4).long().expand(a.batch, 4, a.seq)
    labels = torch.randint(0, 4, (a.batch,))
    times = []
    for i in range(a.warmup + a.iters):
        start = time.perf_counter()
        out = model(input_ids=ids, token_type_ids=types, labels=labels)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= a.warmup:
            times.append(time.perf_counter() - start)
    ms = 1000 * sum(times) / len(times)
    print(f"questions_per_s {a.batch / (ms / 1000):.2f} ms_per_iter {ms:.1f}")


if __name__ == "__main__":
    main()
