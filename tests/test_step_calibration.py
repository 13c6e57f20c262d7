"""The next steps messages give are true on the installed torch.

A config line a finding's message tells the user to set (`torch._dynamo.config.X = V`) must
make that example compile: with the line added, the default compile (backend="eager") shows
no graph break and `fullgraph=True` passes, with the outputs of eager. And every torch name a
step or a recipe spells must exist in the installed torch.
"""

from __future__ import annotations

import ast
import importlib
import re

import pytest

from compile_lint.engine.api import lint_source
from compile_lint.fixes.next_steps import NEXT_STEPS
from compile_lint.rules import ALL_RULES
from compile_lint.testing import only, run_example
from tests.helpers import code_spans, parse_code, rule_text, step_clause

torch = pytest.importorskip("torch")
from compile_lint.verifier.probe import compare_compiled_outputs, probe_example  # noqa: E402

CONFIG_LINE = re.compile(r"^torch\._dynamo\.config\.(\w+)( = .+|\.add\(\w+(\.\w+)*\))$")


def _integer_tolist_only(example) -> bool:
    """True when every `.tolist()` the example runs eagerly is of an integer tensor (seen by a TorchFunctionMode)."""
    from torch.overrides import TorchFunctionMode

    dtypes = []

    class SeeToList(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is torch.Tensor.tolist:
                dtypes.append(args[0].dtype)
            return func(*args, **(kwargs or {}))

    with SeeToList():
        run_example(example.code, example.entry, example.calls, seed=0)
    return bool(dtypes) and not any(dtype.is_floating_point or dtype.is_complex for dtype in dtypes)


# Claims a message makes only under a condition it states, and how to tell the condition holds.
CONDITIONS = {"for integer values set": _integer_tolist_only}


def _config_claims():
    """(rule, example index, config line) for each config line an invalid example's finding tells to set."""
    claims = []
    for rule in ALL_RULES:
        if rule.kind == "perf" or rule.fails_at != "compile":
            continue
        for index, example in enumerate(rule.invalid):
            for diagnostic in lint_source(example.code, "example.py", only(rule)).diagnostics:
                clause = step_clause(rule_text(diagnostic))
                condition = next((check for words, check in CONDITIONS.items() if words in clause), None)
                for span in code_spans(clause):
                    if CONFIG_LINE.match(span) and (rule, index, span, condition) not in claims:
                        claims.append((rule, index, span, condition))
    return claims


CLAIMS = _config_claims()


def test_the_messages_do_name_config_lines():
    named = {span for _, _, span, _ in CLAIMS}
    assert "torch._dynamo.config.capture_scalar_outputs = True" in named
    assert "torch._dynamo.config.capture_dynamic_output_shape_ops = True" in named
    assert len(CLAIMS) >= 20


CLAIM_IDS = [f"{rule.code}-{index}-{line.split('.')[3].split(' ')[0]}" for rule, index, line, _ in CLAIMS]


@pytest.mark.parametrize("rule,index,line,condition", CLAIMS, ids=CLAIM_IDS)
def test_a_config_line_a_message_names_makes_its_example_compile(rule, index, line, condition):
    example = rule.invalid[index]
    if condition is not None and not condition(example):
        pytest.skip("the message names the line for other cases (integer values), not this example's")
    code = f"{example.code}\n{line}\n"  # read when Dynamo traces, so after the module's own statements is soon enough
    result = probe_example(code, example.entry, example.calls)
    assert not result.breaks and result.recompiles == 0, f"{line}: {result.describe()}"
    check = compare_compiled_outputs(code, example.entry, example.calls)
    assert check.equal, f"{line}: error={check.error!r} mismatch={check.mismatch!r}"


def _torch_names(code: str) -> set[str]:
    """The dotted names under `torch` (and its `F`/`nn` aliases) that `code` reads or sets.

    A name the message fills in (`torch.{name}(t)`, from JIT404's table of torch twins) is left out.
    """
    tree = parse_code(code, filled_in="_filled_in_")
    if tree is None:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            dotted = ast.unparse(node)
            if re.fullmatch(r"(torch|F|nn)(\.\w+)+", dotted) and "_filled_in_" not in dotted:
                names.add(dotted.replace("F.", "torch.nn.functional.", 1) if dotted.startswith("F.")
                          else dotted.replace("nn.", "torch.nn.", 1) if dotted.startswith("nn.") else dotted)
    return names


def _resolves(dotted: str) -> bool:
    """True when `torch.a.b` is an attribute or a module of the installed torch."""
    parts = dotted.split(".")
    value = torch
    for index, part in enumerate(parts[1:], 1):
        if not hasattr(value, part):
            try:
                value = importlib.import_module(".".join(parts[: index + 1]))
                continue
            except ImportError:
                return False
        value = getattr(value, part)
    return True


STEP_CODE = sorted({span for rule in ALL_RULES for span in rule.steps}
                   | {span for step in NEXT_STEPS for span in code_spans(step.recipe)})


def test_every_torch_name_a_step_spells_exists_in_the_installed_torch():
    names = {name for code in STEP_CODE for name in _torch_names(code)}
    assert {"torch.where", "torch._dynamo.config.capture_scalar_outputs", "torch.compiler.disable"} <= names
    missing = sorted(name for name in names if not _resolves(name))
    assert not missing, f"steps name what torch {torch.__version__} does not have: {missing}"
