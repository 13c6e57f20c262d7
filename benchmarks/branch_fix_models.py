"""Run real transformers models original vs fixed by the tensor-branch rewrites.

A spot check of the JIT101/JIT201 rewrites on the library code itself (the project-wide
proof is benchmarks/fix_realworld.py): the installed transformers package is copied, the
model files below are fixed with `--fix --unsafe-fixes --select JIT101,...,JIT202`, and
each model is built twice from the same seed, from the original and from the fixed copy,
in separate processes. Outputs (eval, and train with dropout off) must be equal, and the
fixed code's rewritten path must compile with `fullgraph=True` (backend "eager").

    RW_PYTHON=/path/to/venv/bin/python python benchmarks/branch_fix_models.py [--out FILE]

RW_PYTHON is an environment with torch 2.13 and transformers 5.23 (the `[realworld]`
extra, see benchmarks/realworld_models.py); this script itself needs compile-lint.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

CODES = "JIT101,JIT102,JIT103,JIT201,JIT202"

# name -> (model files to fix, relative to the transformers package; child code building
# `model`, `inputs` and the rewritten callable `target` to compile).
CASES = {
    "wav2vec2-ctc-labels": (["models/wav2vec2/modeling_wav2vec2.py"], """
from transformers import Wav2Vec2Config, Wav2Vec2ForCTC
config = Wav2Vec2Config(vocab_size=12, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
    intermediate_size=37, conv_dim=(8, 8), conv_stride=(4, 4), conv_kernel=(8, 8), num_conv_pos_embeddings=16,
    num_conv_pos_embedding_groups=2, hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
    feat_proj_dropout=0.0, final_dropout=0.0, layerdrop=0.0, mask_time_prob=0.0, ctc_loss_reduction="mean")
model = Wav2Vec2ForCTC(config)
inputs = [dict(input_values=torch.randn(2, 1600), labels=torch.randint(1, 12, (2, 5)))]
target = lambda: model(**inputs[0]).loss
"""),
    "rt-detr-encoder-clamp": (["models/rt_detr/modeling_rt_detr.py"], """
from transformers import RTDetrConfig
from transformers.models.rt_detr.modeling_rt_detr import RTDetrEncoderLayer
config = RTDetrConfig(encoder_hidden_dim=16, encoder_ffn_dim=32, num_attention_heads=2, dropout=0.0,
    activation_dropout=0.0, encoder_attention_heads=2)
model = RTDetrEncoderLayer(config)
big = torch.randn(2, 6, 16)
big[0, 0, 0] = float("inf")
inputs = [dict(hidden_states=torch.randn(2, 6, 16), attention_mask=None), dict(hidden_states=big, attention_mask=None)]
target = lambda: model(**inputs[0])
compile_mode = "train"  # the clamp runs only in training
"""),
    "fsmt-padding-mask": (["models/fsmt/modeling_fsmt.py"], """
from transformers import FSMTConfig, FSMTForConditionalGeneration
config = FSMTConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, encoder_layers=1, decoder_layers=1,
    encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
    max_position_embeddings=32, langs=["en", "de"], dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
    pad_token_id=1, encoder_layerdrop=0.0, decoder_layerdrop=0.0)
model = FSMTForConditionalGeneration(config)
inputs = [dict(input_ids=torch.tensor([[5, 6, 7, 8], [9, 10, 11, 2]]), decoder_input_ids=torch.tensor([[2, 5, 6, 7], [2, 8, 9, 1]])),
          dict(input_ids=torch.tensor([[5, 6, 7, 8], [9, 10, 11, 2]]), decoder_input_ids=torch.tensor([[2, 5, 6, 7], [2, 8, 9, 3]]))]
from transformers.models.fsmt.modeling_fsmt import make_padding_mask
target = lambda: make_padding_mask(inputs[1]["decoder_input_ids"], 1)
"""),  # noqa: E501 - the child program as it ran for results/branch_fix_models.md
    "prophetnet-shift-right": (["models/prophetnet/modeling_prophetnet.py"], """
from transformers import ProphetNetConfig, ProphetNetForConditionalGeneration
config = ProphetNetConfig(vocab_size=30, hidden_size=16, num_encoder_layers=1, num_decoder_layers=1,
    num_encoder_attention_heads=2, num_decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
    ngram=2, num_buckets=8, relative_max_distance=16, max_position_embeddings=32, dropout=0.0,
    attention_dropout=0.0, activation_dropout=0.0, decoder_start_token_id=2, pad_token_id=0)
