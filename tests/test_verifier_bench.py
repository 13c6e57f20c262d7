"""`verify --bench`: the patch is recommended only beyond noise; JIT904 points at the user's frame."""

from __future__ import annotations

import os
import sys

import pytest

from compile_lint.verifier.bench import BenchResult, CodeStats, Timing, recommend
from compile_lint.verifier.report import runtime_diagnostics


def _result(stock: CodeStats, patched: CodeStats, timings: list[tuple[str, int, float, float]]) -> BenchResult:
    return BenchResult("cpu", [Timing(variant, call, ms, spread=spread) for variant, call, ms, spread in timings],
                       stock_code=stock, patched_code=patched)


def test_identical_generated_code_is_no_difference_whatever_the_timings_say():
    same = CodeStats(kernels=3, buffers=2, loads=9)
    # The numbers: +1.2%, then -0.4%, with the same generated code.
    result = _result(same, CodeStats(3, 2, 9), [("default", 0, 1.012, 0.002), ("default+patch", 0, 1.0, 0.002),
                                                ("default", 1, 1.0, 0.002), ("default+patch", 1, 1.004, 0.002)])
    text = recommend(result)
    assert text.startswith("no difference: the patched build generates the same kernels, buffers and loads"), text
    assert "use the patch" not in text


def test_a_gain_within_the_measured_spread_is_not_recommended_and_one_beyond_it_is():
    stock, patched = CodeStats(3, 2, 9), CodeStats(2, 1, 6)
    noisy = _result(stock, patched, [("default", 0, 1.03, 0.04), ("default+patch", 0, 1.0, 0.04)])
    assert recommend(noisy).startswith("keep stock: no difference beyond the measured spread"), recommend(noisy)
    clear = _result(stock, patched, [("default", 0, 1.10, 0.01), ("default+patch", 0, 1.0, 0.01)])
    assert recommend(clear).startswith("use the patch: faster everywhere"), recommend(clear)


@pytest.mark.parametrize("where", ["import", "factory"])
def test_a_failing_import_or_factory_points_at_the_innermost_user_frame(tmp_path, where):
    pytest.importorskip("torch")
    from compile_lint.verifier.targets import load_target
    from compile_lint.verifier.worker import _error

    (tmp_path / "helpers.py").write_text("def explode():\n    raise ValueError('boom')\n")
    body = {"import": "import helpers\n\nhelpers.explode()\n\ndef make():\n    return None\n",
            "factory": "import helpers\n\n\ndef make():\n    helpers.explode()\n"}[where]
    path = tmp_path / "target_module.py"
    path.write_text(body)
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ValueError) as raised:
            load_target(f"{path}:make", "cpu")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("helpers", None)
    error = _error("raises", raised.value)
    (finding,) = runtime_diagnostics({"target": f"{path}:make", "module_file": str(path), "error": error})
    assert finding.code == "JIT904"
    # The innermost frame in the user's code: helpers.py's raise, not line 1 of the target file.
    assert (os.path.abspath(finding.path), finding.line) == (str(tmp_path / "helpers.py"), 2)
