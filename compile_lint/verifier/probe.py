"""Run code under Dynamo and report what the compiler really does with it.

Used by the calibration tests (every rule example is judged by the installed torch)
and by `compile-lint verify`. torch is imported inside the functions, never at import.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import linecache
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence

_counter = itertools.count()


@dataclass
class ProbeResult:
    """What Dynamo did over a sequence of example calls."""

    eager_error: Optional[str] = None
    fullgraph_error: Optional[str] = None
    # Some code fails to compile at all, not only under fullgraph=True (a custom op with no
    # fake kernel, `torch.as_tensor([t1, t2])` on torch 2.13): the default compile raises too.
    compile_error: Optional[str] = None
    graph_breaks: list[str] = field(default_factory=list)
    frames_first_call: int = 0
    frames_total: int = 0

    @property
    def recompiles(self) -> int:
        """Frames compiled after the first call: each is a recompile."""
        return max(0, self.frames_total - self.frames_first_call)

    @property
    def breaks(self) -> bool:
        """True when the code does not compile to one graph."""
        return self.fullgraph_error is not None or self.compile_error is not None or bool(self.graph_breaks)

    @property
    def clean(self) -> bool:
        """One graph, no recompile: what a valid example must show."""
        return self.eager_error is None and not self.breaks and self.recompiles == 0

    def describe(self) -> str:
        """A one-line account for assertion messages."""
        return (
            f"eager_error={self.eager_error!r} fullgraph_error={self.fullgraph_error!r} "
            f"compile_error={self.compile_error!r} "
            f"graph_breaks={[b.splitlines()[0] for b in self.graph_breaks]} recompiles={self.recompiles}"
        )


@contextlib.contextmanager
def loaded_module(code: str, name_hint: str = "example") -> Iterator[Any]:
    """`code` imported as a real module from a temp file (so Dynamo sees real line numbers),
    the file kept while the block runs (code may read its own `__file__`), then removed.

    Its source stays readable afterwards (`inspect.getsource`, tracebacks, Dynamo's
    messages) through a linecache entry that `linecache.checkcache` keeps because it has
    no modification time.
    """
    directory = tempfile.mkdtemp(prefix="compile-lint-probe-")
    dynamo_settings = _dynamo_settings()
    try:
        module_name = f"_compile_lint_{name_hint}_{next(_counter)}"
        path = os.path.join(directory, module_name + ".py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(code)
        linecache.cache[path] = (len(code), None, code.splitlines(keepends=True), path)
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        yield module
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        _restore_dynamo_settings(dynamo_settings)


def _dynamo_settings() -> dict:
    """torch._dynamo's settings now (empty when torch is not imported): code may set them when imported."""
    torch = sys.modules.get("torch")
    return torch._dynamo.config.get_config_copy() if torch is not None else {}


def _restore_dynamo_settings(saved: dict) -> None:
    """Put back the settings an imported example changed (`capture_scalar_outputs = True`), and only those."""
    torch = sys.modules.get("torch")
    if torch is None or not saved:
        return
    config = torch._dynamo.config
    now = config.get_config_copy()  # read as a copy: getattr warns on the deprecated names
    for name, value in saved.items():
        if now.get(name) != value:
            setattr(config, name, value)


def load_module_from_source(code: str, name_hint: str = "example") -> Any:
    """Import `code` as a real module; its temp file is removed at once (see `loaded_module`)."""
    with loaded_module(code, name_hint) as module:
        return module


