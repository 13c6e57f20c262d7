"""The tensor-branch rewrites on real-world shapes, on look-alikes, and under `tensor-branch-fix`.

tests/fixtures/branch_shapes/ reproduces how transformers, timm and diffusers write tensor
branches (DETR's inf clamp, CTC label checks, LayerDrop, padding-mask shortcuts, ...). Each
is fixed with `--fix --unsafe-fixes` and must keep its outputs (eval, and train with a fixed
seed where its CASES say so) and compile as one graph. Every invalid example the branching
rules do not fix must say why; with `tensor-branch-fix = "cond"` the rules' examples get a
torch.cond rewrite that is proven like the `where` one.
"""

from __future__ import annotations

import glob
import importlib.util
import itertools
import os
import sys
import tempfile

import pytest

from compile_lint.engine.lint import lint_text
from compile_lint.fixes.apply import fix_text
from compile_lint.settings.config import Config
from compile_lint.testing import case_id, example_cases

torch = pytest.importorskip("torch")
from compile_lint.verifier.probe import probe  # noqa: E402

BRANCH_CODES = ("JIT101", "JIT102", "JIT103", "JIT201", "JIT202")
SELECT = Config(select=BRANCH_CODES)
FIXTURES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "fixtures", "branch_shapes", "*.py")))


_COUNTER = itertools.count()


