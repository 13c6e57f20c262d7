"""Inference performance hints: how compiled models are called, timed and configured.

These rules look at the code around `torch.compile` (call sites, benchmark loops), not at
traced code, so they are module-scoped. They are off by default (`extend-select = ["JIT8"]`).
"""

from __future__ import annotations

from typing import Iterator, Optional, Union

import libcst as cst

from compile_lint.autofix.builders import spell
from compile_lint.linter.imports import ImportMap, dotted_name
from compile_lint.linter.regions import COMPILE_FUNCTIONS
from compile_lint.rules.base import FixPlan, Invalid, Rule, Valid
from compile_lint.linter.walk import visit

# Modes that capture CUDA graphs: a graph is recorded per distinct input shape.
CUDAGRAPH_MODES = frozenset({"reduce-overhead", "max-autotune"})
_SHAPE_FACTORIES = frozenset(
    {"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty", "torch.full",
     "torch.randint", "torch.arange", "torch.linspace"}
)
_SHAPE_METHODS = frozenset(
    {"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty", "new_full",
     "narrow", "unflatten", "tile"}
)
_TIMERS = frozenset(
    {"time.perf_counter", "time.perf_counter_ns", "time.time", "time.time_ns", "time.monotonic",
     "time.monotonic_ns", "timeit.default_timer"}
)
FunctionLike = Union[cst.FunctionDef, cst.Module]


