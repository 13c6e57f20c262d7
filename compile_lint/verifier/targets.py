"""Verify targets: `path/to/file.py:factory` or `package.module:factory`.

A factory returns the model (an nn.Module or a function) and its example calls, either
as a tuple `(model, calls)` or a dict `{"model": ..., "calls": [...]}`. Each call is an
argument tuple, a single tensor, or `{"args": (...), "kwargs": {...}}`. A factory that
takes a `device` parameter builds on that device; otherwise the model and the call's
tensors are moved there.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import itertools
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

_counter = itertools.count()


class TargetError(Exception):
    """A target that cannot be parsed, imported or built; the message is one line."""


@dataclass(frozen=True)
class TargetSpec:
    """A parsed `LOCATION:FACTORY` target."""

    text: str
    location: str
    factory: str

    @property
    def is_path(self) -> bool:
        """True for a file path, False for a dotted module name."""
        return self.location.endswith(".py") or os.sep in self.location or "/" in self.location


@dataclass
class Call:
    """One example call."""

    args: tuple
    kwargs: dict


@dataclass
class LoadedTarget:
    """A target imported and built: what to run and how.

    `fresh_model()` runs the factory again under the same seed: a model that keeps state
    (a buffer counter, a cache) must start every run (eager, fullgraph, compiled) afresh.
    """

    spec: TargetSpec
    model: Callable
    calls: list[Call]
    module_file: Optional[str]
    fresh_model: Callable[[], Callable]


def parse_target(text: str) -> TargetSpec:
    """Split `LOCATION:FACTORY` (the last colon, so Windows drive letters survive)."""
    location, sep, factory = text.rpartition(":")
    if not sep or not location or not factory.isidentifier():
        raise TargetError(f"bad target '{text}': expected path/to/file.py:factory or package.module:factory")
    return TargetSpec(text=text, location=location, factory=factory)


def import_path(path: str, name_hint: Optional[str] = None, code_path: Optional[str] = None) -> Any:
    """Import a file as a fresh module; its directory goes first on sys.path for sibling imports.

    `code_path`: run that file's code instead (a fixed copy of `path`), still importing
    `path`'s siblings.
    """
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise TargetError(f"{path}: no such file")
    # Like `python path/to/file.py` run from the working directory: sibling modules and
    # the project's own packages both import.
    for directory in (os.getcwd(), os.path.dirname(path)):
        if directory not in sys.path:
            sys.path.insert(0, directory)
    stem = name_hint or os.path.splitext(os.path.basename(path))[0]
    module_name = f"_compile_lint_target_{stem}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(module_name, code_path or path)
    if spec is None or spec.loader is None:
        raise TargetError(f"{path}: cannot import")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def import_location(spec: TargetSpec) -> Any:
    """Import the module a target names."""
    if spec.is_path:
        return import_path(spec.location)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(spec.location)
    except ModuleNotFoundError as error:
        raise TargetError(f"{spec.text}: cannot import module '{spec.location}': {error}") from None


def map_tensors(value: Any, function: Callable[[Any], Any]) -> Any:
    """The same nested tuples/lists/dicts with `function` applied to every tensor."""
    import torch

    if isinstance(value, torch.Tensor):
        return function(value)
    if isinstance(value, tuple):
        return tuple(map_tensors(item, function) for item in value)
    if isinstance(value, list):
        return [map_tensors(item, function) for item in value]
    if isinstance(value, dict):
        return {key: map_tensors(item, function) for key, item in value.items()}
    return value


def _to_device(value: Any, device: str) -> Any:
    return map_tensors(value, lambda tensor: tensor.to(device))


def normalize_calls(raw: Any) -> list[Call]:
    """Turn a factory's calls into Call objects; reject shapes we cannot run."""
    import torch

    if isinstance(raw, (torch.Tensor, dict)):
        raw = [raw]
    if not isinstance(raw, (list, tuple)) or not raw:
        raise TargetError("the factory's calls must be a non-empty list of argument tuples")
    calls = []
    for call in raw:
        if isinstance(call, dict):
            calls.append(Call(tuple(call.get("args", ())), dict(call.get("kwargs", {}))))
        elif isinstance(call, tuple):
            calls.append(Call(call, {}))
        elif isinstance(call, list):
            calls.append(Call(tuple(call), {}))
        else:
            calls.append(Call((call,), {}))
    return calls


def _run_factory(spec: TargetSpec, factory: Callable, device: str, mode: str = "factory") -> tuple[Callable, Any]:
    """(model on `device`, raw calls) from one factory call under seed 0.

    `mode`: "factory" keeps the train/eval mode the factory left the module in (Dynamo
    guards on `self.training`, so a training-only branch is compiled only in training);
    "train" or "eval" sets it on the whole module. A function target has no mode.
    """
    import torch

    try:
        accepts_device = "device" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        accepts_device = False
    torch.manual_seed(0)
    produced = factory(device=device) if accepts_device else factory()
    if isinstance(produced, dict):
        model, raw_calls = produced.get("model"), produced.get("calls")
    elif isinstance(produced, tuple) and len(produced) == 2:
        model, raw_calls = produced
    else:
        raise TargetError(f"{spec.text}: the factory must return (model, calls) or {{'model': ..., 'calls': ...}}")
    if not callable(model):
        raise TargetError(f"{spec.text}: the factory's model is not callable")
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
        if mode != "factory":
            model.train(mode == "train")
    return model, raw_calls


