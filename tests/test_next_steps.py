"""Every finding says what to do: each rule's message and docs, each withheld fix's reason."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

from compile_lint.analysis.kinds.certainty import BY_DEFAULT, DYNAMO_ONLY, NOT_TENSOR
from compile_lint.engine.api import lint_source
from compile_lint.fixes.next_steps import NEXT_STEPS, next_step
from compile_lint.fixes.settings import ALLOW_RNN, CAPTURE_SCALARS, CAPTURE_SHAPES, reorderable
from compile_lint.reporters.docs import explain
from compile_lint.rules import ALL_RULES
from compile_lint.settings.config import Config
from compile_lint.testing import only
from tests.helpers import BY_HAND, code_spans, is_code, message_clauses, rule_text, step_clause, step_pattern

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "compile_lint"
# Where withheld-fix reasons are written: the branch rewrites, keeping a tensor, masked updates, captured sizes,
# the uses of a number read from a tensor, and the rules that report a reason of their own.
REASON_SOURCES = sorted(PACKAGE.glob("fixes/branches/*.py")) + [PACKAGE / "fixes" / name
                                                                for name in ("keep_tensor.py", "masked_updates.py",
                                                                             "capture_scalars.py", "number_uses.py",
                                                                             "index_loops.py", "settings.py")]
RULES_WITH_REASONS = [rule for rule in ALL_RULES if rule.withheld_fix_steps]
BREAK_RULES = [rule for rule in ALL_RULES if rule.kind == "break"]
LAST_RESORT = "@torch.compiler.disable"
# Calls whose string argument is a reason.
REASON_CALLS = {"no_fix", "BranchFix", "unkept_number"}
# Multi-word strings in REASON_SOURCES that are no reason: what a fix note says (it is shown
# with a fix, not without one), the names of statement shapes, the evidence words a reason
# is built from, and the words `.replace` swaps into a reason.
NOT_REASONS = {
    "one branch runs", "both branches are computed", "tensor only under Dynamo", "tensor by default",
    "not a tensor", "shortcut to None", "skip the rest of a loop", "the assignments shape matches every `if`",
    "the code between the guard and its return", "the skipped code",
    "the arms differ in shape: x", "the code after it",
    "the skipped work still runs (slower; its random draws and zero gradients differ from skipping it)",
    "`x[x]` is [n_selected, ...]",  # a masked update's selected shape, part of a reason
    "x, and x",  # joins a reason and the use of a number (`number_uses.unkept_number`)
    " (its message without the values formatted into it)",  # part of a check's fix message
    # what a setting makes Dynamo do (fixes/settings.py): part of a fix's message
    "keeps the number in the graph", "keeps the data-dependent size in the graph", "lets Dynamo trace the RNN module",
    "runs `x` after the graph, with the values the graph computed",
}


def _text(node: ast.AST) -> str | None:
    """A string literal's text, an f-string's with `x` for each formatted value."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "x" for part in node.values)
    return None


def _docstrings(tree: ast.AST) -> set[int]:
    owners = (ast.Module, ast.ClassDef, ast.FunctionDef)
    return {id(node.body[0].value) for node in ast.walk(tree) if isinstance(node, owners) and node.body
            and isinstance(node.body[0], ast.Expr)}