def compile_keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    """The value of keyword `name` in a torch.compile(...) call, if given."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def compile_mode(call: Optional[cst.Call]) -> Optional[str]:
    """The literal `mode=` of a torch.compile call, or None."""
    if call is None:
        return None
    value = compile_keyword(call, "mode")
    if isinstance(value, cst.SimpleString) and isinstance(value.evaluated_value, str):
        return value.evaluated_value
    return None


class _CompiledCallables(cst.CSTVisitor):
    """Names (`model`, `self.model`, decorated `fn`) bound to a torch.compile result."""

    def __init__(self, imports: ImportMap) -> None:
        self.imports = imports
        self.calls: dict[str, Optional[cst.Call]] = {}  # name -> the torch.compile call (None: bare decorator)

    def _is_compile(self, expr: cst.BaseExpression) -> bool:
        return self.imports.qualname(expr) in COMPILE_FUNCTIONS

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if isinstance(value, cst.Call) and self._is_compile(value.func):
            for target in node.targets:
                name = dotted_name(target.target)
                if name:
                    self.calls[name] = value

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            expr = decorator.decorator
            if isinstance(expr, cst.Call) and self._is_compile(expr.func):
                self.calls[node.name.value] = expr
            elif self._is_compile(expr):
                self.calls[node.name.value] = None


def compiled_callables(module: cst.Module, imports: ImportMap) -> dict[str, Optional[cst.Call]]:
    """Every name this file binds to a compiled callable, with the compile call."""
    collector = _CompiledCallables(imports)
    visit(module, collector)
    return collector.calls


def _names_in(expr: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    visit(expr, _Names())
    return found


def _target_names(target: cst.BaseAssignTargetExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        names: set[str] = set()
        for element in target.elements:
            names |= _target_names(element.value)  # type: ignore[arg-type]
        return names
    return set()


class _LoopBody(cst.CSTVisitor):
    """Calls and simple assignments in a loop body (nested functions excluded)."""

    def __init__(self) -> None:
        self.calls: list[cst.Call] = []
        self.assigned: dict[str, cst.BaseExpression] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.assigned[target.target.value] = node.value


class ShapeVariation:
    """Decides whether an argument's shape follows a loop variable."""

    def __init__(self, loop_vars: set[str], assigned: dict[str, cst.BaseExpression], imports: ImportMap) -> None:
        self.loop_vars = loop_vars
        self.assigned = assigned
        self.imports = imports

    def _mentions(self, expr: cst.CSTNode) -> bool:
        names = _names_in(expr)
        if names & self.loop_vars:
            return True
        # `n = lengths[i]` / `n = base * step` in the loop body vary with the loop too.
        return any(name in self.assigned and not isinstance(self.assigned[name], cst.Call)
                   and _names_in(self.assigned[name]) & self.loop_vars for name in names)

    def varies(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """True when the shape of `expr` depends on a loop variable."""
        if depth > 6:
            return False
        if isinstance(expr, cst.Name):
            value = self.assigned.get(expr.value)
            return value is not None and self.varies(value, depth + 1)
        if isinstance(expr, cst.Subscript):
            # Slice bounds set the size; an index (`batches[i]`) only picks an element.
            for element in expr.slice:
                if isinstance(element.slice, cst.Slice) and self._mentions(element.slice):
                    return True
            return self.varies(expr.value, depth + 1)
        if isinstance(expr, cst.Call):
            qualified = self.imports.qualname(expr.func) or ""
            positional = [arg.value for arg in expr.args if arg.keyword is None]
            if qualified in _SHAPE_FACTORIES:
                return any(self._mentions(arg) for arg in positional)
            if qualified == "torch.nn.functional.interpolate":
                size = next((arg.value for arg in expr.args if arg.keyword and arg.keyword.value == "size"), None)
                if size is not None and self._mentions(size):
                    return True
            func = expr.func
            if isinstance(func, cst.Attribute):
                if func.attr.value in _SHAPE_METHODS and any(self._mentions(arg) for arg in positional):
                    return True
                return self.varies(func.value, depth + 1)
        return False


def varying_shape_calls(
    module: cst.Module, imports: ImportMap, compiled: dict[str, Optional[cst.Call]]
) -> Iterator[tuple[cst.Call, str]]:
    """Calls of a compiled callable, inside a `for` loop, with an argument whose shape follows the loop."""
    found: list[tuple[cst.Call, str]] = []

    class _Loops(cst.CSTVisitor):
        def visit_For(self, node: cst.For) -> None:
            loop_vars = _target_names(node.target)
            if not loop_vars:
                return
            body = _LoopBody()
            visit(node.body, body)
            variation = ShapeVariation(loop_vars, body.assigned, imports)
            for call in body.calls:
                name = dotted_name(call.func)
                if name in compiled and any(variation.varies(arg.value) for arg in call.args):
                    found.append((call, name))

    visit(module, _Loops())
    seen: set[cst.Call] = set()
    for call, name in found:  # nested loops report a call once
        if call not in seen:
            seen.add(call)
            yield call, name


class _CompiledSiteRule(Rule):
    """Shared set-up: the compiled callables of the file, found once."""

    scope = "module"
    trigger_words = ("compile", "optimize")  # every rule here needs a torch.compile call
    kind = "perf"
    default_enabled = False

    def compiled(self) -> dict[str, Optional[cst.Call]]:
        """Name -> torch.compile call for every compiled callable in the file."""
        if not hasattr(self, "_compiled"):
            self._compiled = compiled_callables(self.context.module, self.context.imports)
        return self._compiled


_ENCODER = """
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, tokens):
        return self.proj(tokens).relu().mean(1)
"""
_VARYING_LENGTHS = "[(torch.randn(2, n, 8),) for n in (16, 32, 48)]"


class CudaGraphsWithVaryingShapes(_CompiledSiteRule):
    """`mode="reduce-overhead"` (CUDA graphs) fed inputs whose shape changes every call.

    Why: CUDA graphs replay a recording made for one input shape. Each new shape
    records a new graph (and with `dynamic=False`, compiles again), so a loop over
    sequence lengths or batch sizes pays recording on every new size and keeps one
    graph's memory pool per size. Measured on an H200 (torch 2.11): an MLP called with
    8 distinct batch sizes recorded 14 graphs over two passes and ran at 3.4-4.8 ms per
    call, against 0.14 ms per call with one fixed shape.

    Instead: pad inputs to a few bucket sizes (e.g. powers of two) before the call, or
    use the default mode (or `"max-autotune-no-cudagraphs"`) with `dynamic=True`.
    """

    code = "JIT802"
    name = "cudagraphs-with-varying-shapes"
    message = (
        "`{name}` uses CUDA graphs (mode={mode!r}) but is called with a shape that changes in this loop: "
        "each new shape records a new graph; pad to a few bucket sizes or drop the mode"
    )
    invalid = [
        Invalid(
            _ENCODER
            + '''

def serve(lengths=(128, 256, 384, 512)):
    model = torch.compile(Encoder().eval(), mode="reduce-overhead")
    tokens = torch.randn(4, 512, 8)
    with torch.no_grad():
        for n in lengths:
            model(tokens[:, :n])
''',
            calls=_VARYING_LENGTHS,
            entry="Encoder",
        ),
        Invalid(
            _ENCODER
            + '''

class Server:
    def __init__(self):
        self.model = torch.compile(Encoder().eval(), mode="max-autotune")

    def warm(self, batch_sizes=(1, 2, 4, 8)):
        for batch in batch_sizes:
            sample = torch.randn(batch, 64, 8)
            self.model(sample)
''',
            calls="[(torch.randn(b, 16, 8),) for b in (1, 2, 4)]",
            entry="Encoder",
        ),
    ]
    valid = [
        Valid(
            _ENCODER
            + '''

def serve(steps=4):
    model = torch.compile(Encoder().eval(), mode="reduce-overhead")
    tokens = torch.randn(4, 512, 8)
    with torch.no_grad():
        for _ in range(steps):
            model(tokens)
''',
            entry="Encoder",
            calls="[(torch.randn(2, 16, 8),)]",
        ),
        Valid(
            _ENCODER
            + '''

def serve(lengths=(128, 256, 384, 512)):
    model = torch.compile(Encoder().eval(), dynamic=True)
    tokens = torch.randn(4, 512, 8)
    with torch.no_grad():
        for n in lengths:
            model(tokens[:, :n])
''',
            entry="Encoder",
            calls="[(torch.randn(2, 16, 8),)]",
        ),
        Valid(
            _ENCODER
            + '''

def serve(batches):
    model = torch.compile(Encoder().eval(), mode="reduce-overhead")
    with torch.no_grad():
        for i in range(len(batches)):
            model(batches[i][:, :512])
''',
            entry="Encoder",
            calls="[(torch.randn(2, 16, 8),)]",
            note="the slice bound is a constant: the shape does not follow the loop",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        compiled = self.compiled()
        for call, name in varying_shape_calls(node, self.context.imports, compiled):
            mode = compile_mode(compiled[name])
            if mode in CUDAGRAPH_MODES:
                self.report(call, self.message.format(name=name, mode=mode))


class VaryingShapesWithoutDynamic(_CompiledSiteRule):
    """A compiled model called with shapes that follow a loop, compiled without `dynamic=`.

    Why: by default torch.compile specializes on the first input's shapes; the first
    call with a different size recompiles with that dimension dynamic ("automatic
    dynamic"). Measured on torch 2.13: three sequence lengths cost two compiles without
    `dynamic=`, one with `dynamic=True`. Cheap when it happens once, but it is a
    compile stall in the middle of serving, and each compile of a large model takes
    seconds to minutes.

    Instead: `torch.compile(model, dynamic=True)`, or mark the varying dimension with
    `torch._dynamo.mark_dynamic(x, dim)` before the first call. The fix (safe: outputs
    are the same) adds `dynamic=True`. Not reported for CUDA-graph modes (JIT802).
    """

    code = "JIT804"
    name = "varying-shapes-without-dynamic"
    fix_applicability = "safe"
    message = (
        "`{name}` is called with a shape that changes in this loop but compiled without dynamic=: "
        "the first new shape triggers a recompile; pass dynamic=True or mark_dynamic the dimension"
    )
    invalid = [
        Invalid(
            _ENCODER
            + '''

def benchmark(lengths=(128, 256, 512)):
    model = torch.compile(Encoder().eval())
    with torch.no_grad():
        for seq_len in lengths:
            model(torch.randn(8, seq_len, 8))
''',
            calls=_VARYING_LENGTHS,
            entry="Encoder",
        ),
    ]
    valid = [
        Valid(
            _ENCODER
            + '''

def benchmark(lengths=(128, 256, 512)):
    model = torch.compile(Encoder().eval(), dynamic=True)
    with torch.no_grad():
        for seq_len in lengths:
            model(torch.randn(8, seq_len, 8))
''',
            entry="Encoder",
            calls="[(torch.randn(2, 16, 8),)]",
        ),
        Valid(
            _ENCODER
            + '''

def benchmark(seeds=(0, 1, 2)):
    model = torch.compile(Encoder().eval())
    with torch.no_grad():
        for seed in seeds:
            torch.manual_seed(seed)
            model(torch.randn(8, 128, 8))
''',
            entry="Encoder",
            calls="[(torch.randn(2, 16, 8),)]",
        ),
        Valid(
            _ENCODER
            + '''

def evaluate(loader):
    model = torch.compile(Encoder().eval(), dynamic=False)
    with torch.no_grad():
        for step, batch in enumerate(loader):
            model(batch[:, : 64 * step])
''',
            entry="Encoder",
            calls="[(torch.randn(2, 16, 8),)]",
            note="dynamic=False is an explicit choice",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        compiled = self.compiled()
        reported: set[str] = set()
        for call, name in varying_shape_calls(node, self.context.imports, compiled):
            compile_call = compiled[name]
            if compile_call is None or compile_keyword(compile_call, "dynamic") is not None:
                continue
            if compile_mode(compile_call) in CUDAGRAPH_MODES or name in reported:
                continue
            reported.add(name)
            self.report(call, self.message.format(name=name), fix=self._fix(compile_call))

    def _fix(self, compile_call: cst.Call) -> FixPlan:
        args = list(compile_call.args)
        last = args[-1]
        dynamic = cst.Arg(keyword=cst.Name("dynamic"), value=cst.Name("True"),
                          equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
        if isinstance(last.comma, cst.MaybeSentinel):
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(dynamic)
        else:
            # A trailing comma (one argument per line): the new argument takes over the last
            # comma, which leads to the closing parenthesis; the last argument takes the
            # comma between arguments, which leads to the next argument's indentation.
            between = args[-2].comma if len(args) > 1 else last.comma
            args[-1] = last.with_changes(comma=between)
            args.append(dynamic.with_changes(comma=last.comma))
        return FixPlan([(compile_call, compile_call.with_changes(args=args))], "Pass dynamic=True", "safe")


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

    visit_For = _enter_loop  # type: ignore[assignment]
    leave_For = _leave_loop  # type: ignore[assignment]
    visit_While = _enter_loop  # type: ignore[assignment]
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
        elif isinstance(func, cst.Attribute) and func.attr.value == "record" and dotted_name(func.value) in self._cuda_events:
            self.timers.append(self._next())
        else:
            name = dotted_name(func)
            if name in self.compiled:
                self.calls.append((self._next(), name, node, self._loops[-1] if self._loops else None))


class TimingWithoutWarmup(_CompiledSiteRule):
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
            _ENCODER
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
        ),
        Invalid(
            _ENCODER
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
        ),
    ]
    valid = [
        Valid(
            _ENCODER
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
            _ENCODER
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
            _ENCODER
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


_GRAD_USES = frozenset({"backward", "requires_grad_", "retain_grad", "register_hook"})


def _calls_compiled(node: cst.CSTNode, compiled: set[str]) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
            return inner is node

        def visit_Call(self, call: cst.Call) -> None:
            nonlocal found
            if dotted_name(call.func) in compiled:
                found = True

    visit(node, _Find())
    return found


def _keeps_or_differentiates(node: cst.CSTNode, imports: ImportMap) -> bool:
    """True when a block stores results beyond itself or touches autograd.

    Inference tensors cannot be updated in place or saved for backward outside
    inference mode, so blocks that stash results in attributes, containers or
    subscripts, or call autograd APIs, are not safe to switch.
    """
    risky = False

    class _Check(cst.CSTVisitor):
        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            nonlocal risky
            if isinstance(target.target, (cst.Attribute, cst.Subscript)):
                risky = True

        def visit_AugAssign(self, statement: cst.AugAssign) -> None:
            nonlocal risky
            risky = True

        def visit_Call(self, call: cst.Call) -> None:
            nonlocal risky
            func = call.func
            if isinstance(func, cst.Attribute) and (func.attr.value in _GRAD_USES or func.attr.value in ("append", "extend")):
                risky = True
            qualified = imports.qualname(func) or ""
            if qualified.startswith(("torch.autograd.", "torch.enable_grad", "torch.set_grad_enabled")):
                risky = True

    visit(node, _Check())
    return risky


class NoGradForCompiledInference(_CompiledSiteRule):
    """Compiled inference under `torch.no_grad()` where `torch.inference_mode()` fits.

    Why: `inference_mode` also skips view tracking and version-counter updates that
    `no_grad` still pays for on every call. The gain is small per call: measured on an
    H200 (torch 2.11, a small MLP, ten interleaved rounds of 2000 calls) the median
    per-call time was 121 vs 131 us in the default mode and 118 vs 134 us with
    reduce-overhead, with run-to-run spread larger than that. Mixing the two modes on
    one compiled model costs a recompile (measured on torch 2.13: grad mode is guarded),
    so the hint fires only when every call of the model in the file is under `no_grad`.

    Instead: `with torch.inference_mode():`. The fix is unsafe: tensors made in
    inference mode cannot later be updated in place or used in autograd outside it,
    so blocks that store results in attributes, containers or subscripts, or touch
    autograd, are not reported.
    """

    code = "JIT801"
    name = "no-grad-for-compiled-inference"
    fix_applicability = "unsafe"
    message = (
        "compiled inference under torch.no_grad(): torch.inference_mode() skips more autograd bookkeeping; "
        "use it when the outputs are never used with autograd"
    )
    invalid = [
        Invalid(
            _ENCODER
            + '''

def embed(batches):
    model = torch.compile(Encoder().eval())
    with torch.no_grad():
        return [model(batch).cpu() for batch in batches]
''',
            fixed=_ENCODER.lstrip("\n")
            + '''

def embed(batches):
    model = torch.compile(Encoder().eval())
    with torch.inference_mode():
        return [model(batch).cpu() for batch in batches]
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
        ),
        Invalid(
            _ENCODER
            + '''

class Predictor:
    def __init__(self):
        self.model = torch.compile(Encoder().eval())

    def __call__(self, x):
        with torch.no_grad():
            logits = self.model(x)
        return logits.softmax(-1)
''',
            fixed=_ENCODER.lstrip("\n")
            + '''

class Predictor:
    def __init__(self):
        self.model = torch.compile(Encoder().eval())

    def __call__(self, x):
        with torch.inference_mode():
            logits = self.model(x)
        return logits.softmax(-1)
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
        ),
    ]
    valid = [
        Valid(
            _ENCODER
            + '''

def embed(batches):
    model = torch.compile(Encoder().eval())
    with torch.inference_mode():
        return [model(batch).cpu() for batch in batches]
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
        ),
        Valid(
            _ENCODER
            + '''

class CachedEncoder:
    def __init__(self):
        self.model = torch.compile(Encoder().eval())
        self.cache = None

    def __call__(self, x):
        with torch.no_grad():
            self.cache = self.model(x)
        self.cache.mul_(0.5)
        return self.cache
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
            note="the result outlives the block and is updated in place: inference mode would raise",
        ),
        Valid(
            _ENCODER
            + '''

def train_and_eval(x, target):
    model = torch.compile(Encoder())
    loss = (model(x) - target).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        return model(x)
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
            note="the model also runs with grad: switching one call site would add a recompile",
        ),
        Valid(
            _ENCODER
            + '''

def eager_embed(batches):
    model = Encoder().eval()
    with torch.no_grad():
        return [model(batch) for batch in batches]
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
        ),
    ]

    def visit_With(self, node: cst.With) -> None:
        compiled = set(self.compiled())
        item = self._no_grad_item(node)
        if item is None or not compiled or not _calls_compiled(node.body, compiled):
            return
        if _keeps_or_differentiates(node.body, self.context.imports) or self._updated_later(node):
            return
        if not self._all_calls_under_no_grad(compiled & self._called_names(node.body)):
            return
        call = item.item
        assert isinstance(call, cst.Call)
        spelled, imports = spell(self.context, "torch.inference_mode")
        fix = FixPlan([(call.func, cst.parse_expression(spelled))], "Use torch.inference_mode()", "unsafe", imports)
        self.report(call, fix=fix)

    def _updated_later(self, node: cst.With) -> bool:
        """True when a name the block assigns is updated in place or used for autograd in its scope.

        An inference tensor updated in place outside inference mode raises, so such a
        block must stay under no_grad.
        """
        assigned: set[str] = set()

        class _Targets(cst.CSTVisitor):
            def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
                assigned.update(_target_names(target.target))

        visit(node.body, _Targets())
        if not assigned:
            return False
        scope: cst.CSTNode = self.context.function or self.context.module
        updated = False

        class _Updates(cst.CSTVisitor):
            def visit_AugAssign(self, statement: cst.AugAssign) -> None:
                nonlocal updated
                if dotted_name(statement.target) in assigned:
                    updated = True

            def visit_Call(self, call: cst.Call) -> None:
                nonlocal updated
                func = call.func
                if isinstance(func, cst.Attribute) and dotted_name(func.value) in assigned:
                    method = func.attr.value
                    if (method.endswith("_") and not method.endswith("__")) or method in _GRAD_USES:
                        updated = True

        visit(scope, _Updates())
        return updated

    def _no_grad_item(self, node: cst.With) -> Optional[cst.WithItem]:
        for item in node.items:
            if isinstance(item.item, cst.Call) and self.context.qualname(item.item.func) == "torch.no_grad":
                return item
        return None

    @staticmethod
    def _called_names(node: cst.CSTNode) -> set[str]:
        names: set[str] = set()

        class _Calls(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                name = dotted_name(call.func)
                if name:
                    names.add(name)

        visit(node, _Calls())
        return names

    def _all_calls_under_no_grad(self, names: set[str]) -> bool:
        """Every call of these compiled names in the file sits in a `with torch.no_grad():` block."""
        context = self.context
        ok = True

        class _Calls(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                nonlocal ok
                if dotted_name(call.func) not in names:
                    return
                node: Optional[cst.CSTNode] = call
                while node is not None:
                    node = context.parent(node)
                    if isinstance(node, cst.With) and any(
                        isinstance(i.item, cst.Call) and context.qualname(i.item.func) == "torch.no_grad" for i in node.items
                    ):
                        return
                ok = False

        visit(context.module, _Calls())
        return ok
