"""The modules compiled code calls into, and which of them cannot be found (said once per run).

A traced call through an absolute import (`from helpermod import clip` ... `clip(x)` in
`forward`) is followed into the module's file; where no file is found, the reach stops there
without a word. `called_modules` lists, for one file, the top-level modules its traced code
calls through (with the first call's line); it is part of the file's lint result and of its
cache entry, so a cached run knows it too. `not_found` asks, once per module and run,
whether the module is anywhere: in the project or the `src` folders (the project's
`ModuleResolver`), installed (C extensions included), or the standard library. Imports that
traced code never calls (an optional dependency behind a flag, a script's imports) are not
looked at: their absence changes nothing compile-lint reports.
"""

from __future__ import annotations

import importlib.util
from typing import Iterable, Optional

from compile_lint.analysis.project.modules import NEVER_READ, STDLIB
from compile_lint.engine.project import ProjectIndex, symbol_index
from compile_lint.settings.config import Config

# (module, line of the first traced call through it)
CalledModule = tuple[str, int]


def called_modules(path: str, config: Config, project: Optional[ProjectIndex]) -> tuple[CalledModule, ...]:
    """The top-level modules, other than the standard library's and those never read (torch, numpy),
    that `path`'s traced functions call through an absolute import, each with its first call's line."""
    reach = project.reach(config, path) if project is not None else None
    if reach is None or not reach.functions:
        return ()
    summary = symbol_index(config).summary(path)
    if summary is None:
        return ()
    first: dict[str, int] = {}
    for qualname in reach.functions:
        function = summary.functions.get(qualname)
        for call in function.calls if function is not None else ():
            target = summary.imports.get(call.callee.partition(".")[0])
            if call.eager or target is None or target.startswith("."):
                continue
            module = target.partition(".")[0]
            if module not in STDLIB and module not in NEVER_READ and call.line < first.get(module, call.line + 1):
                first[module] = call.line
    return tuple(sorted(first.items()))


def not_found(module: str, from_path: str, config: Config) -> bool:
    """Whether top-level `module`, imported by `from_path`, is nowhere: not in the project or the
    `src` folders, not installed (with or without Python source). Nothing is imported to find out."""
    file, rest = symbol_index(config).modules.module_file(module, from_path)
    if file is not None or rest != (module,):
        return False  # a file, or a package folder without __init__.py
    try:
        return importlib.util.find_spec(module) is None  # installed without Python source: found
    except (ImportError, ValueError):
        return True


def unresolved(called: Iterable[tuple[str, str, int]], config: Config) -> list[tuple[str, str, int]]:
    """Of (module, path, line) triples, those whose module cannot be found: the first per module
    (in the order given), each module asked about once."""
    firsts: dict[str, tuple[str, str, int]] = {}
    for module, path, line in called:
        firsts.setdefault(module, (module, path, line))
    return [first for module, first in firsts.items() if not_found(module, first[1], config)]
