#!/usr/bin/env bash
# Checkpoint conversion speed (GB/s of weights) and peak memory of megatron-convert beside
# Megatron-LM's tools/checkpoint/convert.py and a torch.save/torch.load floor, printed as markdown.
#   PYTHON=/path/to/python MEGATRON_LM=/path/to/Megatron-LM bench/convert_bench.sh
# The model: a random ~0.85B-parameter Llama (16 layers, hidden 2048, 32 heads / 8 KV heads,
# FFN 5632, vocabulary 32000, untied), fp32 safetensors made with transformers in
# $CONVBENCH_DIR (kept and reused when given; otherwise a mktemp folder, removed at exit).
# Peers (each skipped, saying so, when its variable is unset):
#   PYTHON=/path/to/python        torch + transformers (makes the model; the torch.save floor)
#   MEGATRON_LM=/path/to/checkout  core_v0.13.0, whose tools/checkpoint/convert.py runs under
#                                  $PYTHON with megatron's deps; MEGATRON_PYTHONPATH goes first
#                                  on its path (its llama_mistral loader asserts transformers
#                                  4.x >= 4.31 and needs accelerate: e.g. a pip --target folder)
# convert.py does not run on a CPU as shipped; the shim this script writes (meg_cpu_shim.py,
# see docs/benchmarks.md) patches only what needs a GPU or Transformer Engine.
# Builds nothing: BUILD_DIR selects the build (default build) holding bin/megatron-convert.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/convert_bench_common.sh
convert_bench_setup "${CONVBENCH_DIR:-}"
hf="$work/hf"

if [ ! -f "$hf/config.json" ]; then
    [ -n "${PYTHON:-}" ] || { echo "PYTHON unset: cannot make the random model in $hf" >&2; exit 1; }
    "$PYTHON" - "$hf" <<'PY'
import json, sys, torch, transformers
from tokenizers import Tokenizer, models, pre_tokenizers
cfg = transformers.LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=16,
    num_attention_heads=32, num_key_value_heads=8, vocab_size=32000, max_position_embeddings=4096,
    rms_norm_eps=1e-5, tie_word_embeddings=False)