def _source_reasons(path: pathlib.Path) -> list[tuple[str, int, str]]:
    """Every multi-word string of a reason module that could end up as a reason.

    Fix messages (capitalised: "Assign `x` with torch.where ..."), f-strings that only join
    other reasons (`f"{hazard}; torch.cond does not apply: {problem}"`) and docstrings are
    left out; so are the parts of an f-string (the f-string itself is read whole).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skipped |= {id(part) for part in ast.walk(node) if part is not node}
    found = []
    for node in ast.walk(tree):
        text = _text(node) if id(node) not in skipped else None
        # (a setting's statement, `{torch}._dynamo.config.X = True`, is code, not a reason)
        if text is None or text.count(" ") < 2 or text[0].isupper() or text.startswith(("x;", "; ", "{torch}")) \
                or "\n" in text:
            continue
        if text not in NOT_REASONS:
            found.append((path.name, node.lineno, text))
    return found


def _rule_reasons() -> list[tuple[str, int, str]]:
    """The reasons a rule gives itself: strings passed to REASON_CALLS or bound to `reason`."""
    found = []
    for rule in RULES_WITH_REASONS:
        path = pathlib.Path(__import__(rule.__module__, fromlist=["_"]).__file__)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            values: list[ast.AST] = []
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in REASON_CALLS:
                values = list(node.args)
            elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "reason" for t in node.targets):
                values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            for value in values:
                text = _text(value)
                if text is not None and " " in text:
                    found.append((path.name, node.lineno, text))
    return found


ALL_REASONS = [reason for path in REASON_SOURCES for reason in _source_reasons(path)] + _rule_reasons()


def test_the_scan_finds_the_reasons_it_is_meant_to():
    texts = {text for _, _, text in ALL_REASONS}
    assert "`for x in x` iterates over a tensor: its steps depend on data" in texts
    assert "the number decides a Python test" in texts
    assert "cannot tell that the receiver is a tensor to keep (an array or an unknown object)" in texts
    assert len(ALL_REASONS) > 60


@pytest.mark.parametrize("where,line,reason", ALL_REASONS, ids=[f"{p}:{n}" for p, n, _ in ALL_REASONS])
def test_every_withheld_fix_reason_has_a_next_step(where, line, reason):
    assert next_step(reason) is not None, (
        f"{where}:{line}: the reason {reason!r} has no next step: add a NextStep to "
        "compile_lint/fixes/next_steps.py (or, if it is no reason, to NOT_REASONS here)")


# Reasons as findings give them, for the entries that tell reasons apart by the words formatted
# into them: a loop's name, an operand's evidence (`conditions.unsafe_operand`).
NAMED_REASONS = ["`for expert_idx in hit` iterates over a tensor: its steps depend on data"] + [
    f"`p` is a {evidence}, no evidence it is one in eager code"
    for evidence in (DYNAMO_ONLY, BY_DEFAULT, NOT_TENSOR)] + [
    f"`{setting}` would not help {subject}: then `y.numel() > 0` decides a Python test (the break would move there)"
    for setting, subject in (("capture_dynamic_output_shape_ops", "`torch.bincount`"),
                             ("capture_dynamic_output_shape_ops", "`repeat_interleave`"),
                             ("capture_dynamic_output_shape_ops", "`torch.unique`"),
                             ("capture_dynamic_output_shape_ops", "mask indexing"),
                             ("capture_scalar_outputs", "`.tolist()`"), ("allow_rnn", "`self.rnn`"))] + [
    f"this file has no `torch.compile` call to set `{setting.key}` before"
    for setting in (CAPTURE_SCALARS, CAPTURE_SHAPES, ALLOW_RNN, reorderable("print"), reorderable("warnings.warn"))]


def test_every_next_step_is_reached_by_a_reason_and_is_short():
    texts = [text for _, _, text in ALL_REASONS] + NAMED_REASONS
    for step in NEXT_STEPS:
        assert any(next_step(text) is step for text in texts), f"no reason reaches {step.when!r}"
        assert len(step.recipe) <= 160, step.when
        assert not step.recipe.endswith("."), step.when
        assert "by hand" not in step.recipe, step.when  # the message already says "by hand: "
        assert any(is_code(span) for span in code_spans(message_clauses(step.recipe)[-1])), (
            f"the recipe for {step.when!r} ends in no code to write (in backticks)")


@pytest.mark.parametrize("rule", ALL_RULES, ids=[rule.code for rule in ALL_RULES])
def test_every_rule_says_what_to_write_instead(rule):
    """The message names what breaks, then, after `;`, what to write; the docs say `Instead:`."""
    assert "; " in rule.message, f"{rule.code}'s message gives no next step after '; '"
    assert re.search(r"^Instead: \S", rule.documentation(), re.MULTILINE), f"{rule.code} has no 'Instead:' paragraph"


def test_messages_of_the_examples_never_end_in_a_withheld_fix_without_a_next_step():
    config = Config(select=tuple(rule.code for rule in ALL_RULES))
    withheld = []
    for rule in ALL_RULES:
        for example in [*rule.invalid, *rule.valid]:
            for diagnostic in lint_source(example.code, "example.py", config).diagnostics:
                if diagnostic.fix is None and "no automatic fix: " in diagnostic.message:
                    withheld.append(diagnostic.message)
                    assert "; by hand: " in diagnostic.message, diagnostic.message
                assert "; " in diagnostic.message, diagnostic.message
    assert len(withheld) >= 10  # the examples do withhold fixes, so this test checks something


def test_explain_lists_the_next_steps_of_the_rules_that_withhold_fixes():
    for rule in RULES_WITH_REASONS:
        text = explain(rule)
        for step in NEXT_STEPS:
            assert step.recipe in text, (rule.code, step.when)


def test_a_moe_expert_loop_and_a_training_only_skip_get_their_recipes():
    moe = next_step("`for expert_idx in hit` iterates over a tensor: its steps depend on data")
    also_moe = next_step("`for idx in expert_hit` iterates over a tensor: its steps depend on data")
    loop = next_step("`for n in lengths` iterates over a tensor: its steps depend on data")
    cache = next_step("a call gets `past_key_values`, a cache it may update: computing it when the branch "
                      "is not taken changes that state")
    assert moe is not None and "grouped_mm" in moe.recipe and "num_experts/top_k x the FLOPs" in moe.recipe
    assert also_moe is moe
    assert loop is not None and loop is not moe and "fixed range" in loop.recipe
    assert cache is not None and "compile the eval model" in cache.recipe
    draw, untyped, not_tensor = (next_step(reason) for reason in NAMED_REASONS[1:4])
    assert draw is not None and "torch.rand" in draw.recipe
    assert untyped is not None and "annotate" in untyped.recipe
    assert not_tensor is not None and "torch.as_tensor" in not_tensor.recipe


# ----- every finding of kind `break` ends in a concrete step -------------------------------------


@pytest.mark.parametrize("rule", BREAK_RULES, ids=[rule.code for rule in BREAK_RULES])
def test_a_break_rule_declares_its_steps_as_code_and_its_message_ends_in_one(rule):
    assert rule.steps, f"{rule.code} declares no `steps`: the code its messages tell the user to write"
    for step in rule.steps:
        assert is_code(step), f"{rule.code}: {step!r} is not code to write"
    last = message_clauses(rule.message)[-1]
    assert any(step_pattern(step).search(last) for step in rule.steps), (
        f"{rule.code}'s message does not end in one of its steps: {last!r}")


def test_no_two_break_rules_end_their_message_in_the_same_code():
    """A step appended to every message (boilerplate) fits no rule: each rule ends in code of its own.

    The one exception is the last resort, a `@torch.compiler.disable` helper (the graph still
    splits there), which few rules may end in alone.
    """
    ends: dict[frozenset, str] = {}
    alone = []
    for rule in BREAK_RULES:
        code = frozenset(code_spans(message_clauses(rule.message)[-1]))
        if code == {LAST_RESORT}:
            alone.append(rule.code)
            continue
        assert code not in ends, f"{rule.code} and {ends.get(code)} end their messages in the same code {set(code)}"
        ends[code] = rule.code
    assert len(alone) <= len(BREAK_RULES) // 20, f"these rules offer only the last resort: {alone}"


def _findings(rule, examples):
    for example in examples:
        for diagnostic in lint_source(example.code, "example.py", only(rule)).diagnostics:
            if diagnostic.code == rule.code:
                yield diagnostic


@pytest.mark.parametrize("rule", BREAK_RULES, ids=[rule.code for rule in BREAK_RULES])
def test_every_finding_of_a_break_rule_ends_in_a_concrete_step(rule):
    """On the rule's invalid examples: the message's last clause holds one of the rule's steps, or,
    where the fix is withheld, it ends in the recipe fixes/next_steps.py gives for the reason."""
    recipes = {step.recipe for step in NEXT_STEPS}
    findings = list(_findings(rule, rule.invalid))
    assert findings, f"{rule.code} flags none of its invalid examples"
    for diagnostic in findings:
        message = rule_text(diagnostic)
        if "; no automatic fix: " in message:
            assert BY_HAND in message and step_clause(message) in recipes, f"no recipe ends {message!r}"
            continue
        clause = step_clause(message)
        assert any(step_pattern(step).search(clause) for step in rule.steps), (
            f"{rule.code}: the message ends in none of its steps {rule.steps}: {message!r}")


# ----- the step fits what a number read from a tensor is used for (issue 35, item 5) -------------

def _recipe_for(body: str, code: str = "JIT201") -> str:
    source = (
        "import logging\n"
        "import torch\n"
        "from torch import nn\n"
        "logger = logging.getLogger(__name__)\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x: torch.Tensor):\n"
        + "".join(f"        {line}\n" for line in body.strip().splitlines())
    )
    (diagnostic,) = [d for d in lint_source(source, "model.py", Config(select=(code,))).diagnostics]
    assert diagnostic.fix is None and BY_HAND in diagnostic.message, diagnostic.message
    return step_clause(rule_text(diagnostic))


@pytest.mark.parametrize("body,code,expected", [
    ("n = self.count.item()\nprint(n)\nreturn x", "JIT201", "torch.compiler.is_compiling()"),
    ("logger.info(f'scale {x.max().item()}')\nreturn x", "JIT201", "torch.compiler.is_compiling()"),
    ("return x * self.scale.item()", "JIT201", "t.detach()"),
    ("return x[: self.limit.item()]", "JIT201", "torch._dynamo.config.capture_scalar_outputs = True"),
    ("n = x.sum().item()\nreturn x.view(n, -1)", "JIT201", "x.shape[0]"),
    ("k = x[0].argmax().item()\nreturn x[:, k]", "JIT201", "x.index_select(dim, i.view(1))"),
    ("for _ in range(int(x.sum())):\n    x = x * 2\nreturn x", "JIT202", "range(max_steps)"),
    ("if self.flag.item() > 0:\n    x = x + 1\nreturn x", "JIT201", "torch.where(cond, a, b)"),
    ("return self.helper(x, x.max().item())", "JIT201", "t.detach()"),
    ("return x.sum().item()", "JIT201", "read the number in the caller"),
], ids=["print", "log", "arithmetic", "slice-bound", "view-size", "second-index", "range", "test", "call",
        "returned"])
def test_the_step_for_a_number_read_from_a_tensor_fits_its_use(body, code, expected):
    recipe = _recipe_for(body, code)
    assert expected in recipe, recipe
    if "if " not in body:
        assert "torch.where(cond, a, b)" not in recipe, f"a number in no Python test gets torch.where: {recipe}"
