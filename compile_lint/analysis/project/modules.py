"""Which file a module name is, found the way Python's import system would, without running anything.

Relative names (`.layers`, `..utils.f`) resolve by path from the importing file; absolute
ones through the importing file's package root, then the project's roots (its directory,
its `src/`), then `importlib`'s path finders over `sys.path` (they locate files; they
execute nothing). A package's import of its own name resolves to itself whatever its
directory is called: a copy (`kornia_fix/`, the same modules as the `kornia` found, or
found nowhere and named after it) is linted as itself, not as the original. torch, numpy
and the standard library are never read: the rules encode their meaning themselves. The
symbol index and the call graph both ask this resolver.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from typing import Iterable, Optional

# Packages whose meaning the rules encode themselves (torch), that never define an nn.Module
# or a traced helper (sympy: symbolic algebra, thousands of functions that module code reaches),
# or that Dynamo never inlines (torch/_dynamo/trace_rules.py THIRDPARTY_SKIPLIST, torch 2.13:
# a call into them is opaque to Dynamo, so their code is never traced): never read.
_DYNAMO_SKIPPED = frozenset({"fx2trt_oss", "hypothesis", "networkx", "numpy", "onnx", "onnxruntime", "onnx_tf",
                             "pandas", "sklearn", "tabulate", "tensorflow", "tensorrt", "torch2trt", "tqdm",
                             "tree", "tvm", "xarray"})
NEVER_READ = frozenset({"torch", "numpy", "scipy", "jax", "triton", "typing_extensions", "libcst",
                        "sympy"}) | _DYNAMO_SKIPPED
STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins", "typing", "math", "random"}

# (package directory, its __init__.py) or (None, the module's file) of a top-level module.
Location = tuple[Optional[str], Optional[str]]


def package_root(path: str) -> str:
    """The directory a file's top-level package sits in (its own directory outside a package)."""
    directory = os.path.dirname(os.path.abspath(path))
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return directory


class ModuleResolver:
    """Module names -> source files, for one linting process.

    `roots` are directories absolute imports are looked up in before `sys.path` (the
    project's root, its `src/`); each file's own package root is always searched first.
    Where a top-level module is found is kept for the process.
    """

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self.roots = tuple(dict.fromkeys(os.path.abspath(root) for root in roots))
        self._locations: dict[tuple[str, str], Optional[Location]] = {}

    def module_file(self, qualified: str, from_path: str) -> tuple[Optional[str], tuple[str, ...]]:
        """The source file of the longest module prefix of `qualified`, and the names after it.

        Relative names (leading dots) are resolved from `from_path`'s directory.
        """
        if qualified.startswith("."):
            level = len(qualified) - len(qualified.lstrip("."))
            directory = os.path.dirname(os.path.abspath(from_path))
            for _ in range(level - 1):
                directory = os.path.dirname(directory)
            parts = tuple(p for p in qualified[level:].split(".") if p)
            init = os.path.join(directory, "__init__.py")
            return self.descend(directory, init if os.path.isfile(init) else None, parts)
        parts = tuple(qualified.split("."))
        if not parts[0] or parts[0] in NEVER_READ or parts[0] in STDLIB:
            return None, parts
        location = self._top_level(parts[0], from_path)
        if location is None:
            return None, parts
        package, file = location
        if package is None:
            return file, parts[1:]
        return self.descend(package, file, parts[1:])

    @staticmethod
    def descend(directory: str, file: Optional[str], parts: tuple[str, ...]) -> tuple[Optional[str], tuple[str, ...]]:
        """From package `directory` (its `__init__.py` is `file`), the file of the longest module
        prefix of `parts` and the names after it: a subpackage's `__init__.py` or a module's file."""
        for index, part in enumerate(parts):
            package = os.path.join(directory, part)
            init = os.path.join(package, "__init__.py")
            if os.path.isdir(package) and (os.path.isfile(init) or not os.path.isfile(package + ".py")):
                directory = package
                file = init if os.path.isfile(init) else None
                continue
            if os.path.isfile(package + ".py"):
                return package + ".py", parts[index + 1:]
            return file, parts[index:]
        return file, ()

    def _top_level(self, name: str, from_path: str) -> Optional[Location]:
        roots = (package_root(from_path),) + self.roots
        own = _own_package(from_path, roots[0])
        key = (name, own or roots[0])
        if key in self._locations:
            return self._locations[key]
        location = None
        for root in roots:
            location = _location_in(root, name)
            if location is not None:
                break
        if location is None:
            location = _installed_location(name)
        if own is not None and os.path.basename(own) != name and _copy_of(own, name, location):
            # `cp -r kornia kornia_fix`: the copy's `import kornia.x` means its own files, as
            # they would if the copy were installed under its name (issue 35).
            init = os.path.join(own, "__init__.py")
            location = own, init if os.path.isfile(init) else None
        self._locations[key] = location
        return location


def _own_package(path: str, root: str) -> Optional[str]:
    """The top-level package directory file `path` belongs to (None outside a package)."""
    relative = os.path.relpath(os.path.dirname(os.path.abspath(path)), root)
    if relative == "." or relative.startswith(".."):
        return None
    return os.path.join(root, relative.split(os.sep)[0])


def _entries(directory: str) -> frozenset[str]:
    """The module and subpackage names of a package directory."""
    try:
        names = os.listdir(directory)
    except OSError:
        return frozenset()
    return frozenset(name[:-3] if name.endswith(".py") else name for name in names
                     if name.endswith(".py") or os.path.isfile(os.path.join(directory, name, "__init__.py")))


def _normalised(name: str) -> str:
    return name.lower().replace("-", "_")


def _copy_of(own: str, name: str, found: Optional[Location]) -> bool:
    """Whether package directory `own`, named otherwise, is a copy of top-level package `name`.

    Where `name` is found (`found`, a package directory), the two must hold the same
    modules (a copy, whatever it is named); where it is found nowhere, the copy's name
    must extend it (`kornia_fix`, `kornia-main`) and hold modules.
    """
    if found is None:
        return _normalised(os.path.basename(own)).startswith(_normalised(name)) and len(_entries(own)) >= 2
    directory = found[0]
    if directory is None or os.path.abspath(directory) == os.path.abspath(own):
        return False
    mine, theirs = _entries(own), _entries(directory)
    return len(mine) >= 2 and len(mine & theirs) >= 0.9 * max(len(mine), len(theirs))


def _location_in(root: str, name: str) -> Optional[Location]:
    package = os.path.join(root, name)
    if os.path.isdir(package):
        init = os.path.join(package, "__init__.py")
        if os.path.isfile(init) or not os.path.isfile(package + ".py"):
            return package, init if os.path.isfile(init) else None
    if os.path.isfile(package + ".py"):
        return None, package + ".py"
    return None


def _installed_location(name: str) -> Optional[Location]:
    """Where an installed top-level module's source is, found by the import system's finders.

    Finders only locate modules; nothing is executed. Extension modules and modules
    without a source file give None.
    """
    try:
        spec = importlib.machinery.PathFinder.find_spec(name)
        if spec is None:
            spec = importlib.util.find_spec(name)  # editable installs use meta-path finders
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None:
        return None
    origin = spec.origin if spec.has_location else None
    locations = list(spec.submodule_search_locations or ())
    if locations:
        init = origin if origin and origin.endswith(".py") else None
        return locations[0], init
    if origin and origin.endswith(".py"):
        return None, origin
    return None