model = ProphetNetForConditionalGeneration(config)
labels = torch.tensor([[5, 6, 7, -100], [8, 9, -100, -100]])
inputs = [dict(input_ids=torch.tensor([[5, 6, 7, 8], [9, 10, 11, 3]]), labels=labels)]
target = lambda: model._shift_right(labels)
"""),
}

CHILD = r"""
import json, sys
sys.path.insert(0, {root!r}) if {root!r} else None
sys.path.insert(0, {bench!r})
from realworld_models import ensure_torchvision_importable
ensure_torchvision_importable()
import torch, transformers
assert ({root!r} == "") or transformers.__file__.startswith({root!r}), transformers.__file__
torch.manual_seed(0)
{setup}
results = {{}}
for mode in ("eval", "train"):
    model.train(mode == "train")
    torch.manual_seed(1)
    outs = []
    for kwargs in inputs:
        out = model(**kwargs)
        tensors = [out] if isinstance(out, torch.Tensor) else [v for v in (out.values() if hasattr(out, "values") else out) if isinstance(v, torch.Tensor)]
        outs.append([t.detach().tolist() for t in tensors])
    results[mode] = outs
compiled = None
if {root!r}:
    import torch._dynamo
    from torch._dynamo.utils import counters
    model.train(globals().get("compile_mode", "eval") == "train")
    torch._dynamo.reset()
    counters.clear()
    try:
        torch.compile(target, fullgraph=True, backend="eager")()
        compiled = "fullgraph ok"
    except Exception as error:
        torch._dynamo.reset()
        counters.clear()
        torch.compile(target, backend="eager")()
        kinds = sorted({{reason.splitlines()[0] for reason in (*counters["graph_break"], *counters["unimplemented"])}})
        compiled = "breaks elsewhere: " + "; ".join(kinds) if not any(
            "Data-dependent branching" in kind or "item()" in kind for kind in kinds) else "STILL BREAKS: " + "; ".join(kinds)
print(json.dumps({{"results": results, "compiled": compiled}}))
"""  # noqa: E501 - the child program as it ran for results/branch_fix_models.md


def fix_copy(package: str, files: list[str], workdir: str) -> tuple[str, str]:
    """Copy the transformers package under `workdir` and fix `files` there; the copy's root and the diff."""
    root = os.path.join(workdir, "fixed")
    shutil.copytree(package, os.path.join(root, "transformers"))
    targets = [os.path.join(root, "transformers", name) for name in files]
    lint = [sys.executable, "-m", "compile_lint", "--select", CODES, "--unsafe-fixes", "--no-cache"]
    diff = subprocess.run([*lint, "--diff", *targets], capture_output=True, text=True, check=False).stdout
    subprocess.run([*lint, "--fix", "--exit-zero", *targets], capture_output=True, text=True, check=False)
    return root, diff


def run_child(python: str, root: str, setup: str) -> dict:
    """Build and run one case in `python`, from the fixed copy when `root` is set."""
    code = CHILD.format(root=root, bench=os.path.dirname(os.path.abspath(__file__)), setup=setup)
    result = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        return {"error": result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "failed"}
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    """Fix, run both sides, compare, print and write a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results/branch_fix_models.md")
    args = parser.parse_args()
    python = os.environ.get("RW_PYTHON")
    if not python:
        raise SystemExit("set RW_PYTHON to a python with torch 2.13 and transformers 5.23")
    package = subprocess.run([python, "-c", "import sys; sys.path.insert(0, %r); from realworld_models import "
                              "ensure_torchvision_importable; ensure_torchvision_importable(); "
                              "import transformers, os; print(os.path.dirname(transformers.__file__))"
                              % os.path.dirname(os.path.abspath(__file__))],
                             capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()[-1]
    rows = ["| case | lines changed | outputs (eval, train) | fixed code under torch.compile |",
            "| --- | ---: | --- | --- |"]
    failures = 0
    for name, (files, setup) in CASES.items():
        with tempfile.TemporaryDirectory(prefix="compile-lint-branch-models-") as workdir:
            root, diff = fix_copy(package, files, workdir)
            changed = sum(1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
            original = run_child(python, "", setup)
            fixed = run_child(python, root, setup)
        if "error" in original or "error" in fixed:
            verdict, compiled = f"error: {original.get('error') or fixed.get('error')}", "-"
            failures += 1
        else:
            equal = original["results"] == fixed["results"]
            verdict = "equal" if equal else "DIFFERENT"
            compiled = fixed["compiled"]
            failures += (not equal) + compiled.startswith("STILL")
        rows.append(f"| {name} | {changed} | {verdict} | {compiled} |")
    report = "\n".join(["# Tensor-branch rewrites on real transformers models", "",
                        f"`RW_PYTHON={python} python benchmarks/branch_fix_models.py`", "", *rows, ""])
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write(report)
    print(report)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
