"""`compile-lint --fix --verify` at project scale: a baseline commit against this checkout.

Builds a model package laid out as users write one (issue 24 item 6): `zoo/` holds
FILES modules of MODELS_PER_FILE model classes each, and one `targets.py` imports every
module of the package and has a factory per module (the module's blocks chained). A few
modules carry a fixable graph break or recompile (a data-dependent `if`, a `print`, a
Python counter in `forward`), and one carries a fix that changes outputs (a `torch.where`
over arms of different shapes), which the verifier must roll back. Then, on a fresh copy
of the project each, it runs

    python -m compile_lint --fix --unsafe-fixes --verify zoo

with the baseline commit's `compile_lint` (exported with `git archive`) and with this
checkout's, timed (wall clock), and records which files each wrote and rolled back (they
must agree), how many target runs this checkout made, and whether a temp dir was left.

Usage (from the repository root, in the dev virtualenv):

    python benchmarks/fix_verify_scale.py --baseline 0d14f0e
    python benchmarks/fix_verify_scale.py --baseline 0d14f0e --files 4 --models-per-file 2   # smaller

At 100+ targets (issue 32 item 2): `--per-model-targets` gives every model class a target of
its own (targets.py still imports the whole package, so every target imports every fixed
file), and `--never-compiles` adds a module whose model calls a custom op with no fake
kernel and an output shape no fix can infer (it never compiles, before or after the fixes)
and also prints (a fix). `--jobs N` passes `-j N` to this checkout (N // 2 targets at once):

    python benchmarks/fix_verify_scale.py --files 30 --models-per-file 4 --fixable 15 \
        --per-model-targets --never-compiles --jobs 16 --out benchmarks/results/fix_verify_scale_120

Writes benchmarks/results/fix_verify_scale.{md,json} (or --out PREFIX) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE_NAMES = ("attention", "conv", "mixer", "gating", "norms", "heads", "embed", "pooling",
                "routing", "recurrent", "adapters", "decoders")

# Blocks take and return (batch, tokens, width); the last block of a module may change width.
PLAIN_BLOCKS = {
    "mlp": """
        class {name}(nn.Module):
            def __init__(self, width=16):
                super().__init__()
                self.norm = nn.LayerNorm(width)
                self.fc1 = nn.Linear(width, 2 * width)
                self.fc2 = nn.Linear(2 * width, width)

            def forward(self, x):
                return x + self.fc2(F.gelu(self.fc1(self.norm(x))))
    """,
    "attention": """
        class {name}(nn.Module):
            def __init__(self, width=16, heads=2):
                super().__init__()
                self.heads = heads
                self.qkv = nn.Linear(width, 3 * width)
                self.out = nn.Linear(width, width)

            def forward(self, x):
                batch, tokens, width = x.shape
                q, k, v = self.qkv(x).view(batch, tokens, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
                y = F.scaled_dot_product_attention(q, k, v)
                return x + self.out(y.transpose(1, 2).reshape(batch, tokens, width))
    """,
    "glu": """
        class {name}(nn.Module):
            def __init__(self, width=16):
                super().__init__()
                self.gate = nn.Linear(width, width)
                self.value = nn.Linear(width, width)

            def forward(self, x):
                return x + torch.sigmoid(self.gate(x)) * self.value(x)
    """,
}

# Each carries one finding whose fix `--fix --unsafe-fixes` applies (tensor-branch-fix = "where"):
# a projection, then a `forward` body of its own kind.
FIXABLE_HEAD = """
    class {name}(nn.Module):
        def __init__(self, width=16):
            super().__init__()
            self.proj = nn.Linear(width, width){extra_init}

        def forward(self, x):
"""
FIXABLE_BODIES = {
    "branch": ("", """
            h = self.proj(x)
            if h.mean() > 0:
                out = x + h
            else:
                out = x - h
            return out
    """),
    "print": ("", """
            h = self.proj(x)
            print("{name} out", h.shape)
            return x + h.relu()
    """),
    "counter": ("\n        self.step = 0", """
            self.step += 1
            return x + self.proj(x) * self.step
    """),
}


def fixable_block(kind: str) -> str:
    """The template of a block with one fixable finding of `kind`."""
    extra_init, body = FIXABLE_BODIES[kind]
    head = textwrap.dedent(FIXABLE_HEAD).replace("{extra_init}", extra_init)
    return head + textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8) + "\n"


# The fix is wrong: the arms differ in shape (a submodule's output, which the linter cannot
# see), so torch.where broadcasts. Always the last block of its module.
WRONG_FIX_BLOCK = """
    class {name}(nn.Module):
        def __init__(self, width=16):
            super().__init__()
            self.pool = nn.Linear(width, 1)

        def forward(self, x):
            return self.pool(x) if x.abs().sum() > 0 else x
"""

# Never compiles, before or after the fixes: a custom op with no fake kernel whose output
# shape (a norm per row) JIT701's fix cannot infer. Its print has a fix (an is_compiling guard).
NEVER_COMPILES_MODULE = "opaque"
NEVER_COMPILES_HEADER = """
    @torch.library.custom_op("fix_verify_scale::row_norms", mutates_args=())
    def row_norms(x: torch.Tensor) -> torch.Tensor:
        return x.norm(dim=-1, keepdim=True)
"""
NEVER_COMPILES_BLOCK = """
    class {name}(nn.Module):
        def __init__(self, width=16):
            super().__init__()
            self.proj = nn.Linear(width, width)

        def forward(self, x):
            h = self.proj(x)
            print("{name} out", h.shape)
            return x + h / row_norms(h)
"""

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"


def class_name(module: str, index: int) -> str:
    return f"{module.capitalize()}Block{index}"


def module_names(files: int) -> list[str]:
    """`files` module names: MODULE_NAMES, then numbered rounds of them."""
    return [name if round_number == 0 else f"{name}{round_number + 1}"
            for round_number in range((files + len(MODULE_NAMES) - 1) // len(MODULE_NAMES))
            for name in MODULE_NAMES][:files]


def make_project(root: str, files: int, models_per_file: int, fixable: int, per_model_targets: bool = False,
                 never_compiles: bool = False) -> dict:
    """Write the package, `targets.py` and `pyproject.toml`; what it holds."""
    modules = module_names(files)
    kinds = list(FIXABLE_BODIES)
    package = os.path.join(root, "zoo")
    os.makedirs(package)
    layout = {}
    for number, module in enumerate(modules):
        blocks = []
        for index in range(models_per_file):
            plain = list(PLAIN_BLOCKS.values())[(number + index) % len(PLAIN_BLOCKS)]
            blocks.append(plain)
        role = "plain"
        if number < fixable - 1:
            role = kinds[number % len(kinds)]
            blocks[1 % models_per_file] = fixable_block(role)
        elif number == fixable - 1:
            role = "wrong fix"
            blocks[-1] = WRONG_FIX_BLOCK
        layout[module] = role
        _write_module(package, module, blocks)
    if never_compiles:
        module = NEVER_COMPILES_MODULE
        blocks = [list(PLAIN_BLOCKS.values())[index % len(PLAIN_BLOCKS)] for index in range(models_per_file)]
        blocks[0] = NEVER_COMPILES_BLOCK
        layout[module] = "never compiles"
        _write_module(package, module, blocks, NEVER_COMPILES_HEADER)
        modules = [*modules, module]
    with open(os.path.join(package, "__init__.py"), "w", encoding="utf-8") as handle:
        handle.write("".join(f"from zoo import {module}\n" for module in modules))
    factories, targets = [], []
    calls = "[(torch.randn(2, 8, 16),), (torch.randn(2, 8, 16) + 1,)]"
    for module in modules:
        if per_model_targets:
            for index in range(models_per_file):
                factories.append(f"\n\ndef make_{module}_{index}():\n"
                                 f"    return {module}.{class_name(module, index)}(), {calls}\n")
                targets.append(f"targets.py:make_{module}_{index}")
            continue
        chain = ", ".join(f"{module}.{class_name(module, index)}()" for index in range(models_per_file))
        factories.append(f"\n\ndef make_{module}():\n    model = nn.Sequential({chain})\n    return model, {calls}\n")
        targets.append(f"targets.py:make_{module}")
    with open(os.path.join(root, "targets.py"), "w", encoding="utf-8") as handle:
        handle.write("import torch\nfrom torch import nn\n\n" + f"from zoo import {', '.join(modules)}\n"
                     + "".join(factories))
    with open(os.path.join(root, "pyproject.toml"), "w", encoding="utf-8") as handle:
        handle.write(f'[tool.compile-lint]\ntensor-branch-fix = "where"\n\n'
                     f'[tool.compile-lint.verify]\ntargets = [{", ".join(map(json.dumps, targets))}]\n')
    return {"modules": list(modules), "models": len(modules) * models_per_file, "roles": layout,
            "targets": len(targets)}


def _write_module(package: str, module: str, blocks: list[str], header: str = "") -> None:
    text = HEADER + ("\n\n" + textwrap.dedent(header).strip("\n") + "\n" if header else "") + "".join(
        "\n\n" + textwrap.dedent(block).strip("\n").format(name=class_name(module, index)) + "\n"
        for index, block in enumerate(blocks))
    with open(os.path.join(package, f"{module}.py"), "w", encoding="utf-8") as handle:
        handle.write(text)


def export_commit(commit: str, destination: str) -> str:
    """`compile_lint` as it was at `commit`, extracted under `destination`; the resolved commit."""
    resolved = subprocess.run(["git", "-C", ROOT, "rev-parse", commit], check=True, capture_output=True,
                              text=True).stdout.strip()
    archive = subprocess.run(["git", "-C", ROOT, "archive", resolved, "compile_lint"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", destination], input=archive, check=True)
    return resolved


def snapshot(root: str) -> dict:
    found = {}
    for directory, _, names in os.walk(os.path.join(root, "zoo")):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as handle:
                    found[os.path.relpath(path, root)] = handle.read()
    return found


def run_variant(label: str, code_root: str, project: str, scratch: str, limit_s: float,
                jobs: Optional[int] = None) -> dict:
    """Fix a fresh copy of `project` with the compile_lint under `code_root` (`-j jobs` when
    given); what it did and took."""
    work = os.path.join(scratch, label)
    shutil.copytree(project, work)
    private_tmp = os.path.join(scratch, f"{label}-tmp")
    os.mkdir(private_tmp)
    before = snapshot(work)
    # code_root first (the baseline's compile_lint wins), then what was there (e.g. where libcst is).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (code_root, os.environ.get("PYTHONPATH")) if p),
               TMPDIR=private_tmp,
               TORCHINDUCTOR_CACHE_DIR=os.path.join(scratch, "inductor-cache"))
    command = [sys.executable, "-m", "compile_lint", "--fix", "--unsafe-fixes", "--verify", "zoo",
               *(["-j", str(jobs)] if jobs else [])]
    # CPU time of the whole tree (the workers are waited for by the tool, the tool by us): on
    # a shared machine it varies less with the load than wall time does.
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    try:
        done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=limit_s)
        status, stderr, done_stdout = done.returncode, done.stderr, done.stdout
    except subprocess.TimeoutExpired as expired:
        stderr = (expired.stderr or b"").decode() if isinstance(expired.stderr, bytes) else ""
        status, done_stdout = None, ""
    elapsed = time.monotonic() - start
    spent = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (spent.ru_utime - usage.ru_utime) + (spent.ru_stime - usage.ru_stime)
    after = snapshot(work)
    changed = sorted(path for path in before if before[path] != after[path])
    # "compile-lint: warning: PATH: fix rolled back" (an error before issue 32)
    rolled_back = sorted({re.split(r"(?:error|warning): ", line.split(": fix rolled back")[0])[-1]
                          for line in stderr.splitlines() if ": fix rolled back" in line})
    runs = re.search(r"in (\d+) target run", stderr)  # only this checkout says
    lines = stderr.splitlines()
    return {"label": label, "command": " ".join(command[1:]), "status": status, "wall_s": round(elapsed, 1),
            "cpu_s": round(cpu, 1), "written": changed, "rolled_back": rolled_back,
            "target_runs": int(runs.group(1)) if runs else None,
            "bisect_runs": sum(line.lstrip().startswith("bisect run") for line in lines),
            "neutral_targets": sum(": neutral with " in line for line in lines),
            "summary": next((line for line in reversed(done_stdout.splitlines()) if line.strip()), "")
            if status is not None else "",
            "temp_left": sorted(os.listdir(private_tmp)), "stderr_tail": stderr[-3000:],
            "progress": [line for line in lines if line.startswith(("verifying", "verified", "  "))]}


def render(meta: dict, results: list[dict]) -> str:
    project = meta["project"]
    fixed_files = sum(role != "plain" for role in project["roles"].values())
    lines = [
        "# `--fix --verify` at project scale",
        "",
        f"Command: `{meta['command']}`",
        "",
        f"Machine: {meta['cpus']} CPU cores (load average at start {meta['load']}), Python {meta['python']}, "
        f"torch {meta['torch']}.",
        "",
        f"Project: `zoo/` with {len(project['modules'])} modules, {project['models']} model classes; "
        f"`targets.py` imports every module and has {project['targets']} factories (targets), so every target "
        f"imports every one of the {fixed_files} fixed files. Modules with a fix (the rest are plain):",
        "",
        ", ".join(f"`{module}` {role}" for module, role in project["roles"].items() if role != "plain"),
        "",
        "| code | wall time (s) | CPU time (s) | target runs | bisect runs | neutral targets | exit | files written "
        "| files rolled back | temp dirs left |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for result in results:
        wall = f"{result['wall_s']:g}" if result["status"] is not None else f"> {result['wall_s']:g} (stopped)"
        # The baseline before issue 24 ran every target that imports a fixed file once per fixed file.
        runs = (result["target_runs"] if result["target_runs"] is not None else
                f"{fixed_files} x {project['targets']} = {fixed_files * project['targets']} (files x targets)")
        lines.append(f"| {result['label']} | {wall} | {result['cpu_s']:g} | {runs} | "
                     f"{result.get('bisect_runs', '-')} | {result.get('neutral_targets', '-')} | {result['status']} | "
                     f"{len(result['written'])}: {', '.join(result['written']) or '-'} | "
                     f"{len(result['rolled_back'])}: {', '.join(result['rolled_back']) or '-'} | "
                     f"{len(result['temp_left'])} |")
    if len(results) == 2 and all(result["status"] is not None for result in results):
        old, new = results
        lines += ["", f"Speed-up: {old['wall_s'] / new['wall_s']:.2f}x wall, {old['cpu_s'] / new['cpu_s']:.2f}x CPU; "
                      "same files written and rolled back: "
                      f"{old['written'] == new['written'] and old['rolled_back'] == new['rolled_back']}."]
    for result in results:
        if result.get("summary"):
            lines += ["", f"{result['label']}, the summary line: `{result['summary']}`"]
    progress = results[-1].get("progress") or [line for line in results[-1]["stderr_tail"].splitlines()
                                               if line.startswith(("verifying", "verified", "  "))]
    shown = progress if len(progress) <= 60 else [*progress[:25], f"... ({len(progress) - 50} lines)", *progress[-25:]]
    lines += ["", "This checkout's progress (stderr):", "", "```text", *shown, "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a commit to time against (its compile_lint via git archive)")
    parser.add_argument("--files", type=int, default=8, help="modules in the package (default 8)")
    parser.add_argument("--models-per-file", type=int, default=3, help="model classes per module (default 3)")
    parser.add_argument("--fixable", type=int, default=5,
                        help="modules with a fix, the last of them a wrong one (default 5)")
    parser.add_argument("--per-model-targets", action="store_true",
                        help="a target per model class (default: one per module, its classes chained)")
    parser.add_argument("--never-compiles", action="store_true",
                        help="add a module whose model never compiles (a custom op with no fake kernel) and prints")
    parser.add_argument("--jobs", type=int, help="pass -j JOBS to this checkout (JOBS // 2 targets at once)")
    parser.add_argument("--limit", type=float, default=3600.0, help="stop a variant after this many seconds")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "fix_verify_scale"))
    args = parser.parse_args()
    if not 1 <= args.fixable <= args.files:
        parser.error("need 1 <= --fixable <= --files")

    import torch

    scratch = tempfile.mkdtemp(prefix="fix-verify-scale-")
    try:
        project = os.path.join(scratch, "project")
        os.mkdir(project)
        layout = make_project(project, args.files, args.models_per_file, args.fixable, args.per_model_targets,
                              args.never_compiles)
        variants = []
        if args.baseline:
            baseline_root = os.path.join(scratch, "baseline")
            os.mkdir(baseline_root)
            resolved = export_commit(args.baseline, baseline_root)
            variants.append((f"baseline {resolved[:10]}", baseline_root))
        try:  # a copy of the tree without git (the GPU machine's) has no commit to name
            head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=10", "HEAD"], capture_output=True,
                                  text=True).stdout.strip() or "no git"
        except OSError:
            head = "no git"
        variants.append((f"this checkout ({head})", ROOT))
        meta = {"command": " ".join(["python", "benchmarks/fix_verify_scale.py", *sys.argv[1:]]),
                "cpus": os.cpu_count(), "load": ", ".join(f"{value:.2f}" for value in os.getloadavg()),
                "python": platform.python_version(), "torch": torch.__version__, "project": layout}
        results = []
        for number, (label, code_root) in enumerate(variants):
            sys.stderr.write(f"running {label} ...\n")
            jobs = args.jobs if code_root == ROOT else None
            results.append(run_variant(f"run-{number}", code_root, project, scratch, args.limit, jobs))
            results[-1]["label"] = label
            sys.stderr.write(f"  {results[-1]['wall_s']} s\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report = render(meta, results)
    with open(args.out + ".md", "w", encoding="utf-8") as handle:
        handle.write(report)
    with open(args.out + ".json", "w", encoding="utf-8") as handle:
        json.dump({"meta": meta, "results": results}, handle, indent=2)
    sys.stdout.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
