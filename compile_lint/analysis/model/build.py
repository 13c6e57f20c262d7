"""Building a program's model: load its files, evaluate to a fixed point, add entries until none is new."""

from __future__ import annotations

import os
from typing import Callable, Iterable

from compile_lint.analysis.model.entries import configured_entries, evaluate_everything, module_class_entries
from compile_lint.analysis.model.frames import evaluate_node
from compile_lint.analysis.model.objects import attribute_values
from compile_lint.analysis.model.program import Model
from compile_lint.analysis.project.modules import ModuleResolver
from compile_lint.analysis.syntax.predicates import DEFAULT_MODULE_BASE_NAMES

_MAX_ROUNDS = 20


def build_model(files: Iterable[str], root: str, *, resolver: ModuleResolver | None = None, whole: bool = False,
                module_bases: Iterable[str] = (), configured: Iterable[tuple[str, str]] = (),
                is_library: Callable[[str], bool] | None = None, follow_libraries: bool = True,
                skipped_modules: Iterable[str] = (), sources: dict[str, str] | None = None,
                strict: bool = False) -> Model:
    """The solved model of the program made of `files` (absolute paths under `root`).

    `whole` gives every function a node (the whole call graph, `compile-lint graph --output-format
    pycg`); otherwise only what the module code, the entry points and the functions that spell a compile
    call reach is evaluated. `is_library(path)` tells installed libraries' files (followed on demand, up
    to a budget) from the project's; by default every file outside `root` is a library's. `sources` gives
    the text of files whose text on disk is not the one to analyse (an editor's unsaved buffer).
    """
    root = os.path.abspath(root)
    if is_library is None:
        def is_library(path: str) -> bool:
            return not os.path.abspath(path).startswith(root + os.sep)
    model = Model(resolver or ModuleResolver((root,)), root, is_library=is_library,
                  module_bases=set(DEFAULT_MODULE_BASE_NAMES) | set(module_bases),
                  follow_libraries=follow_libraries, skipped_modules=skipped_modules, sources=sources,
                  strict=strict or bool(os.environ.get("COMPILE_LINT_STRICT_MODEL")))
    model.evaluate_node = evaluate_node
    model.attribute_hook = _attributes
    model.add_project_files(files)
    configured_entries(model, list(configured))
    model.solve()
    for _ in range(_MAX_ROUNDS):
        added = False if whole else module_class_entries(model)
        added |= evaluate_everything(model, "all" if whole else "compiling")
        if not added:
            break
        model.solve()
    return model


def _attributes(model: Model, found: frozenset, names: tuple[str, ...]) -> frozenset:
    """`module.a.b` for an import of names inside a module (`from pkg import helper`)."""
    for name in names:
        found = attribute_values(model, found, name)
    return found
