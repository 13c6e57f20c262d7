"""JIT803 timing-without-warmup: A benchmark loop times a compiled model whose first call (the compile) is inside it."""

from __future__ import annotations

from typing import Optional, Union

import libcst as cst

from compile_lint.analysis.file.regions import COMPILE_FUNCTIONS
from compile_lint.analysis.syntax.imports import ImportMap, dotted_name
from compile_lint.analysis.syntax.walk import visit
from compile_lint.rules.base import Invalid, Valid
from compile_lint.rules.support.compile_sites import ENCODER, CompiledSiteRule


class TimingWithoutWarmup(CompiledSiteRule):
    """A benchmark loop times a compiled model whose first call (the compile) is inside it.

    Why: torch.compile compiles on the first call, so that call takes seconds while
    later ones take micro- to milliseconds. Measured on an H200 (torch 2.11): a small
    compiled MLP took 0.10 s on its first call, even with a warm on-disk cache, and
    133 us on later ones; averaging over a timed loop that includes the first call
    reports compile time as run time.

    Instead: call the compiled model a few times on representative inputs before
    starting the timer (and `torch.cuda.synchronize()` around the timed region on GPU).
    A single timed first call, outside any loop, is taken to measure compile time on
    purpose and is not reported.
    """

    code = "JIT803"
    name = "timing-without-warmup"
    message = (
        "`{name}` is first called inside a timed loop: its first call compiles, so the timing "
        "includes compilation; call it a few times before starting the timer"
    )
    invalid = [
        Invalid(
            ENCODER
            + '''

def benchmark(iters=50):
    import time

    model = torch.compile(Encoder().eval())
    tokens = torch.randn(8, 128, 8)
    start = time.perf_counter()
    with torch.no_grad():
        for _ in range(iters):
            model(tokens)
    return (time.perf_counter() - start) / iters
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
            lines=[22],
        ),
        Invalid(
            ENCODER
            + '''

def gpu_benchmark(iters=50):
    model = torch.compile(Encoder().cuda().eval(), mode="max-autotune")
    tokens = torch.randn(8, 128, 8, device="cuda")
    begin = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(iters):
        out = model(tokens)
    end.record()
    torch.cuda.synchronize()
    return begin.elapsed_time(end) / iters
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
            lines=[21],
        ),
    ]
    valid = [
        Valid(
            ENCODER
            + '''

def benchmark(iters=50):
    import time

    model = torch.compile(Encoder().eval())
    tokens = torch.randn(8, 128, 8)
    with torch.no_grad():
        for _ in range(3):
            model(tokens)
        start = time.perf_counter()
        for _ in range(iters):
            model(tokens)
    return (time.perf_counter() - start) / iters
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
        ),
        Valid(
            ENCODER
            + '''

def compile_time():
    import time

    model = torch.compile(Encoder().eval())
    start = time.perf_counter()
    model(torch.randn(8, 128, 8))
    return time.perf_counter() - start
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
            note="one timed first call outside a loop measures compile time on purpose",
        ),
        Valid(
            ENCODER
            + '''

def eager_benchmark(iters=50):
    import time

    model = Encoder().eval()
    tokens = torch.randn(8, 128, 8)
    start = time.perf_counter()
    for _ in range(iters):
        model(tokens)
    return (time.perf_counter() - start) / iters
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        self._check_scope(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._check_scope(node)

    def _check_scope(self, scope: FunctionLike) -> None:
        compiled = set(self.compiled())
        if not compiled:
            return
        events = _TimingEvents(scope, self.context.imports, compiled)
        visit(scope, events)
        for created_at, name in events.created:
            calls = [call for call in events.calls if call[0] > created_at and call[1] == name]
            timers = [index for index in events.timers if index > created_at]
            if not calls or not timers:
                continue
            first_index, _, first_call, loop_index = calls[0]
            started = [index for index in timers if index < first_index]
            if started and loop_index is not None and loop_index > started[0]:
                self.report(first_call, self.message.format(name=name))


_TIMERS = frozenset(
    {"time.perf_counter", "time.perf_counter_ns", "time.time", "time.time_ns", "time.monotonic",
     "time.monotonic_ns", "timeit.default_timer"}
)


FunctionLike = Union[cst.FunctionDef, cst.Module]


class _TimingEvents(cst.CSTVisitor):
    """In source order, within one scope: compiles, timer reads, loops and compiled calls."""

    def __init__(self, scope: FunctionLike, imports: ImportMap, compiled: set[str]) -> None:
        self.scope = scope
        self.imports = imports
        self.compiled = compiled
        self.created: list[tuple[int, str]] = []  # (event index, name) of compiles in this scope
        self.timers: list[int] = []
        self.calls: list[tuple[int, str, cst.Call, Optional[int]]] = []  # index, name, call, loop index
        self.events = 0
        self._loops: list[int] = []
        self._events_by_loop: dict[cst.CSTNode, int] = {}
        self._cuda_events: set[str] = set()

    def _next(self) -> int:
        self.events += 1
        return self.events

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.scope

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def _enter_loop(self, node: cst.CSTNode) -> None:
        self._loops.append(self._next())

    def _leave_loop(self, node: cst.CSTNode) -> None:
        self._loops.pop()

    visit_For = _enter_loop
    leave_For = _leave_loop  # type: ignore[assignment]
    visit_While = _enter_loop
    leave_While = _leave_loop  # type: ignore[assignment]

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if not isinstance(value, cst.Call):
            return
        qualified = self.imports.qualname(value.func)
        for target in node.targets:
            name = dotted_name(target.target)
            if not name:
                continue
            if qualified in COMPILE_FUNCTIONS and name in self.compiled:
                self.created.append((self._next(), name))
            elif qualified == "torch.cuda.Event":
                self._cuda_events.add(name)

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.imports.qualname(node.func)
        func = node.func
        if qualified in _TIMERS:
            self.timers.append(self._next())
        elif (isinstance(func, cst.Attribute) and func.attr.value == "record"
              and dotted_name(func.value) in self._cuda_events):
            self.timers.append(self._next())
        else:
            name = dotted_name(func)
            if name in self.compiled:
                self.calls.append((self._next(), name, node, self._loops[-1] if self._loops else None))

