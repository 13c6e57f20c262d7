"""The analyses several parts used to do each their own way, now done once: each from every caller's angle."""

from __future__ import annotations

import textwrap

import libcst as cst

from compile_lint.analysis.file.context import FileContext
from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.model.values import TENSOR_BY_DEFAULT
from compile_lint.analysis.project.reach import file_alone
from compile_lint.analysis.project.symbols import SymbolIndex
from compile_lint.analysis.syntax.calls import calls_in
from compile_lint.testing import make_context

CALLS = """
import torch
from torch import nn


class Model(nn.Module):
    @decorated(1)
    def forward(self, x):
        y = self.proj(x)
        if not torch.compiler.is_compiling():
            print(y)

        def inner():
            return hidden(x)

        class Local:
            made = build(x)

        return finish(y)
"""


def _names(calls: list[cst.Call]) -> list[str]:
    return [cst.Module([]).code_for_node(call.func) for call in calls]


def _forward(context: FileContext) -> cst.FunctionDef:
    return next(function for function in context.regions.functions if function.name.value == "forward")


def test_calls_in_for_the_regions_leaves_out_eager_branches_nested_functions_and_classes():
    context = make_context(CALLS)
    forward = _forward(context)
    calls = calls_in(forward, context.regions.eager_only, into_classes=False)
    assert _names(calls) == ["decorated", "self.proj", "torch.compiler.is_compiling", "finish"]


def test_calls_in_for_the_context_keeps_classes_defined_in_the_function():
    context = make_context(CALLS)
    forward = _forward(context)
    assert _names(context.calls_in(forward)) == [
        "decorated", "self.proj", "torch.compiler.is_compiling", "build", "finish"]


def test_calls_in_for_the_facts_walks_every_branch():
    context = make_context(CALLS)
    forward = _forward(context)
    assert _names(calls_in(forward)) == [
        "decorated", "self.proj", "torch.compiler.is_compiling", "print", "build", "finish"]


def test_calls_in_walks_alike_with_and_without_branches_to_skip():
    context = make_context(CALLS)
    forward = _forward(context)
    assert calls_in(forward, skip={cst.Name("unrelated")}) == calls_in(forward)
    assert calls_in(forward, skip={cst.Name("unrelated")}, into_classes=False) == calls_in(forward, into_classes=False)


HELPER = """
import torch


def scale(x, factor):
    return x.sum() * factor
"""

MODEL = """
import torch
from torch import nn

from helpers import scale


class Model(nn.Module):
    def forward(self, x):
        y = scale(x, 2)
        z = torch.relu(x)
        return y + z
"""


def _project(tmp_path) -> FileContext:
    """model.py beside helpers.py, with the program model's answer for model.py (a project of one file)."""
    (tmp_path / "helpers.py").write_text(HELPER)
    (tmp_path / "model.py").write_text(MODEL)
    path = str(tmp_path / "model.py")
    symbols = SymbolIndex((str(tmp_path),))
    reach = file_alone(path, MODEL, symbols.modules)
    return FileContext(path, cst.parse_module(textwrap.dedent(MODEL)), symbols=symbols, reach=reach)


def _call(context: FileContext, name: str) -> cst.Call:
    forward = _forward(context)
    return next(call for call in calls_in(forward) if cst.Module([]).code_for_node(call.func) == name)


def test_an_imported_helper_returns_what_the_program_model_found(tmp_path):
    context = _project(tmp_path)
    forward = _forward(context)
    # `scale(x, 2)`: forward's `x` is a tensor (by default: an entry's parameter), so `x.sum() * factor` is one.
    assert context.call_returns(_call(context, "scale"), forward) == frozenset({TENSOR_BY_DEFAULT})
    assert context.call_returns(_call(context, "torch.relu"), forward) is None  # torch is never read


def test_an_imported_helper_gives_the_facts_its_return_kind(tmp_path):
    context = _project(tmp_path)
    forward = _forward(context)
    assert context.facts.kind(_call(context, "scale"), forward) == Kind.TENSOR
    alone = make_context(MODEL)  # no program model: the helper is unknown
    assert alone.call_returns(_call(alone, "scale"), _forward(alone)) is None
    assert alone.facts.kind(_call(alone, "scale"), _forward(alone)) != Kind.TENSOR


def test_a_call_is_placed_where_the_model_keys_it_past_wide_characters_and_blank_lines(tmp_path):
    """The model counts columns in UTF-8 bytes (as `ast` does), libcst in characters."""
    model = MODEL.replace("        y = scale(x, 2)", "\n\n        s = \"ééé\"; y = scale(x, 2)")
    (tmp_path / "helpers.py").write_text(HELPER)
    (tmp_path / "model.py").write_text(model, encoding="utf-8")
    path = str(tmp_path / "model.py")
    symbols = SymbolIndex((str(tmp_path),))
    context = FileContext(path, cst.parse_module(model), symbols=symbols,
                          reach=file_alone(path, model, symbols.modules))
    assert context.facts.kind(_call(context, "scale"), _forward(context)) == Kind.TENSOR
