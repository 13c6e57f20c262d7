"""The one model of a project file: one summary for the symbol index and the call graph, Python's class order."""

from __future__ import annotations

import importlib
import pickle
import sys
import textwrap

import pytest

from compile_lint.analysis.model.build import build_model
from compile_lint.analysis.project.summariser import summarise_source
from compile_lint.analysis.project.symbols import SymbolIndex
from compile_lint.storage.walk import PROJECT_INDEX, python_files

# Diamonds, mixins and a chain across two files: C3 and depth-first orders differ here.
HIERARCHY = {
    "shapes/__init__.py": "",
    "shapes/base.py": """
        class Root:
            def name(self):
                return "root"


        class Left(Root):
            pass


        class Right(Root):
            def name(self):
                return "right"


        class Mixin:
            def name(self):
                return "mixin"
        """,
    "shapes/derived.py": """
        from .base import Left, Mixin, Right, Root


        class Diamond(Left, Right):
            pass


        class Chained(Left, Mixin):
            pass


        class Both(Diamond, Chained):
            pass


        class Deep(Both, Right):
            pass
        """,
}
CLASSES = ("Diamond", "Chained", "Both", "Deep")


def _write(root, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def hierarchy(tmp_path):
    """The package `shapes` written under `tmp_path`, and its classes as Python builds them."""
    _write(tmp_path, HIERARCHY)
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("shapes.derived")
        yield tmp_path, {name: getattr(module, name) for name in CLASSES}
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("shapes", "shapes.base", "shapes.derived"):
            sys.modules.pop(name, None)


def test_the_symbol_index_orders_bases_as_python_does(hierarchy):
    root, classes = hierarchy
    index = SymbolIndex([str(root)])
    derived = str(root / "shapes" / "derived.py")
    for name, cls in classes.items():
        symbol = index.resolve_in_file(derived, name)
        assert [base.name for base in index.base_classes(symbol)] == [c.__name__ for c in cls.__mro__[1:-1]], name
        owner = index.method_owner(symbol, "name")
        defining = next(c for c in cls.__mro__ if "name" in vars(c))
        assert owner is not None and owner.name == defining.__name__, name


def test_the_program_model_orders_bases_as_python_does(hierarchy):
    root, classes = hierarchy
    files = python_files(str(root), PROJECT_INDEX)
    model = build_model(files, str(root), whole=True)
    derived = str(root / "shapes" / "derived.py")
    for name, cls in classes.items():
        order = model.mro((derived, name))
        assert [value.key[1] for value in order] == [c.__name__ for c in cls.__mro__[:-1]], name


def test_bases_that_do_not_resolve_are_left_out_and_no_order_falls_back_to_depth_first(tmp_path):
    _write(tmp_path, {"m.py": """
        from elsewhere import Unknown


        class A:
            pass


        class B(A):
            pass


        class Linear(Linear):
            pass


        class Odd(A, B):
            pass


        class Kept(Unknown, B):
            pass
        """})
    path = str(tmp_path / "m.py")
    index = SymbolIndex([str(tmp_path)])
    names = {name: [base.name for base in index.base_classes(index.resolve_in_file(path, name))]
             for name in ("Linear", "Odd", "Kept")}
    # `class Odd(A, B)` has no C3 order (Python raises TypeError): depth first, each class once.
    assert names == {"Linear": [], "Odd": ["A", "B"], "Kept": ["B", "A"]}


def test_a_methods_self_calls_are_its_own_and_its_closures(tmp_path):
    summary = summarise_source("m.py", textwrap.dedent("""
        class Net:
            def forward(self, x: "self.annotation()"):
                def inner(y):
                    return self.nested(y)

                class Local:
                    def forward(self):
                        return self.local_only()

                apply = lambda z: self.in_lambda(z)
                return apply(inner(self.direct(x)))
        """).encode())
    assert summary.functions["Net.forward"].self_calls == ("direct", "in_lambda", "nested")
    assert summary.functions["Net.forward.Local.forward"].self_calls == ("local_only",)


def test_the_symbol_index_summaries_are_slotted_and_pickle(hierarchy):
    root, _ = hierarchy
    index = SymbolIndex([str(root)])
    summary = index.summary(str(root / "shapes" / "derived.py"))
    assert summary is not None
    assert not hasattr(summary, "__dict__") and not hasattr(summary.classes["Diamond"], "__dict__")
    assert pickle.loads(pickle.dumps(summary)) == summary
