"""Check fixes still check: on bad input the fixed code raises eagerly and compiled, as the fix message says.

`if c: raise E(msg)` / `torch._assert(False, msg)` (JIT101) and `assert t.item() <= n`
(JIT201) are rewritten so the check stays in the graph. Measured on torch 2.13
(benchmarks/results/config_fix_calibration.txt, "Checks"): eager runs keep the original
error type and message; compiled runs (the default and `fullgraph=True`) raise a RuntimeError
with the message (its literal text where values were formatted into it).
"""

from __future__ import annotations

import pytest

from compile_lint.engine.api import fix_text
from compile_lint.rules import RULES_BY_CODE
from compile_lint.testing import only

torch = pytest.importorskip("torch")
from compile_lint.verifier.probe import loaded_module, resolve_entry  # noqa: E402


def _example(code: str, entry: str):
    return next(example for example in RULES_BY_CODE[code].invalid if example.entry == entry)


# (rule, example entry, bad input, eager error, compiled error, text of the compiled message)
CHECKS = [
    ("JIT101", "LabelCheck", lambda: (torch.randn(4, 5), torch.tensor([0, 1, 7, 2])), ValueError, RuntimeError,
     "a label is out of range"),
    ("JIT101", "BoxCheck", lambda: (torch.tensor([[0.0, 0.0, 2.0, 3.0], [3.0, 1.0, 1.0, 2.0]]),), AssertionError,
     RuntimeError, "boxes need positive sizes; found ..."),
    ("JIT201", "Embed", lambda: (torch.randint(0, 16, (2, 4)), torch.tensor([3, 9])), AssertionError, RuntimeError,
     ""),
]


@pytest.mark.parametrize("code,entry,bad,eager_error,compiled_error,text", CHECKS, ids=[c[1] for c in CHECKS])
def test_the_fixed_check_raises_on_bad_input_eagerly_and_compiled(code, entry, bad, eager_error, compiled_error,
                                                                  text):
    example = _example(code, entry)
    fixed = fix_text(example.code, "m.py", only(RULES_BY_CODE[code]), unsafe=True).text
    assert fixed == example.fixed  # the rule's own example, proven compiling and equal by test_fix_proof
    with loaded_module(fixed) as module:
        model = resolve_entry(module, entry)
        with pytest.raises(eager_error):
            model(*bad())
        for fullgraph in (False, True):
            torch._dynamo.reset()
            compiled = torch.compile(model, backend="eager", fullgraph=fullgraph)
            good = eval(example.calls, {"torch": torch})[0]  # noqa: S307 - our own example
            compiled(*good)  # passes the check
            with pytest.raises(compiled_error, match=text.replace(".", r"\.")):
                compiled(*bad())
        torch._dynamo.reset()
