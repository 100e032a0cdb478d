"""The PyTorch peer of bench/t5_train_bench.sh: megatron-core's own T5Model (the local spec, as
tests/fixtures/megatron_checkpoints/make_fixtures.py builds pretrain_t5.py's model on the CPU,
with its stubs) of the same shapes, trained with torch.optim.AdamW on random span-corruption-
shaped batches (encoder and decoder tokens, the decoder's labels all scored), dropout 0.1,
timed per iteration after warm-up.

  PYTHONPATH=/path/to/Megatron-LM python bench/t5_torch_peer.py --enc 256 --dec 64 --batch 2 \\
      [--bf16] [--threads 2]

--bf16 trains as Megatron's --bf16 does (torch.autocast does not reach megatron-core's linear
autograd functions): the model's parameters in bfloat16 (its Float16Module), float32 main copies
that AdamW steps, the gradients copied into them and the result copied back. Prints one line:
"tokens_per_s <value> ms_per_iter <value>" (tokens: encoder + decoder positions).
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fixtures", "megatron_checkpoints"))
import make_fixtures  # noqa: E402  (the CUDA stubs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ffn", type=int, default=3072)
    p.add_argument("--enc", type=int, default=256)
    p.add_argument("--dec", type=int, default=64)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--vocab", type=int, default=30720)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--bf16", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29800 + os.getpid() % 100))
    make_fixtures.install_stubs()
    dist.init_process_group("gloo", rank=0, world_size=1)
    from megatron.core import parallel_state
    from megatron.core.datasets.t5_dataset import T5MaskedWordPieceDataset
    from megatron.core.models.T5 import T5Model, t5_spec
    from megatron.core.transformer.transformer_config import TransformerConfig
    parallel_state.initialize_model_parallel(1, 1)
    if not t5_spec.HAVE_TE:
        t5_spec.TENorm = t5_spec.LNImpl
    torch.manual_seed(0)
    config = TransformerConfig(
        num_layers=a.layers, hidden_size=a.hidden, num_attention_heads=a.heads,
        ffn_hidden_size=a.ffn, kv_channels=a.hidden // a.heads, hidden_dropout=0.1,
        attention_dropout=0.1, use_cpu_initialization=True, params_dtype=torch.float32,
        persist_layer_norm=False, gradient_accumulation_fusion=False,
        bias_activation_fusion=False, masked_softmax_fusion=False, bias_dropout_fusion=False,
        pipeline_dtype=torch.float32)
    model = T5Model(config=config, encoder_config=config,
                    transformer_encoder_layer_spec=t5_spec.get_t5_encoder_with_local_block_spec(
                        a.layers),
                    transformer_decoder_layer_spec=t5_spec.get_t5_decoder_with_local_block_spec(
                        a.layers),
                    vocab_size=a.vocab, max_sequence_length=max(a.enc, a.dec),
                    share_embeddings_and_output_weights=True).train()
    params = list(model.parameters())
    if a.bf16:
        model = model.to(torch.bfloat16)
        main = [q.detach().float().clone().requires_grad_() for q in params]
    else:
        main = params
    opt = torch.optim.AdamW(main, lr=1e-4, weight_decay=0.01)
    enc = torch.randint(1000, a.vocab, (a.batch, a.enc))
    dec = torch.randint(1000, a.vocab, (a.batch, a.dec))
    labels = torch.randint(1000, a.vocab, (a.batch, a.dec))
    masks = T5MaskedWordPieceDataset.config_attention_mask(enc, dec, enc != 0, dec != 0,
                                                           use_local=True)
    times = []
    for _ in range(a.warmup + a.iters):
        start = time.perf_counter()
        loss = model(enc, dec, *masks, lm_labels=labels).float().mean()
        loss.backward()
        if a.bf16:
            for m, q in zip(main, params):
                m.grad = q.grad.float()
                q.grad = None
        opt.step()
        if a.bf16:
            with torch.no_grad():
                for m, q in zip(main, params):
                    q.copy_(m)
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
    ms = 1000 * sum(times[a.warmup:]) / a.iters
    print(f"tokens_per_s {a.batch * (a.enc + a.dec) / (ms / 1000):.1f} ms_per_iter {ms:.1f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