def resolve_entry(module: Any, entry: str, training: bool = False) -> Callable:
    """The callable to compile: an instance of a module class (in eval mode unless `training`), or the function."""
    import torch

    target = getattr(module, entry)
    if isinstance(target, type) and issubclass(target, torch.nn.Module):
        torch.manual_seed(0)
        return target().train(training)
    # Unwrap functions already decorated with @torch.compile, so we choose the settings.
    while hasattr(target, "_torchdynamo_orig_callable"):
        target = target._torchdynamo_orig_callable
    return target


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def probe(fn: Callable, calls: Sequence[tuple], kwargs_list: Optional[Sequence[dict]] = None) -> ProbeResult:
    """Run `fn` eagerly, under fullgraph=True, and under the default compile; count breaks and recompiles."""
    import torch
    import torch._dynamo
    from torch._dynamo.testing import CompileCounter
    from torch._dynamo.utils import counters

    kwargs_list = kwargs_list or [{} for _ in calls]
    result = ProbeResult()
    try:
        with torch.no_grad():
            for args, kwargs in zip(calls, kwargs_list):
                fn(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - user code may raise anything
        result.eager_error = _first_line(error)
        return result

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=CompileCounter(), fullgraph=True)
    try:
        with torch.no_grad():
            for args, kwargs in zip(calls, kwargs_list):
                compiled(*args, **kwargs)
    except Exception as error:  # noqa: BLE001
        result.fullgraph_error = _first_line(error)

    torch._dynamo.reset()
    counters.clear()
    counter = CompileCounter()
    compiled = torch.compile(fn, backend=counter)
    try:
        with torch.no_grad():
            for index, (args, kwargs) in enumerate(zip(calls, kwargs_list)):
                compiled(*args, **kwargs)
                if index == 0:
                    result.frames_first_call = counter.frame_count
    except Exception as error:  # noqa: BLE001
        result.compile_error = _first_line(error)
    result.frames_total = counter.frame_count
    result.graph_breaks = [reason for reason, count in counters["graph_break"].items() for _ in range(count)]
    if result.frames_first_call == 0 and result.compile_error is None:
        # A break inside a loop can make Dynamo skip the whole frame: no graph, nothing in
        # counters["graph_break"]; the reason is only in counters["unimplemented"].
        result.graph_breaks += [reason for reason, count in counters["unimplemented"].items() for _ in range(count)]
    torch._dynamo.reset()
    return result


def probe_example(code: str, entry: str, calls_expr: str, training: bool = False) -> ProbeResult:
    """Import an example's code and probe its entry over the calls `calls_expr` evaluates to.

    A module entry runs in eval mode, or in training mode with `training` (Dynamo
    specialises on `self.training`: code under `if self.training:` is traced only then).
    """
    import torch

    with loaded_module(code) as module:
        fn = resolve_entry(module, entry, training)
        torch.manual_seed(0)
        calls = eval(calls_expr, {"torch": torch})  # noqa: S307 - examples are our own source
        split = [split_call(call) for call in calls]
        return probe(fn, [args for args, _ in split], [kwargs for _, kwargs in split])


def split_call(call: Any) -> tuple[tuple, dict]:
    """An example call, an argument tuple or an {"args", "kwargs"} dict, as (args, kwargs)."""
    if isinstance(call, dict):
        return tuple(call.get("args", ())), dict(call.get("kwargs", {}))
    return tuple(call), {}


@dataclass
class OutputCheck:
    """Eager vs torch.compile outputs of an example over its calls."""

    error: Optional[str] = None
    mismatch: Optional[str] = None

    @property
    def equal(self) -> bool:
        """True when the compiled entry ran and matched eager on every call."""
        return self.error is None and self.mismatch is None


def compare_compiled_outputs(code: str, entry: str, calls_expr: str) -> OutputCheck:
    """Run an example's entry eagerly and under torch.compile (default settings, Dynamo
    with the eager backend) over its calls; report an error or the first output mismatch."""
    import torch

    with loaded_module(code) as module:
        fn = resolve_entry(module, entry)
        torch.manual_seed(0)
        calls = eval(calls_expr, {"torch": torch})  # noqa: S307 - examples are our own source
        return _compare_calls(fn, calls)


def _compare_calls(fn: Callable, calls: Sequence[Any]) -> OutputCheck:
    """Eager vs compiled (Dynamo, eager backend) outputs of `fn` on each call."""
    import torch
    import torch._dynamo

    check = OutputCheck()
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="eager")
    try:
        with torch.no_grad():
            for index, call in enumerate(calls):
                args, kwargs = split_call(call)
                expected = fn(*args, **kwargs)
                actual = compiled(*args, **kwargs)
                try:
                    torch.testing.assert_close(actual, expected)
                except AssertionError as error:
                    check.mismatch = f"call {index}: {str(error).strip().splitlines()[0]}"
                    break
    except Exception as error:  # noqa: BLE001 - user code may raise anything
        check.error = _first_line(error)
    finally:
        torch._dynamo.reset()
    return check