torch.manual_seed(0)
transformers.LlamaForCausalLM(cfg).to(torch.float32).save_pretrained(sys.argv[1], max_shard_size="2GB")
# Megatron's loader reads the true vocabulary size from a tokenizer: a word-level one of 32000.
vocab = {"<unk>": 0, "<s>": 1, "</s>": 2} | {f"t{i}": i for i in range(3, 32000)}
tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                     unk_token="<unk>").save_pretrained(sys.argv[1])
# transformers 5 names its own backend class, which the 4.x that convert.py needs cannot load.
cfg_path = sys.argv[1] + "/tokenizer_config.json"
tok_cfg = json.load(open(cfg_path))
tok_cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
json.dump(tok_cfg, open(cfg_path, "w"), indent=2)
PY
fi
# Weight bytes: the safetensors files' sizes (their JSON headers add under 0.01%).
bytes=$(stat -c %s "$hf"/*.safetensors | awk '{ s += $1 } END { print s }')
gb=$(awk -v b="$bytes" 'BEGIN { printf "%.3f", b / 1e9 }')

# Peak RSS summed over a process and its descendants (convert.py runs its saver in a child
# process, and /usr/bin/time reports only the largest single process), sampled every 0.1 s.
tree_rss_kb() {
    local pids="$1" all="" next
    while [ -n "$pids" ]; do
        all="$all $pids"
        next=""
        for p in $pids; do next="$next $(pgrep -P "$p" || true)"; done
        pids="$(echo $next)"
    done
    { ps -o rss= -p "$(echo $all | tr ' ' ,)" 2>/dev/null || true; } |
        awk '{ s += $1 } END { print s + 0 }'
}

# run LABEL DIR CMD...: warm the page cache with DIR, time CMD, print a table row.
run() {
    local label="$1" src="$2"; shift 2
    warm_source "$src"
    local log="$work/last.log" peak=0 rss t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -v "$@" >"$log" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        rss=$(tree_rss_kb "$pid" || echo 0)
        [ "$rss" -gt "$peak" ] && peak=$rss
        sleep 0.1
    done
    if ! wait "$pid"; then
        echo "| $label | failed (see below) | | | |"
        tail -5 "$log" | sed 's/^/    /'
        return
    fi
    t1=$(date +%s.%N)
    local s maxrss
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    maxrss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log")
    echo "| $label | $s | $(awk -v g="$gb" -v s="$s" 'BEGIN { printf "%.3f", g / s }') |" \
        "$(awk -v k="$maxrss" 'BEGIN { printf "%.2f", k / 1048576 }') |" \
        "$(awk -v k="$peak" 'BEGIN { printf "%.2f", k / 1048576 }') |"
}

echo "model: $hf, $gb GB of fp32 weights; machine: $(nproc) cores," \
    "$(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/^Mem:/ { print $2 }') GiB;" \
    "load: $(uptime | sed 's/.*load average: //')"
echo
echo "| conversion | seconds | GB/s | peak RSS, largest process (GiB) | peak RSS, all processes (GiB) |"
echo "|---|---|---|---|---|"
rm -rf "$work/ours_core" "$work/ours_dist"
run "megatron-convert: HF → core (torch) TP2" "$hf" \
    "$bin/megatron-convert" --model-type GPT --loader llama_mistral --checkpoint-type hf \
    --load-dir "$hf" --saver core --target-tensor-parallel-size 2 --save-dir "$work/ours_core"
run "megatron-convert: torch TP2 → torch_dist" "$work/ours_core" \
    "$bin/megatron-convert" --model-type GPT --loader core --load-dir "$work/ours_core" \
    --saver torch_dist --save-dir "$work/ours_dist"

if [ -n "${MEGATRON_LM:-}" ] && [ -n "${PYTHON:-}" ]; then
    cat >"$work/meg_cpu_shim.py" <<'PY'
# Runs Megatron-LM's tools/checkpoint/convert.py unchanged but for what needs a GPU or
# Transformer Engine, each patched here because the stock tool stops on it on a CPU.
import os, runpy, sys
import torch
import megatron.training.arguments as arguments
# TransformerConfig refuses apply_rope_fusion and ColumnParallelLinear refuses
# gradient_accumulation_fusion (both on by default) without TE or Apex; the loader and the
# saver build their Megatron argv themselves, so the flags are added at parse time.
CPU_FLAGS = ["--no-rope-fusion", "--no-gradient-accumulation-fusion"]
_parse_args = arguments.parse_args
def parse_args(*args, **kwargs):
    sys.argv += [f for f in CPU_FLAGS if f not in sys.argv]
    return _parse_args(*args, **kwargs)
arguments.parse_args = parse_args
# validate_args asks the GPU's architecture when TP > 1 (to choose a warning): say Hopper.
arguments.get_device_arch_version = lambda: 9
if not torch.cuda.is_available():
    # The legacy model the llama_mistral loader builds makes its RotaryEmbedding without
    # use_cpu_initialization, which then calls torch.cuda.current_device().
    torch.cuda.current_device = lambda: "cpu"
    # save_checkpoint records torch.cuda.get_rng_state() even under --no-save-rng.
    torch.cuda.get_rng_state = lambda device="cuda": torch.get_rng_state()
# get_tensor_model_parallel_group_if_none / get_pg_size answer None / 1 while torch.distributed
# is not initialised (convert.py never initialises it), so the saver's VocabParallelEmbedding
# ignores convert.py's fake TP group and keeps all rows: at TP 2 the stock saver fails with
# "The size of tensor a (32000) must match the size of tensor b (16000)".
import megatron.core.tensor_parallel.layers as layers
from megatron.core import parallel_state
layers.get_tensor_model_parallel_group_if_none = lambda tp_group, is_expert=False, \
    check_initialized=True: tp_group if tp_group is not None else parallel_state._TENSOR_MODEL_PARALLEL_GROUP
layers.get_pg_size = lambda group=None: 1 if group is None else group.size()
layers.get_pg_rank = lambda group=None: 0 if group is None else group.rank()
convert = os.path.join(os.environ["MEGATRON_LM"], "tools/checkpoint/convert.py")
sys.path.insert(0, os.path.dirname(convert))
# saver_base asserts importlib.metadata.version("transformer-engine") >= 0.12 before any
# saver runs, even with --saver-transformer-impl local; TE does not install without CUDA.
import saver_base
from importlib.metadata import version as _version
saver_base.version = lambda name: "0.12.0" if name == "transformer-engine" else _version(name)
sys.argv = [convert] + sys.argv[1:]
runpy.run_path(convert, run_name="__main__")
PY
    rm -rf "$work/meg_core"
    export MEGATRON_LM CUDA_DEVICE_MAX_CONNECTIONS=1
    export PYTHONPATH="${MEGATRON_PYTHONPATH:+$MEGATRON_PYTHONPATH:}$MEGATRON_LM"
    run "Megatron-LM convert.py (CPU shim): HF → core (torch) TP2" "$hf" \
        "$PYTHON" "$work/meg_cpu_shim.py" --model-type GPT --loader llama_mistral \
        --checkpoint-type hf --model-size llama3 --load-dir "$hf" --tokenizer-model "$hf" \
        --saver core --saver-transformer-impl local --target-tensor-parallel-size 2 \
        --save-dir "$work/meg_core"
    unset PYTHONPATH
    echo "| Megatron-LM convert.py: torch → torch_dist | no such saver (core, legacy, llava, hf_llava) | | | |"
else
    echo "| Megatron-LM convert.py: skipped (set MEGATRON_LM and PYTHON) | | | | |"
fi

if [ -n "${PYTHON:-}" ]; then
    # Floor: torch.save / torch.load of the same fp32 state dict (one file, no resharding).
    "$PYTHON" - "$hf" "$work/floor.pt" >"$work/floor.txt" <<'PY'
import glob, sys, time, torch
from safetensors.torch import load_file
sd = {}
for f in sorted(glob.glob(sys.argv[1] + "/*.safetensors")):
    sd.update(load_file(f))
t0 = time.perf_counter(); torch.save(sd, sys.argv[2]); t1 = time.perf_counter()
del sd
t2 = time.perf_counter(); sd = torch.load(sys.argv[2], weights_only=True); t3 = time.perf_counter()
print(f"{t1 - t0:.2f} {t3 - t2:.2f}")
PY
    read -r save load <"$work/floor.txt"
    echo "| torch.save of the state dict (in memory → one file; floor) | $save | $(awk -v g="$gb" -v s="$save" 'BEGIN { printf "%.3f", g / s }') | | |"
    echo "| torch.load of that file (floor) | $load | $(awk -v g="$gb" -v s="$load" 'BEGIN { printf "%.3f", g / s }') | | |"
    rm -f "$work/floor.pt"
else
    echo "| torch.save / torch.load floor: skipped (set PYTHON) | | | | |"
fi
