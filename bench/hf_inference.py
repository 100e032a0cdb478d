"""Hugging Face transformers side of bench/inference_bench.sh (CPU, fp32).

  make {gpt2-small,llama-1b,mixtral-tiny,qwen2.5-0.5b,gemma3-1b} DIR
                                   a randomly initialised model saved as DIR/config.json +
                                   DIR/model.safetensors (fp32)
  tokenizer DIR [--gpt2-vocab F]   a tokenizer.json for llama.cpp's convert_hf_to_gguf.py: for
                                   GPT-2 the real vocabulary (read from llama.cpp's
                                   models/ggml-vocab-gpt-2.gguf, needs gguf-py), for Llama a
                                   byte-fallback BPE of placeholder pieces, for Qwen2 and
                                   Gemma 3 a placeholder tokenizer.model of the folder's size
                                   (needs sentencepiece; ids are all a random-weight benchmark
                                   needs)
  gguf-config DIR                  rewrites DIR/config.json (a copy of a model folder) for
                                   llama.cpp converters older than transformers 5: rope_theta at
                                   the top level (transformers 5 keeps it in rope_parameters), and
                                   no null entries (which they cannot pack)
  bench DIR --threads N [--dtype bf16]
                                   prefill and greedy KV-cache decode timings, one line each:
                                   "prefill batch=B tokens=N seconds=S tokens_per_s=R"

Timing rules shared with mt_bench_inference: prefill = one forward over B rows of P random
tokens keeping the last position's logits; decode = D greedy steps of one token per row
through the KV cache after that prompt; best of --repeat runs.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import torch

# The Mixtral-shaped model of bench/moe_bench.sh (8 experts, top-2, GQA), which
# bench/mixtral_train_peer.py trains.
MIXTRAL_TINY = dict(num_hidden_layers=4, hidden_size=512, num_attention_heads=8,
                    num_key_value_heads=2, intermediate_size=1024, num_local_experts=8,
                    num_experts_per_tok=2, vocab_size=32000, max_position_embeddings=1024,
                    rms_norm_eps=1e-5, rope_theta=1e6, tie_word_embeddings=False,
                    sliding_window=None)


def make(args):
    from transformers import (Gemma3ForCausalLM, Gemma3TextConfig, GPT2Config, GPT2LMHeadModel,
                              LlamaConfig, LlamaForCausalLM, MixtralConfig, MixtralForCausalLM,
                              Qwen2Config, Qwen2ForCausalLM)

    torch.manual_seed(args.seed)
    if args.shape == "gpt2-small":
        config = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257,
                            n_positions=1024, tie_word_embeddings=True)
        model = GPT2LMHeadModel(config)
    elif args.shape == "mixtral-tiny":
        config = MixtralConfig(**MIXTRAL_TINY, bos_token_id=1, eos_token_id=2)
        model = MixtralForCausalLM(config)
    elif args.shape == "qwen2.5-0.5b":
        # Qwen2.5-0.5B's config.json: q/k/v biases, 14 heads in 2 groups, tied.
        config = Qwen2Config(num_hidden_layers=24, hidden_size=896, num_attention_heads=14,
                             num_key_value_heads=2, intermediate_size=4864, vocab_size=151936,
                             max_position_embeddings=32768, rms_norm_eps=1e-6,
                             rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                             tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
        model = Qwen2ForCausalLM(config)
    elif args.shape == "gemma3-1b":
        # gemma-3-1b-pt's config.json: 4 heads of 256 in 1 group, windows of 512 on five layers
        # of six, local rope 10000, global 1e6, tied.
        config = Gemma3TextConfig(num_hidden_layers=26, hidden_size=1152, num_attention_heads=4,
                                  num_key_value_heads=1, head_dim=256, intermediate_size=6912,
                                  vocab_size=262144, max_position_embeddings=32768,
                                  query_pre_attn_scalar=256, sliding_window=512,
                                  rope_parameters={
                                      "sliding_attention": {"rope_type": "default",
                                                            "rope_theta": 10000.0},
                                      "full_attention": {"rope_type": "default",
                                                         "rope_theta": 1000000.0}},
                                  tie_word_embeddings=True, bos_token_id=2, eos_token_id=1)
        model = Gemma3ForCausalLM(config)
    else:
        config = LlamaConfig(num_hidden_layers=16, hidden_size=2048, num_attention_heads=32,
                             num_key_value_heads=8, intermediate_size=8192, vocab_size=32000,
                             max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=10000.0,
                             tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
        model = LlamaForCausalLM(config)
    model = model.to(torch.float32).eval()
    model.save_pretrained(args.dir, safe_serialization=True)
    if args.shape == "gpt2-small":
        # The released GPT-2 configs carry n_ctx, which llama.cpp's converter reads;
        # transformers 5 no longer writes it.
        path = Path(args.dir) / "config.json"
        saved = json.loads(path.read_text())
        saved["n_ctx"] = saved["n_positions"]
        path.write_text(json.dumps(saved, indent=2) + "\n")
    params = sum(p.numel() for p in model.parameters())
    print(f"{args.shape}: {params / 1e6:.1f}M parameters saved in {args.dir}")


def tokenizer(args):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    config = json.loads((Path(args.dir) / "config.json").read_text())
    if config["model_type"] in ("qwen2", "gemma3_text"):
        # llama.cpp's converter takes these vocabularies from a tokenizer.model (its Gemma 3 and
        # Qwen2 BPE paths need a pre-tokenizer it knows): a placeholder SentencePiece model of
        # the folder's size, byte fallback and one piece per remaining id.
        write_sentencepiece_placeholder(Path(args.dir) / "tokenizer.model", config["vocab_size"])
        return
    if config["model_type"] == "gpt2":
        if not args.gpt2_vocab:
            sys.exit("tokenizer: a GPT-2 folder needs --gpt2-vocab (llama.cpp's ggml-vocab-gpt-2.gguf)")
        from gguf import GGUFReader

        reader = GGUFReader(args.gpt2_vocab)

        def strings(key):
            field = reader.get_field(key)
            return [bytes(field.parts[i]).decode("utf-8") for i in field.data]

        tokens = strings("tokenizer.ggml.tokens")
        merges = [tuple(m.split(" ", 1)) for m in strings("tokenizer.ggml.merges")]
        tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        special = dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                       unk_token="<|endoftext|>")
    else:
        pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
        pieces += [f"\u2581p{i}" for i in range(config["vocab_size"] - len(pieces))]
        tok = Tokenizer(models.BPE(vocab={p: i for i, p in enumerate(pieces)}, merges=[],
                                   unk_token="<unk>", fuse_unk=True, byte_fallback=True))
        tok.normalizer = normalizers.Sequence(
            [normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                         decoders.Fuse(), decoders.Strip(" ", 1, 0)])
        special = dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    PreTrainedTokenizerFast(tokenizer_object=tok, **special).save_pretrained(args.dir)


def write_sentencepiece_placeholder(path, vocab_size):
    from sentencepiece import sentencepiece_model_pb2 as sp

    proto = sp.ModelProto()
    proto.trainer_spec.model_type = sp.TrainerSpec.BPE
    proto.trainer_spec.vocab_size = vocab_size
    proto.trainer_spec.byte_fallback = True
    proto.trainer_spec.unk_id, proto.trainer_spec.bos_id, proto.trainer_spec.eos_id = 0, 1, 2
    proto.trainer_spec.pad_id = -1
    kinds = sp.ModelProto.SentencePiece
    for piece, kind in (("<unk>", kinds.UNKNOWN), ("<s>", kinds.CONTROL), ("</s>", kinds.CONTROL)):
        proto.pieces.add(piece=piece, score=0.0, type=kind)
    for b in range(256):
        proto.pieces.add(piece=f"<0x{b:02X}>", score=0.0, type=kinds.BYTE)
    for i in range(vocab_size - len(proto.pieces)):
        proto.pieces.add(piece=f"\u2581p{i}", score=-float(i), type=kinds.NORMAL)
    path.write_bytes(proto.SerializeToString())


def gguf_config(args):
    path = Path(args.dir) / "config.json"
    config = json.loads(path.read_text())
    rope = config.get("rope_parameters") or {}
    if "rope_theta" not in config and "rope_theta" in rope:
        config["rope_theta"] = rope["rope_theta"]
    config = {k: v for k, v in config.items() if v is not None}
    path.write_text(json.dumps(config, indent=2) + "\n")


def bench(args):
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(args.threads)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(args.dir, dtype=dtype).eval()
    vocab = model.config.vocab_size
    gen = torch.Generator().manual_seed(0)
    for batch in args.batch:
        prompt = torch.randint(0, vocab, (batch, args.prompt), generator=gen)
        prefill, decode, _ = time_generation(model, prompt, args.decode, args.repeat)
        print_rates(batch, args.prompt, args.decode, prefill, decode)


def time_generation(model, prompt, decode, repeat):
    """A causal LM's prefill of `prompt` (B x P ids) and `decode` greedy steps through its
    DynamicCache, the best of `repeat` runs each: (prefill seconds, decode seconds, the last
    run's cache)."""
    from transformers import DynamicCache

    best_prefill = best_decode = float("inf")
    for _ in range(repeat):
        with torch.inference_mode():
            cache = DynamicCache(config=model.config)
            t0 = time.perf_counter()
            out = model(input_ids=prompt, past_key_values=cache, use_cache=True, logits_to_keep=1)
            t1 = time.perf_counter()
            token = out.logits[:, -1].argmax(-1, keepdim=True)
            for _ in range(decode):
                out = model(input_ids=token, past_key_values=cache, use_cache=True,
                            logits_to_keep=1)
                token = out.logits[:, -1].argmax(-1, keepdim=True)
            t2 = time.perf_counter()
        best_prefill = min(best_prefill, t1 - t0)
        best_decode = min(best_decode, t2 - t1)
    return best_prefill, best_decode, cache


def print_rates(batch, prompt, decode, prefill_seconds, decode_seconds):
    """The prefill and decode lines of mt_bench_inference's format."""
    for what, n, s in (("prefill", prompt, prefill_seconds), ("decode", decode, decode_seconds)):
        print(f"{what} batch={batch} tokens={n} seconds={s:.4f} "
              f"tokens_per_s={batch * n / s:.2f}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("shape", choices=["gpt2-small", "llama-1b", "mixtral-tiny", "qwen2.5-0.5b",
                                     "gemma3-1b"])
    m.add_argument("dir")
    m.add_argument("--seed", type=int, default=1234)
    t = sub.add_parser("tokenizer")
    t.add_argument("dir")
    t.add_argument("--gpt2-vocab", default="")
    g = sub.add_parser("gguf-config")
    g.add_argument("dir")
    b = sub.add_parser("bench")
    b.add_argument("dir")
    b.add_argument("--threads", type=int, required=True)
    b.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    b.add_argument("--prompt", type=int, default=128)
    b.add_argument("--decode", type=int, default=64)
    b.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    b.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    {"make": make, "tokenizer": tokenizer, "gguf-config": gguf_config,
     "bench": bench}[args.command](args)


if __name__ == "__main__":
    main()
