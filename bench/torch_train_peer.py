"""The PyTorch peer of bench/train_bench.sh: the same GPT (Megatron's GPT-2 layout: learned
positions, pre-LayerNorm, tanh GeLU, tied output layer, dropout 0.1) trained with AdamW on random
tokens, timed per iteration after warm-up.

  python bench/torch_train_peer.py --layers 12 --hidden 768 --heads 12 --seq 256 --batch 4 \
      --iters 6 --warmup 2 [--bf16] [--threads 2]

fp32 uses F.scaled_dot_product_attention (oneDNN / flash kernels); --bf16 runs the forward under
torch.autocast("cpu", torch.bfloat16), PyTorch's own mixed precision (f32 weights and optimizer).
Prints one line: "tokens_per_s <value> ms_per_iter <value>".
"""
import argparse
import math
import time

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, h, heads, dropout):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.ln1, self.ln2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
        self.qkv, self.proj = torch.nn.Linear(h, 3 * h), torch.nn.Linear(h, h)
        self.fc1, self.fc2 = torch.nn.Linear(h, 4 * h), torch.nn.Linear(4 * h, h)

    def forward(self, x):
        b, t, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, h // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        x = x + F.dropout(self.proj(a.transpose(1, 2).reshape(b, t, h)), self.dropout,
                          self.training)
        m = self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
        return x + F.dropout(m, self.dropout, self.training)


class Gpt(torch.nn.Module):
    def __init__(self, layers, h, heads, vocab, seq, dropout=0.1):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(vocab, h), torch.nn.Embedding(seq, h)
        self.blocks = torch.nn.ModuleList(Block(h, heads, dropout) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(h)
        self.dropout = dropout
        for p in self.parameters():
            torch.nn.init.normal_(p, std=0.02) if p.dim() > 1 else None

    def forward(self, tokens, labels):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1]))[None]
        x = F.dropout(x, self.dropout, self.training)
        for blk in self.blocks:
            x = blk(x)
        logits = self.ln(x) @ self.wte.weight.T
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.reshape(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50304)  # 50257 padded as Megatron pads it
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Gpt(a.layers, a.hidden, a.heads, a.vocab, a.seq)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    gen = torch.Generator().manual_seed(1)
    times = []
    for it in range(a.warmup + a.iters):
        tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=gen)
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", torch.bfloat16, enabled=a.bf16):
            loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if it >= a.warmup:
            times.append(time.perf_counter() - start)
    ms = 1000 * sum(times) / len(times)
    assert math.isfinite(loss.item())
    print(f"tokens_per_s {a.batch * a.seq / (ms / 1000):.1f} ms_per_iter {ms:.1f}")


if __name__ == "__main__":
    main()