def model_mode(model: Callable) -> Optional[str]:
    """"train" or "eval" (every submodule alike), "mixed" (e.g. a frozen norm in a trained
    model), or None for a function."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return None
    modes = {module.training for module in model.modules()}
    return "mixed" if len(modes) > 1 else "train" if modes == {True} else "eval"


def build(spec: TargetSpec, module: Any, device: str, mode: str = "factory") -> LoadedTarget:
    """Run the factory of an imported module and place everything on `device`, in `mode`."""
    factory = getattr(module, spec.factory, None)
    if factory is None or not callable(factory):
        raise TargetError(f"{spec.text}: no callable '{spec.factory}' in {spec.location}")
    model, raw_calls = _run_factory(spec, factory, device, mode)
    calls = [Call(_to_device(c.args, device), _to_device(c.kwargs, device)) for c in normalize_calls(raw_calls)]
    module_file = getattr(module, "__file__", None)

    def fresh_model() -> Callable:
        return _run_factory(spec, factory, device, mode)[0]

    return LoadedTarget(spec, model, calls, os.path.abspath(module_file) if module_file else None, fresh_model)


def load_target(text: str, device: str, mode: str = "factory") -> LoadedTarget:
    """Parse, import and build a target."""
    spec = parse_target(text)
    return build(spec, import_location(spec), device, mode)


def copy_calls(calls: Sequence[Call]) -> list[Call]:
    """The calls with every tensor cloned: a run that marks dims dynamic or a model that
    writes into its inputs must not change what the next run sees."""
    return [Call(map_tensors(c.args, _clone), map_tensors(c.kwargs, _clone)) for c in calls]


def _clone(tensor: Any) -> Any:
    return tensor.detach().clone()


def cast_floating(value: Any, dtype: Any) -> Any:
    """The same structure with every floating tensor cast to `dtype` (for bf16 runs)."""
    return map_tensors(value, lambda tensor: tensor.to(dtype) if tensor.is_floating_point() else tensor)


def entry_location(model: Callable) -> tuple[Optional[str], int]:
    """Where the model's forward (or the function) is defined, for diagnostics about it."""
    import torch

    function = model.forward if isinstance(model, torch.nn.Module) else model
    function = inspect.unwrap(getattr(function, "_torchdynamo_orig_callable", function))
    try:
        return os.path.abspath(inspect.getsourcefile(function) or ""), inspect.getsourcelines(function)[1]
    except (TypeError, OSError):
        return None, 1


def missing_target(spec: TargetSpec) -> Optional[str]:
    """Why a target certainly cannot load, found without running any of its code, or None.

    A path target whose file is missing, a module target no import path holds, or a file
    that binds no top-level name `factory` (unless it can make names dynamically: a star
    import, a module `__getattr__`, `globals()`/`exec`/`setattr`). Anything subtler is left
    to the run, which reports it as JIT904.
    """
    if spec.is_path:
        if not os.path.isfile(spec.location):
            return f"{spec.text}: no such file '{spec.location}'"
        path: Optional[str] = spec.location
    else:
        path = _module_file_without_importing(spec.location)
        if path is None:
            return f"{spec.text}: no module named '{spec.location}' (from {os.getcwd()} or the import path)"
    names = _top_level_names(path) if path and path.endswith(".py") else None
    if names is not None and spec.factory not in names:
        return f"{spec.text}: {path} defines no '{spec.factory}' at top level"
    return None


def _module_file_without_importing(dotted: str) -> Optional[str]:
    """The file of module `dotted`, found as the import system would, but with no package imported."""
    from importlib.machinery import PathFinder

    search: Optional[list[str]] = [os.getcwd(), *sys.path]
    found = None
    parts = dotted.split(".")
    for index in range(len(parts)):
        found = PathFinder.find_spec(".".join(parts[:index + 1]), search)
        if found is None:
            return None
        search = list(found.submodule_search_locations or [])
    return found.origin if found is not None and found.origin else ""


def _top_level_names(path: str) -> Optional[set[str]]:
    """Names a module binds at top level, or None when it may bind names dynamically (or does not parse)."""
    import ast

    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return None
    dynamic = {"globals", "exec", "setattr", "vars", "__getattr__"}
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            return None
        if isinstance(node, ast.Name) and node.id in dynamic:
            return None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getattr__":
            return None
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue  # what a body binds is local to it
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
            elif isinstance(child, ast.AST) and not isinstance(child, ast.expr_context):
                pending.append(child)
    return names
