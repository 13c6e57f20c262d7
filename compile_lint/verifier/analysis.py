"""What the compiler does with a loaded target: fullgraph verdict, breaks, recompiles, equality.

Graph breaks come from Dynamo's graph-break log (user-code location, gb_type, GB id):
`explain()` and `counters["graph_break"]` both miss some (data-dependent branching is
only in `counters["unimplemented"]`). Recompiles come from the recompile log, with the
guard that failed. Dims that vary across the example calls are marked dynamic first, so
a harmless automatic-dynamic recompile is not reported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence, cast

from compile_lint.verifier.targets import Call, copy_calls

_BREAK_AT = re.compile(r"Graph break in user code at (?P<path>.+?):(?P<line>\d+)")
_GB_ID = re.compile(r"/gb/(gb\d+)\.html")
_RECOMPILING = re.compile(r"Recompiling function (?P<function>\S+) in (?P<path>.+?):(?P<line>\d+)")
_GUARD = re.compile(r"^\s*- \d+/\d+: (?P<guard>.*)$", re.MULTILINE)
_SHAPE_GUARD = re.compile(r"(size|stride) mismatch at index")
_USER_FILE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')


@dataclass
class Location:
    """A user-code position reported by the compiler."""

    path: Optional[str]
    line: int


@dataclass
class GraphBreak:
    """One graph break: where, Dynamo's graph-break type and GB id, and its explanation.

    `frames` is the user code of its stack, outermost first, (path, line) each: a static
    finding at the call into a library that breaks names the break by its frame there.
    """

    path: Optional[str]
    line: int
    gb_type: str
    gb_id: Optional[str]
    explanation: str
    frames: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class Recompile:
    """One recompile: the function recompiled, the guard that failed and where it came from."""

    path: Optional[str]
    line: int
    function: str
    guard: str


@dataclass
class Comparison:
    """Eager vs compiled outputs over all calls."""

    equal: bool
    max_abs_diff: float
    detail: str = ""


@dataclass
class Analysis:
    """Everything `verify` learns about one target (JSON-serializable via asdict)."""

    device: str
    backend: str
    eager_error: Optional[str] = None
    fullgraph_error: Optional[str] = None
    fullgraph_gb_type: Optional[str] = None
    fullgraph_gb_id: Optional[str] = None
    fullgraph_location: Optional[Location] = None
    compile_error: Optional[str] = None
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompile] = field(default_factory=list)
    graphs: int = 0
    comparison: Optional[Comparison] = None
    dynamic_dims: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """A plain dict (for the worker's result file)."""
        return asdict(self)


def _library_roots() -> tuple[str, ...]:
    import sysconfig

    import torch

    import compile_lint

    roots = {sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib")}
    # Both are packages imported from their files: each has a __file__.
    roots |= {os.path.dirname(os.path.abspath(cast(str, package.__file__))) for package in (torch, compile_lint)}
    return tuple(os.path.abspath(root) + os.sep for root in roots if root)


def is_library(path: Optional[str]) -> bool:
    """Whether a frame is in the standard library, torch or this tool: never the line to fix.

    Other installed packages (transformers, timm...) are user code here: a break inside
    them is reported where it happens.
    """
    if not path or path.startswith("<"):
        return True
    return os.path.abspath(path).startswith(_library_roots())


def user_frame(path: Optional[str], line: int, frames: Sequence[tuple[str, int]]) -> tuple[Optional[str], int]:
    """(path, line) itself when it is user code, else the innermost user frame of `frames`."""
    if not is_library(path):
        return path, line
    for frame_path, frame_line in reversed(frames):
        if not is_library(frame_path):
            return frame_path, frame_line
    return path, line


def _traceback_frames(message: str, marker: str) -> list[tuple[str, int]]:
    if marker not in message:
        return []
    return [(m["path"], int(m["line"])) for m in _USER_FILE.finditer(message.split(marker, 1)[1])]


def first_line(error: BaseException) -> str:
    """`Type: first line of the message`."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"


def parse_break_message(message: str) -> Optional[GraphBreak]:
    """A GraphBreak from one graph-break log record, or None if it is not one."""
    found = _BREAK_AT.search(message)
    if found is None:
        return None
    reason = message.split("Graph Break Reason:", 1)[-1]
    lines = [line for line in reason.splitlines()]
    gb_type, explanation = "", ""
    for index, line in enumerate(lines):
        if line.strip().startswith("Explanation:"):
            previous = [item.strip() for item in lines[:index] if item.strip()]
            gb_type = previous[-1] if previous else ""
            explanation = line.strip()[len("Explanation:"):].strip()
            break
    if not gb_type:
        gb_type = lines[0].strip() if lines else ""
    gb_id = _GB_ID.search(message)
    frames = _traceback_frames(message, "User code traceback:")
    path, line_number = user_frame(found["path"], int(found["line"]), frames)
    return GraphBreak(path, line_number, gb_type, gb_id.group(1).upper() if gb_id else None, explanation,
                      [(frame_path, frame_line) for frame_path, frame_line in frames if not is_library(frame_path)])


def parse_recompile_message(message: str) -> Optional[Recompile]:
    """A Recompile from one recompile log record; None if it is not one or only sizes changed."""
    found = _RECOMPILING.search(message)
    if found is None:
        return None
    guards = [match["guard"].split("  #", 1)[0].strip() for match in _GUARD.finditer(message)]
    semantic = [guard for guard in guards if not _SHAPE_GUARD.search(guard)]
    if guards and not semantic:
        return None  # only tensor sizes changed: automatic dynamic, compiled once more, harmless
    guard = semantic[0] if semantic else "unknown guard"
    path, line = found["path"], int(found["line"])
    frames = _traceback_frames(message, "User stack trace")
    if frames:
        path, line = user_frame(frames[-1][0], frames[-1][1], frames)
    return Recompile(path, line, found["function"], guard)


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception:  # noqa: BLE001 - a record we cannot format is not one of ours
            pass


@contextlib.contextmanager
def capture_dynamo_logs() -> Iterator[_Capture]:
    """Collect Dynamo's graph-break and recompile log records while the block runs."""
    import torch._logging

    handler = _Capture()
    logger = logging.getLogger("torch._dynamo")
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        torch._logging.set_logs()


def varying_dims(calls: Sequence[Call]) -> dict[tuple, set[int]]:
    """For each tensor argument (by position or keyword), the dims whose size differs across calls."""
    import torch

    sizes: dict[tuple, list] = {}
    for call in calls:
        items = [(("arg", index), value) for index, value in enumerate(call.args)]
        items += [(("kwarg", key), value) for key, value in call.kwargs.items()]
        for key, value in items:
            if isinstance(value, torch.Tensor):
                sizes.setdefault(key, []).append(tuple(value.shape))
    dims: dict[tuple, set[int]] = {}
    for key, shapes in sizes.items():
        if len({len(shape) for shape in shapes}) != 1:
            continue
        varying = {dim for dim in range(len(shapes[0])) if len({shape[dim] for shape in shapes}) > 1}
        if varying:
            dims[key] = varying
    return dims


def mark_dynamic(call: Call, dims: dict[tuple, set[int]]) -> None:
    """Mark the varying dims of this call's tensors dynamic (maybe_: never an error on 0/1)."""
    import torch._dynamo

    for (kind, key), varying in dims.items():
        if kind == "arg":
            value = call.args[key] if key < len(call.args) else None
        else:
            value = call.kwargs.get(key)
        if value is not None:
            for dim in varying:
                torch._dynamo.maybe_mark_dynamic(value, dim)


def run_calls(fn: Callable, calls: Sequence[Call], dims: Optional[dict] = None) -> list[Any]:
    """Call fn on every example call under no_grad; return the outputs."""
    import torch

    outputs = []
    with torch.no_grad():
        for call in calls:
            if dims:
                mark_dynamic(call, dims)
            outputs.append(snapshot(fn(*call.args, **call.kwargs)))
    return outputs


def snapshot(value: Any) -> Any:
    """A detached copy of an output (CUDA-graph outputs are overwritten by the next replay)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*[snapshot(item) for item in value])
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(item) for item in value)
    if isinstance(value, dict):
        return {key: snapshot(item) for key, item in value.items()}
    return value


def tolerance(dtype: Any) -> tuple[float, float]:
    """(atol, rtol) for comparing compiled with eager results of this dtype."""
    import torch

    return {
        torch.float64: (1e-7, 1e-7),
        torch.float32: (1e-4, 1e-4),
        torch.float16: (1e-3, 1e-3),
        torch.bfloat16: (1.6e-2, 1.6e-2),
    }.get(dtype, (1e-4, 1e-4) if getattr(dtype, "is_floating_point", False) else (0.0, 0.0))


def compare(expected: Any, actual: Any, where: str = "output") -> Comparison:
    """Compare nested outputs with dtype-aware tolerances; the first mismatch is described."""
    import torch

    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return Comparison(False, float("inf"), f"{where}: a tensor became {type(actual).__name__}")
        if expected.shape != actual.shape or expected.dtype != actual.dtype:
            return Comparison(False, float("inf"),
                              f"{where}: {tuple(expected.shape)} {expected.dtype} "
                              f"vs {tuple(actual.shape)} {actual.dtype}")
        if not expected.is_floating_point() and not expected.is_complex():
            equal = bool(torch.equal(expected.cpu(), actual.cpu()))
            return Comparison(equal, 0.0 if equal else float("inf"), "" if equal else f"{where}: values differ")
        atol, rtol = tolerance(expected.dtype)
        a, b = expected.detach().double().cpu(), actual.detach().double().cpu()
        diff = (a - b).abs()
        finite = torch.isfinite(a) & torch.isfinite(b)
        same_nonfinite = bool(((a == b) | finite | (a.isnan() & b.isnan())).all())
        max_diff = float(diff[finite].max()) if bool(finite.any()) else 0.0
        ok = same_nonfinite and bool(torch.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True))
        detail = "" if ok else (f"{where}: max abs diff {max_diff:.3g} over atol={atol:g} rtol={rtol:g} "
                                f"({expected.dtype})")
        return Comparison(ok, max_diff, detail)
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(expected) != len(actual):
            return Comparison(False, float("inf"), f"{where}: structure differs")
        return _combine([compare(e, a, f"{where}[{i}]") for i, (e, a) in enumerate(zip(expected, actual))])
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(expected) != set(actual):
            return Comparison(False, float("inf"), f"{where}: keys differ")
        return _combine([compare(expected[k], actual[k], f"{where}[{k!r}]") for k in expected])
    if isinstance(expected, float) and isinstance(actual, float):
        ok = abs(expected - actual) <= 1e-6 + 1e-6 * abs(expected)
        return Comparison(ok, abs(expected - actual), "" if ok else f"{where}: {expected} vs {actual}")
    equal = expected == actual
    return Comparison(bool(equal), 0.0 if equal else float("inf"),
                      "" if equal else f"{where}: {expected!r} vs {actual!r}")


def _combine(parts: list[Comparison]) -> Comparison:
    if not parts:
        return Comparison(True, 0.0)
    failed = [part for part in parts if not part.equal]
    return Comparison(not failed, max(part.max_abs_diff for part in parts), failed[0].detail if failed else "")


def random_as_eager(backend: str) -> Any:
    """A context in which Inductor draws random numbers as eager does (its `fallback_random`):
    under the same seed, a dropout in a training model (or any torch.rand) then gives the
    compiled run eager's values, so outputs compare. Breaks and recompiles are unaffected."""
    if backend == "eager":
        return contextlib.nullcontext()
    import torch._inductor.config

    return torch._inductor.config.patch(fallback_random=True)


def _counting_backend(backend: str) -> Any:
    from torch._dynamo.testing import CompileCounter, CompileCounterWithBackend

    return CompileCounter() if backend == "eager" else CompileCounterWithBackend(backend)


def _fullgraph_details(result: Analysis, error: BaseException) -> None:
    result.fullgraph_error = first_line(error)
    result.fullgraph_gb_type = getattr(error, "gb_type", None)
    gb_id = _GB_ID.search(str(error))
    result.fullgraph_gb_id = gb_id.group(1).upper() if gb_id else None
    stack = [(frame.filename, frame.lineno or 1) for frame in getattr(error, "real_stack", None) or []]
    stack = stack or _traceback_frames(str(error), "from user code:")
    if stack:
        path, line = user_frame(stack[-1][0], stack[-1][1], stack)
        result.fullgraph_location = Location(path, line)


def analyze(fresh_model: Callable[[], Callable], calls: Sequence[Call], device: str, backend: str = "inductor",
            compile_kwargs: Optional[dict] = None) -> tuple[Analysis, list[Any]]:
    """Run a target eagerly, under fullgraph=True, and under the default compile.

    Each run gets its own model from `fresh_model()` (the factory again, same seed) and its
    own copy of the calls, under the same seed: a model that updates state in forward (a
    buffer counter) must start every run where eager started, or compiled outputs "differ".
    Both compiles always run: `.item()` and friends pass fullgraph=True (captured as
    unbacked values) yet break under the default compile, which is what users run. The
    fullgraph verdict is Dynamo's alone, so that run uses the eager backend; breaks,
    recompiles and the output comparison come from the default compile with `backend`.
    Returns the analysis and the eager outputs (for callers that compare further).
    """
    import torch
    import torch._dynamo

    result = Analysis(device=device, backend=backend)
    compile_kwargs = dict(compile_kwargs or {})

    def run(wrap: Callable[[Callable], Callable], dims: Optional[dict] = None) -> list[Any]:
        model = wrap(fresh_model())
        torch.manual_seed(0)
        return run_calls(model, copy_calls(calls), dims)

    try:
        eager = run(lambda model: model)
    except Exception as error:  # noqa: BLE001 - user code may raise anything
        result.eager_error = first_line(error)
        return result, []
    dims = varying_dims(calls)
    result.dynamic_dims = [f"{kind} {key}: dims {sorted(d)}" for (kind, key), d in dims.items()]

    torch._dynamo.reset()
    try:
        run(lambda model: torch.compile(model, backend="eager", fullgraph=True, **compile_kwargs), dims)
    except Exception as error:  # noqa: BLE001
        _fullgraph_details(result, error)

    torch._dynamo.reset()
    counter = _counting_backend(backend)
    compiled_outputs = None
    with capture_dynamo_logs() as logs, random_as_eager(backend):
        try:
            compiled_outputs = run(lambda model: torch.compile(model, backend=counter, **compile_kwargs), dims)
        except Exception as error:  # noqa: BLE001
            result.compile_error = first_line(error)
    seen: set[tuple] = set()
    for message in logs.messages:
        brk = parse_break_message(message)
        if brk is not None and (brk.path, brk.line, brk.gb_type) not in seen:
            seen.add((brk.path, brk.line, brk.gb_type))
            result.graph_breaks.append(brk)
        recompile = parse_recompile_message(message)
        if recompile is not None:
            result.recompiles.append(recompile)
    result.graphs = counter.frame_count
    torch._dynamo.reset()
    if compiled_outputs is not None:
        result.comparison = compare(eager, compiled_outputs)
    return result, eager
