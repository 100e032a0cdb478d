"""The PyTorch peer of bench/bert_train_bench.sh: Hugging Face transformers' BertForPreTraining
of the same shapes (BERT-base: 12 layers, hidden 768, 12 heads, FFN 3072, vocabulary 30592, 2
token types, dropout 0.1, SDPA attention) trained with AdamW on random masked-LM batches (15% of
the positions scored) with sentence-order labels, timed per iteration after warm-up.

  python bench/bert_torch_peer.py --seq 128 --batch 8 --iters 4 --warmup 2 [--bf16] [--threads 2]

--bf16 runs the forward under torch.autocast("cpu", torch.bfloat16). Prints one line:
"tokens_per_s <value> ms_per_iter <value>".
"""
import argparse
import time

import torch
from transformers import BertConfig, BertForPreTraining


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=30592)
    p.add_argument("--iters", type=int, default=4)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--bf16", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=a.vocab, hidden_size=a.hidden, num_hidden_layers=a.layers,
                        num_attention_heads=a.heads, intermediate_size=4 * a.hidden,
                        max_position_embeddings=512, type_vocab_size=2,
                        attn_implementation="sdpa")
    model = BertForPreTraining(config).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    ids = torch.randint(1000, a.vocab, (a.batch, a.seq))
    types = (torch.arange(a.seq) >= a.seq // 2).long().expand(a.batch, a.seq)
    labels = torch.full((a.batch, a.seq), -100)
    scored = torch.rand(a.batch, a.seq) < 0.15
    labels[scored] = ids[scored]
    order = torch.randint(0, 2, (a.batch,))
    times = []
    for i in range(a.warmup + a.iters):
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            out = model(input_ids=ids, token_type_ids=types, labels=labels,
                        next_sentence_label=order)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= a.warmup:
            times.append(time.perf_counter() - start)
    ms = 1000 * sum(times) / len(times)
    print(f"tokens_per_s {a.batch * a.seq / (ms / 1000):.1f} ms_per_iter {ms:.1f}")


if __name__ == "__main__":
    main()
