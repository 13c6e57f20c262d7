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

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"


def class_name(module: str, index: int) -> str:
    return f"{module.capitalize()}Block{index}"


def make_project(root: str, files: int, models_per_file: int, fixable: int) -> dict:
    """Write the package, `targets.py` and `pyproject.toml`; what it holds."""
    modules = MODULE_NAMES[:files]
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
        text = HEADER + "".join("\n\n" + textwrap.dedent(block).strip("\n").format(name=class_name(module, index)) + "\n"
                                for index, block in enumerate(blocks))
        with open(os.path.join(package, f"{module}.py"), "w", encoding="utf-8") as handle:
            handle.write(text)
    with open(os.path.join(package, "__init__.py"), "w", encoding="utf-8") as handle:
        handle.write("".join(f"from zoo import {module}\n" for module in modules))
    factories = []
    for module in modules:
        chain = ", ".join(f"{module}.{class_name(module, index)}()" for index in range(models_per_file))
        factories.append(f"\n\ndef make_{module}():\n    model = nn.Sequential({chain})\n"
                         f"    return model, [(torch.randn(2, 8, 16),), (torch.randn(2, 8, 16) + 1,)]\n")
    with open(os.path.join(root, "targets.py"), "w", encoding="utf-8") as handle:
        handle.write("import torch\nfrom torch import nn\n\n" + f"from zoo import {', '.join(modules)}\n"
                     + "".join(factories))
    targets = ", ".join(f'"targets.py:make_{module}"' for module in modules)
    with open(os.path.join(root, "pyproject.toml"), "w", encoding="utf-8") as handle:
        handle.write(f'[tool.compile-lint]\ntensor-branch-fix = "where"\n\n'
                     f'[tool.compile-lint.verify]\ntargets = [{targets}]\n')
    return {"modules": list(modules), "models": files * models_per_file, "roles": layout}


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


def run_variant(label: str, code_root: str, project: str, scratch: str, limit_s: float) -> dict:
    """Fix a fresh copy of `project` with the compile_lint under `code_root`; what it did and took."""
    work = os.path.join(scratch, label)
    shutil.copytree(project, work)
    private_tmp = os.path.join(scratch, f"{label}-tmp")
    os.mkdir(private_tmp)
    before = snapshot(work)
    env = dict(os.environ, PYTHONPATH=code_root, TMPDIR=private_tmp,
               TORCHINDUCTOR_CACHE_DIR=os.path.join(scratch, "inductor-cache"))
    command = [sys.executable, "-m", "compile_lint", "--fix", "--unsafe-fixes", "--verify", "zoo"]
    # CPU time of the whole tree (the workers are waited for by the tool, the tool by us): on
    # a shared machine it varies less with the load than wall time does.
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    try:
        done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=limit_s)
        status, stderr = done.returncode, done.stderr
    except subprocess.TimeoutExpired as expired:
        status, stderr = None, (expired.stderr or b"").decode() if isinstance(expired.stderr, bytes) else ""
    elapsed = time.monotonic() - start
    spent = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (spent.ru_utime - usage.ru_utime) + (spent.ru_stime - usage.ru_stime)
    after = snapshot(work)
    changed = sorted(path for path in before if before[path] != after[path])
    # "compile-lint: warning: PATH: fix rolled back" (an error before issue 32)
    rolled_back = sorted({re.split(r"(?:error|warning): ", line.split(": fix rolled back")[0])[-1]
                          for line in stderr.splitlines() if ": fix rolled back" in line})
    runs = re.search(r"in (\d+) target run", stderr)  # only this checkout says
    return {"label": label, "status": status, "wall_s": round(elapsed, 1), "cpu_s": round(cpu, 1), "written": changed,
            "rolled_back": rolled_back, "target_runs": int(runs.group(1)) if runs else None,
            "temp_left": sorted(os.listdir(private_tmp)), "stderr_tail": stderr[-3000:]}


