"""What a reach-corpus unit is: a model built tiny, and the entries users compile it through.

reach_catalog.py (the first eleven libraries) and reach_catalog_new_kinds.py (the libraries
of kinds the first corpus lacked) describe their units with these types and helpers.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
USER_PROJECTS = os.path.join(HERE, "reach_users")


@dataclass(frozen=True)
class Entry:
    """One compiled entry point of a unit."""

    name: str                                   # "forward", "decode", "generate", ...
    target: Callable[[Any], Callable]           # model -> what torch.compile gets
    inputs: Callable[[Any], tuple]              # model -> (args, kwargs) of one call
    modes: tuple = ("eval", "train")
    # compile-lint `entry-points` target(s), when forward is not it (a tuple where the compiled
    # code enters the library at several places: a model's __call__, a loss, a likelihood).
    lint_entry: Optional[str | tuple] = None
    whole_module: bool = False                  # torch.compile(model) rather than a bound method
    # The compiled function (or module forward) of a user's own project that calls into the
    # library ("reach_users/torchdiffeq/train.py:train_step", relative to benchmarks/); that
    # project's files also hold the torch.compile a user would write.
    user_site: Optional[str] = None


@dataclass(frozen=True)
class Unit:
    library: str                                # import package name
    name: str
    build: Callable[[], Any]
    entries: tuple = field(default_factory=tuple)

    @property
    def key(self) -> str:
        return f"{self.library}/{self.name}"


def forward_entry(inputs, modes=("eval", "train")) -> Entry:
    """`torch.compile(model)`: the module's `forward` (or its `__call__` override)."""
    return Entry("forward", lambda m: m, inputs, modes, None, True)


def method_entry(name, inputs, lint_entry=None, modes=("eval",), user_site=None) -> Entry:
    """`torch.compile(model.NAME)`."""
    return Entry(name, lambda m: getattr(m, name), inputs, modes, lint_entry, user_site=user_site)


def randn(*shape):
    import torch

    return torch.randn(*shape)


def token_ids(high, *shape):
    import torch

    return torch.randint(0, high, shape)


def image(batch=1, channels=3, side=32):
    return ((randn(batch, channels, side, side),), {})


def user_module(library: str, module: str):
    """A module of the user project benchmarks/reach_users/LIBRARY/ (imported the way its own
    files import each other: with the project folder first on the path)."""
    folder = os.path.join(USER_PROJECTS, library)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(module)


def user_site_path(user_site: str) -> str:
    """The file of a `user_site` ("reach_users/lib/train.py:train_step")."""
    return os.path.join(HERE, user_site.split(":", 1)[0])
