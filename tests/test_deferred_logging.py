"""Deferred logging (fixes/deferred_logging.py): print, warnings.warn and logging.info after the graph.

Judged by the installed torch both ways: where the fix defers a call, the fixed file compiles
with no break and prints what eager code prints; where it is refused (a tensor changed in
place afterwards, an argument Dynamo does not reorder, a `logging.Logger` method), the
compiler agrees: with the setting the output differs from eager, or the call still breaks.
"""

from __future__ import annotations

import contextlib
import io
import textwrap
import warnings

import pytest

from compile_lint.engine.api import fix_text, lint_source
from compile_lint.settings.config import Config

torch = pytest.importorskip("torch")
from torch._dynamo.utils import counters  # noqa: E402

from compile_lint.verifier.probe import loaded_module  # noqa: E402

SELECT = Config(select=("JIT601", "JIT602", "JIT603"))
PRINT_LINE = "torch._dynamo.config.reorderable_logging_functions.add(print)"


def _module(body: str, setting: str = "") -> str:
    head = ("import logging\nimport warnings\n\nimport torch\nfrom torch import nn\n\n"
            "logger = logging.getLogger('compile-lint-test')\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n")
    return head + textwrap.indent(textwrap.dedent(body).strip(), " " * 8) + (
        f"\n\n\n{setting}\nmodel = torch.compile(Net())\n")


def _run(source: str, compiled: bool) -> tuple[str, int]:
    """(what the calls print or warn, graph breaks) running `Net` eagerly or compiled (backend eager)."""
    out = io.StringIO()
    with loaded_module(source) as module, contextlib.redirect_stdout(out), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch._dynamo.reset()
        counters.clear()
        net = module.Net()
        runner = torch.compile(net, backend="eager") if compiled else net
        for value in (torch.ones(3), torch.ones(3) * 2):
            runner(value)
        breaks = sum(counters["graph_break"].values())
        torch._dynamo.reset()
    return out.getvalue() + "".join(f"{w.message}\n" for w in caught), breaks


def _fixes(source: str) -> list:
    return [d.fix for d in lint_source(source, "m.py", SELECT).diagnostics]


@pytest.mark.parametrize("body", [
    "y = x * 2\nprint('y', y)\nreturn y + 1",
    "y = x * 2\nprint(f'y={y}', 3)\nreturn y + 1",
    "warnings.warn('careful')\nreturn x + 1",
    "logging.warning('careful')\nreturn x + 1",
])
def test_a_deferred_call_compiles_and_prints_what_eager_prints(body):
    source = _module(body)
    [fix] = _fixes(source)
    assert fix is not None and "reorderable_logging_functions.add(" in fix.message
    fixed = fix_text(source, "m.py", SELECT, unsafe=True).text
    printed, breaks = _run(fixed, compiled=True)
    assert breaks == 0
    assert printed == _run(source, compiled=False)[0]


@pytest.mark.parametrize("body", [
    "y = x * 2\nprint('y', y)\ny.add_(100)\nreturn y",
    "y = x * 2\nprint('y', y)\ny[0] = 5\nreturn y",
    "y = x * 2\nfor step in range(2):\n    print('y', y)\n    y += 1\nreturn y",
])
def test_a_tensor_changed_after_the_call_gets_the_guard_and_deferring_would_print_the_new_value(body):
    source = _module(body)
    [diagnostic] = lint_source(source, "m.py", SELECT).diagnostics
    assert diagnostic.fix is not None and "is_compiling" in diagnostic.fix.message
    deferred, breaks = _run(_module(body, PRINT_LINE), compiled=True)
    assert breaks == 0 and deferred != _run(source, compiled=False)[0]


@pytest.mark.parametrize("body,listed", [
    ("print('shape', x.shape)\nreturn x + 1", PRINT_LINE),
    ("print('s', x.sum().item())\nreturn x + 1", PRINT_LINE),
    ("warnings.warn('careful', UserWarning)\nreturn x + 1",
     "torch._dynamo.config.reorderable_logging_functions.add(warnings.warn)"),
    ("logger.warning('careful')\nreturn x + 1", "torch._dynamo.config.reorderable_logging_functions.add("
                                                "logging.Logger.warning)"),
])
def test_calls_dynamo_does_not_reorder_get_the_guard_and_still_break_with_the_setting(body, listed):
    source = _module(body)
    fixes = _fixes(source)
    assert fixes and all(fix is not None and "is_compiling" in fix.message for fix in fixes)
    assert _run(_module(body, listed), compiled=True)[1] > 0
