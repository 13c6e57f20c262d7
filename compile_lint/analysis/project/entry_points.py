"""The `entry-points` setting: functions the user compiles that the code alone does not show.

Each target is `"path/to/file.py:function"` or `"path/to/file.py:Class.method"`, relative
to the config file's directory; the program model makes an entry of each
(`model/entries.py`, with the class as the method's receiver). Every other entry point is
found by the model itself: what `torch.compile` is given, `forward` of the project's
nn.Module classes, `torch.cond`'s branches.
"""

from __future__ import annotations

import os
from typing import Iterable

from compile_lint.analysis.model.program import Model


class EntryPointError(ValueError):
    """An `entry-points` target that names no function of the project."""


def configured(model: Model, targets: Iterable[str], root: str) -> list[tuple[str, str]]:
    """The functions the `entry-points` setting names (paths relative to `root`); an unknown one raises."""
    found = []
    for target in targets:
        file, colon, qualname = target.rpartition(":")
        if not colon or not file or not qualname:
            raise EntryPointError(f"entry-points: '{target}' is not 'path/to/file.py:function' or "
                                  f"'path/to/file.py:Class.method'")
        path = os.path.abspath(os.path.join(root, file))
        module = model.load(path, library=False) if os.path.isfile(path) else None
        if module is None:
            raise EntryPointError(f"entry-points: '{target}': no Python file {file} in the project ({root})")
        module.scopes.walk_all()
        if qualname not in module.scopes.functions:
            raise EntryPointError(f"entry-points: '{target}': {file} defines no function {qualname}")
        model.run_module(path)
        found.append((path, qualname))
    return found