def render(meta: dict, results: list[dict]) -> str:
    lines = [
        "# `--fix --verify` at project scale",
        "",
        f"Command: `{meta['command']}`",
        "",
        f"Machine: {meta['cpus']} CPU cores (load average at start {meta['load']}), Python {meta['python']}, "
        f"torch {meta['torch']}.",
        "",
        f"Project: `zoo/` with {len(meta['project']['modules'])} modules, {meta['project']['models']} model classes; "
        f"`targets.py` imports every module and has one factory per module ({len(meta['project']['modules'])} "
        "targets). Modules and what their fix is:",
        "",
        ", ".join(f"`{module}` {role}" for module, role in meta["project"]["roles"].items()),
        "",
        "| code | wall time (s) | CPU time (s) | target runs | exit | files written | files rolled back | temp dirs left |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for result in results:
        wall = f"{result['wall_s']:g}" if result["status"] is not None else f"> {result['wall_s']:g} (stopped)"
        # The baseline runs every target that imports a fixed file once per fixed file.
        fixed_files = sum(role != "plain" for role in meta["project"]["roles"].values())
        runs = (result["target_runs"] if result["target_runs"] is not None else
                f"{fixed_files} x {len(meta['project']['modules'])} = {fixed_files * len(meta['project']['modules'])}"
                " (files x targets)")
        lines.append(f"| {result['label']} | {wall} | {result['cpu_s']:g} | {runs} | {result['status']} | "
                     f"{', '.join(result['written']) or '-'} | "
                     f"{', '.join(result['rolled_back']) or '-'} | {len(result['temp_left'])} |")
    if len(results) == 2 and all(result["status"] is not None for result in results):
        old, new = results
        lines += ["", f"Speed-up: {old['wall_s'] / new['wall_s']:.2f}x wall, {old['cpu_s'] / new['cpu_s']:.2f}x CPU; "
                      "same files written and rolled back: "
                      f"{old['written'] == new['written'] and old['rolled_back'] == new['rolled_back']}."]
    lines += ["", "This checkout's progress (stderr):", "", "```text",
              *[line for line in results[-1]["stderr_tail"].splitlines()
                if line.startswith(("verifying", "verified", "  "))], "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a commit to time against (its compile_lint via git archive)")
    parser.add_argument("--files", type=int, default=8, help="modules in the package (default 8)")
    parser.add_argument("--models-per-file", type=int, default=3, help="model classes per module (default 3)")
    parser.add_argument("--fixable", type=int, default=5,
                        help="modules with a fix, the last of them a wrong one (default 5)")
    parser.add_argument("--limit", type=float, default=3600.0, help="stop a variant after this many seconds")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "fix_verify_scale"))
    args = parser.parse_args()
    if not 1 <= args.fixable <= args.files <= len(MODULE_NAMES):
        parser.error(f"need 1 <= --fixable <= --files <= {len(MODULE_NAMES)}")

    import torch

    scratch = tempfile.mkdtemp(prefix="fix-verify-scale-")
    try:
        project = os.path.join(scratch, "project")
        os.mkdir(project)
        layout = make_project(project, args.files, args.models_per_file, args.fixable)
        variants = []
        if args.baseline:
            baseline_root = os.path.join(scratch, "baseline")
            os.mkdir(baseline_root)
            resolved = export_commit(args.baseline, baseline_root)
            variants.append((f"baseline {resolved[:10]}", baseline_root))
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=10", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        variants.append((f"this checkout ({head})", ROOT))
        meta = {"command": " ".join(["python", "benchmarks/fix_verify_scale.py", *sys.argv[1:]]),
                "cpus": os.cpu_count(), "load": ", ".join(f"{value:.2f}" for value in os.getloadavg()),
                "python": platform.python_version(), "torch": torch.__version__, "project": layout}
        results = []
        for number, (label, code_root) in enumerate(variants):
            sys.stderr.write(f"running {label} ...\n")
            results.append(run_variant(f"run-{number}", code_root, project, scratch, args.limit))
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