def load_module_from_source(source: str):
    """Import `source` as a module from a file that is removed again (Dynamo reads real files)."""
    name = f"_branch_shapes_{next(_COUNTER)}"
    with tempfile.TemporaryDirectory(prefix="compile-lint-branch-shapes-") as directory:
        path = os.path.join(directory, name + ".py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


def _cases():
    found = []
    for path in FIXTURES:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        module = load_module_from_source(source)
        for entry, calls, modes in module.CASES:
            found.append(pytest.param(path, source, entry, calls, modes, id=f"{os.path.basename(path)}:{entry}"))
    return found


def _outputs(source, entry, calls, mode, seed):
    module = load_module_from_source(source)
    torch.manual_seed(0)
    model = getattr(module, entry)()
    model.train(mode == "train")
    torch.manual_seed(seed)
    results = []
    with torch.no_grad():
        for args in calls():
            results.append(model(*args))
    return results


@pytest.mark.parametrize("path,source,entry,calls,modes", _cases())
def test_real_world_shape_is_fixed_keeping_outputs_and_one_graph(path, source, entry, calls, modes):
    outcome = fix_text(source, path, SELECT, unsafe=True)
    assert outcome.error is None and outcome.text != source, "the rewrite did not apply"
    left = [d for d in lint_text(outcome.text, path, SELECT) if d.code in BRANCH_CODES]
    assert not left, [d.message for d in left]
    for mode in modes:
        for seed in (0, 1, 2):
            torch.testing.assert_close(_outputs(outcome.text, entry, calls, mode, seed),
                                       _outputs(source, entry, calls, mode, seed))
        module = load_module_from_source(outcome.text)
        model = getattr(module, entry)()
        model.train(mode == "train")
        result = probe(model, calls())
        assert result.clean, f"{mode}: {result.describe()}"


# JIT102 never fixes: its message says what to write and --explain why there is no fix.
UNFIXED = example_cases("invalid", lambda rule, example: rule.code in BRANCH_CODES and rule.code != "JIT102"
                        and example.fixed is None)


@pytest.mark.parametrize("case", UNFIXED, ids=[case_id(c) for c in UNFIXED])
def test_a_branch_finding_without_a_fix_says_why_and_what_to_write(case):
    rule, _, example = case
    findings = [d for d in lint_text(example.code, "example.py", Config(select=(rule.code,))) if d.code == rule.code]
    assert findings and all(d.fix is None for d in findings)
    assert all("no automatic fix: " in d.message and "; by hand: " in d.message for d in findings), \
        [d.message for d in findings]


COND = Config(select=("JIT101", "JIT103"), tensor_branch_fix="cond")


def _cond_rewrite(example) -> str:
    return fix_text(example.code, "example.py", COND, unsafe=True).text


# The fixed examples that have a torch.cond form (checks, shortcuts and layer-drop have none).
REWRITTEN = example_cases("invalid", lambda rule, example: rule.code in ("JIT101", "JIT103") and example.fixed
                          and ".cond(" in _cond_rewrite(example))


def _run(source, entry, calls_expr, seed):
    module = load_module_from_source(source)
    target = getattr(module, entry)
    torch.manual_seed(0)
    fn = target().eval() if isinstance(target, type) else target
    torch.manual_seed(seed)
    with torch.no_grad():
        return [fn(*call) for call in eval(calls_expr, {"torch": torch})]  # noqa: S307 - our examples


@pytest.mark.parametrize("case", REWRITTEN, ids=[case_id(c) for c in REWRITTEN])
def test_cond_setting_gives_a_proven_torch_cond_rewrite(case):
    rule, _, example = case
    outcome = fix_text(example.code, "example.py", COND, unsafe=True)
    assert outcome.error is None and ".cond(" in outcome.text
    for seed in (0, 1, 2):
        torch.testing.assert_close(_run(outcome.text, example.entry, example.calls, seed),
                                   _run(example.code, example.entry, example.calls, seed))
    module = load_module_from_source(outcome.text)
    target = getattr(module, example.entry)
    fn = target().eval() if isinstance(target, type) else target
    result = probe(fn, eval(example.calls, {"torch": torch}))  # noqa: S307 - our examples
    assert result.clean, result.describe()


LOOK_ALIKES = {
    "a side effect between the guard and its return": (
        "def forward(self, x):\n    if x.sum() > 0:\n        return x\n    self.seen.add_(1)\n    return -x\n",
        "for its effect"),
    "arms of different shapes": (
        "def forward(self, x):\n    if x.sum() > 0:\n        y = x.mean(0)\n    else:\n        y = x\n    return y\n",
        "may differ in shape"),
    "a branch that mutates state": (
        "def forward(self, x):\n    if x.sum() > 0:\n        self.last = x\n    return x\n",
        "state that outlives the call"),
    "an untaken arm that may raise": (
        "def forward(self, x):\n    if x.sum() > 0:\n        y = torch.linalg.cholesky(x)\n    else:\n"
        "        y = x.mean(0)\n    return y\n",
        "may raise"),
    "a guarded division": (
        "def forward(self, x):\n    n = x.norm()\n    if n > 0:\n        x = x / n\n    x = x + 1\n    return x\n",
        None),
}


@pytest.mark.parametrize("name", sorted(LOOK_ALIKES))
def test_look_alikes_get_no_where_rewrite(name):
    body, reason = LOOK_ALIKES[name]
    source = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n" + "".join(
        "    " + line + "\n" for line in body.splitlines())
    findings = [d for d in lint_text(source, "m.py", Config(select=("JIT101",)))]
    assert len(findings) == 1
    if reason is None:  # a guarded division: torch.cond runs one branch, torch.where is withheld
        assert findings[0].fix is not None and "cond" in findings[0].fix.message
        return
    assert findings[0].fix is None
    assert reason in findings[0].message


def test_is_compiling_short_circuit_is_not_a_tensor_branch():
    source = (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x, mask):\n"
        "        if not torch.compiler.is_compiling() and (mask == 1).all():\n            mask = None\n"
        "        if torch.compiler.is_compiling() or mask.any():\n            x = x * 2\n        return x\n")
    assert lint_text(source, "m.py", Config(select=("JIT101",))) == []


def test_auto_writes_cond_for_submodule_arms_and_where_forces_where():
    from compile_lint.rules.control_flow.jit101_tensor_valued_if import TensorValuedIf

    router = next(example for example in TensorValuedIf.invalid if example.entry == "Router")
    auto = fix_text(router.code, "example.py", Config(select=("JIT101",)), unsafe=True).text
    forced = fix_text(router.code, "example.py", Config(select=("JIT101",), tensor_branch_fix="where"),
                      unsafe=True).text
    assert "torch.cond(" in auto and "torch.where(" not in auto
    assert "torch.where(x.abs().mean() > 1, self.large(x), self.small(x))" in forced
