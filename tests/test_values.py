"""Values across calls (issues 31, 39): what traced callers pass, from the program model's fixed point, and
the messages that name those callers.

The breaks themselves are calibrated against Dynamo in tests/fixtures/reach/caller_values/
(tests/test_reach_fixtures.py); these tests pin what the fixed point guarantees and what a
finding says about the caller it rests on.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from compile_lint.analysis.model.build import build_model
from compile_lint.analysis.project.reach import ProjectReach
from tests.helpers import assert_findings_json, run_cli

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "reach" / "caller_values"


def test_hints_do_not_depend_on_the_order_of_the_files(tmp_path):
    """The program model is a least fixed point: the files' order (what is evaluated first) changes nothing."""
    root = tmp_path / "caller_values"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__"))
    commons = str(root / "tts" / "commons.py")
    files = sorted(str(path) for path in root.rglob("*.py"))
    answers = []
    for order in (files, list(reversed(files))):
        reach = ProjectReach(build_model(order, str(root), strict=True))
        answers.append({qualname: record.hints for qualname, record in reach.for_file(commons).functions.items()})
    assert answers[0] == answers[1]
    hints = {(qualname, name): hint for qualname, found in answers[0].items() for name, hint in found}
    assert hints[("frame_norms", "h")] == "tensor"  # h = self.proj(x); h = commons.gate(h, ...)
    assert hints[("slice_segments", "ids_str")] == "tensor"  # item 1 of rand_starts' tuple
    assert hints[("shift", "start")] == "tensor"  # offsets[0] of a forward parameter
    assert hints[("halve", "limit")] == "py"  # len(x)


def test_a_finding_names_the_call_of_another_file_its_parameter_rests_on(tmp_path):
    root = tmp_path / "caller_values"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__"))
    result = run_cli("--no-cache", "--output-format", "json", ".", cwd=root)
    assert result.returncode == 1, result.stderr
    messages = {(os.path.relpath(f["path"], root) if os.path.isabs(f["path"]) else f["path"], f["line"]): f["message"]
                for f in assert_findings_json(result.stdout)}
    gate = messages[(os.path.join("tts", "commons.py"), 20)]
    ending = "(`scale` is a tensor: tts/model.py:19 passes `scale`) (reached from tts/model.py:19 in Synth.forward)"
    assert gate.endswith(ending), gate
    shift = messages[(os.path.join("tts", "commons.py"), 26)]
    assert "`start` is a tensor: tts/model.py:20 passes a tensor" in shift, shift


COMPILED_STEP = '''\
import torch

from groups import ParamGroup


def _step(group: ParamGroup, params):
    if group["decouple"]:
        params = params * 2
    return params * group["lr"]


def compile_step(step):
    compiled_step = torch.compile(step, fullgraph=True, backend="eager")

    def update(group, params):
        group = {**group, "lr": torch.tensor(0.1)}
        return compiled_step(group, params)

    return update


update = compile_step(_step)
'''


def test_a_compiled_function_takes_what_its_callers_pass_not_the_tensor_default(tmp_path):
    """pytorch_optimizer's `compile_foreach_step`: the compiled `_step_foreach(group, ...)` is called only by
    its wrapper, with a dict of Python flags (and a tensor `lr`); `if group["decouple"]:` compiles
    (checked below), so no JIT101 (the model's values, not `forward`'s tensor default)."""
    import pytest

    torch = pytest.importorskip("torch")
    (tmp_path / "groups.py").write_text("ParamGroup = dict\n")  # an alias the file analysis cannot read
    (tmp_path / "optim.py").write_text(COMPILED_STEP)
    result = run_cli("--no-cache", "--select", "JIT1", "--output-format", "concise", ".", cwd=tmp_path)
    assert "JIT10" not in result.stdout, result.stdout
    namespace: dict = {}
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        exec(compile(COMPILED_STEP, str(tmp_path / "optim.py"), "exec"), namespace)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("groups", None)
    torch._dynamo.reset()
    out = namespace["update"]({"decouple": True}, torch.ones(3))  # fullgraph=True: a break raises
    assert torch.equal(out, torch.ones(3) * 2 * torch.tensor(0.1))
